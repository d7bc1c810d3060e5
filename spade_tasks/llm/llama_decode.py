"""One decode step of a Llama-architecture model, written out as plain tensor ops.

A batch-16 decode step of the 135M model spent about a quarter of its ~80 ms outside
the matmuls, in the ~2,000 small operations and module calls of the Hugging Face
forward (mask building, cache bookkeeping, ``rotate_half``'s slices and concatenation,
hooks, output objects). This step does the same arithmetic in about 25 operations per
layer, reading the model's own parameters at each call (so a weight reload is seen at
once; nothing is copied). In one run of ``benchmarks/decode.py`` (16 sequences, 128
new tokens each, fp32) the backend decoded 185 tok/s with it against 168 with the
model's forward. Prefill stays on the Hugging Face forward, where those costs are
spread over many positions.

Models it does not cover (``LlamaDecoder.supports``) keep the Hugging Face forward;
``model.fast_decode: false`` turns it off.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class LlamaDecoder:
    """``decoder(ids, mask, positions, cache)`` -> next-token logits ``(batch, vocab)``,
    float32, for ``ids`` of shape ``(batch, 1)``: the logits that
    ``model(input_ids=ids, attention_mask=mask, position_ids=positions,
    past_key_values=cache).logits[:, -1]`` gives, up to float rounding."""

    def __init__(self, model, linear=None):
        """``linear(x, weight)``: ``F.linear`` without bias, or a faster equivalent
        (``cpu_linear.PackedLinear``)."""
        self.model = model
        self.linear = linear or F.linear
        cfg = model.config
        self.eps = cfg.rms_norm_eps
        attn = model.model.layers[0].self_attn
        self.head_dim = attn.head_dim
        self.scaling = attn.scaling
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads

    @staticmethod
    def supports(model) -> bool:
        """Llama-architecture decoders with SiLU MLPs and no extra norms or biases that
        this step would skip; anything else falls back to the model's own forward."""
        cfg = getattr(model, "config", None)
        return (
            cfg is not None
            and getattr(cfg, "model_type", None) == "llama"
            and getattr(cfg, "hidden_act", None) == "silu"
            and not getattr(cfg, "attention_bias", False)
            and not getattr(cfg, "mlp_bias", False)
            and getattr(cfg, "pretraining_tp", 1) == 1
            and hasattr(model, "model") and hasattr(model.model, "rotary_emb")
        )

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                 cache, shared=None) -> torch.Tensor:
        """``shared``: per layer, keys and values ``(kv_heads, n, head_dim)`` that every
        row attends to before its own ``cache`` columns (``mask`` covers only those)."""
        body = self.model.model
        b = ids.shape[0]
        x = body.embed_tokens(ids)  # (b, 1, hidden)
        cos, sin = body.rotary_emb(x, positions)  # (b, 1, head_dim) each
        cos, sin = cos[:, None], _signed_sin(sin)[:, None]  # broadcast over heads
        # Padding as an additive bias, built once per step: adding it to the scores took
        # 6 us per layer here, where masked_fill with an inverted boolean mask took 45.
        bias = torch.zeros(mask.shape, dtype=x.dtype).masked_fill_(mask == 0, float("-inf"))
        bias = bias[:, None, None, :]  # (b, 1, 1, length)
        for i, layer in enumerate(body.layers):
            attn, mlp = layer.self_attn, layer.mlp
            h = F.rms_norm(x, x.shape[-1:], layer.input_layernorm.weight, self.eps)
            q = self.linear(h, attn.q_proj.weight).view(b, self.heads, 1, self.head_dim)
            k = self.linear(h, attn.k_proj.weight).view(b, self.kv_heads, 1, self.head_dim)
            v = self.linear(h, attn.v_proj.weight).view(b, self.kv_heads, 1, self.head_dim)
            keys, values = cache.update(_rotate(k, cos, sin), v, i)
            q = _rotate(q, cos, sin)
            if shared is None:
                o = attend_one_position(q, keys, values, bias, self.scaling)
            else:
                o = cascade_attention(q, keys, values, bias, self.scaling, *shared[i])
            x = x + self.linear(o.reshape(b, 1, -1), attn.o_proj.weight)
            h = F.rms_norm(x, x.shape[-1:], layer.post_attention_layernorm.weight, self.eps)
            gate = F.silu(self.linear(h, mlp.gate_proj.weight))
            x = x + self.linear(gate.mul_(self.linear(h, mlp.up_proj.weight)), mlp.down_proj.weight)
        x = F.rms_norm(x, x.shape[-1:], body.norm.weight, self.eps)
        return self.linear(x[:, -1], self.model.lm_head.weight).float()


def _signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """``sin`` with its first half negated, so that ``rotate_half(x) * sin`` becomes
    ``roll(x, half) * signed_sin``: one roll instead of two slices, a negation and a
    concatenation per tensor and layer."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """The rotary embedding ``x * cos + rotate_half(x) * sin`` of the Llama family."""
    return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, dims=-1), signed_sin)


def attend_one_position(query, keys, values, mask, scaling) -> torch.Tensor:
    """Attention of a query ``(batch, heads, 1, dim)`` over cached ``keys``/``values``
    ``(batch, kv_heads, length, dim)`` under ``mask`` ``(batch, 1, 1, length)`` (boolean,
    True where attended, or an additive bias); returns ``(batch, 1, heads, dim)``."""
    if decode_fast_path(query, mask):
        return decode_attention(query, keys, values, mask, scaling)
    out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scaling,
                                         enable_gqa=True)
    return out.transpose(1, 2)


def cascade_attention(query, keys, values, bias, scaling, shared_keys, shared_values):
    """``attend_one_position`` over ``[shared | own]`` columns, where the ``shared``
    keys/values ``(kv_heads, n, dim)`` are one copy for every row: all rows' queries
    meet them in one matmul per key/value head, so a step reads them once, not once
    per row. ``bias`` (additive, ``(batch, 1, 1, length)``) covers the own columns."""
    b, heads, _, dim = query.shape
    groups, n = keys.shape[1], shared_keys.shape[1]
    per = heads // groups
    q = query.view(b, groups, per, dim)
    by_head = q.transpose(0, 1).reshape(groups, b * per, dim)
    scores_shared = torch.matmul(by_head, shared_keys.transpose(-1, -2))
    scores_own = torch.matmul(q, keys.transpose(-1, -2))
    if bias is not None:
        scores_own.add_(bias)
    scores = torch.cat([scores_shared.view(groups, b, per, n).transpose(0, 1), scores_own], -1)
    probs = torch.softmax(scores.mul_(scaling if scaling is not None else dim ** -0.5), dim=-1)
    shared_probs = probs[..., :n].transpose(0, 1).reshape(groups, b * per, n)
    out = torch.matmul(shared_probs, shared_values).view(groups, b, per, dim).transpose(0, 1)
    out = out + torch.matmul(probs[..., n:], values)
    return out.reshape(b, 1, heads, dim)


def decode_fast_path(query, mask) -> bool:
    """Whether ``decode_attention`` takes this call: one query position, float32, and a
    mask shared by all heads (or none), boolean or an additive bias."""
    return (query.shape[2] == 1 and query.dtype == torch.float32
            and (mask is None or (mask.dtype in (torch.bool, torch.float32)
                                  and mask.shape[1] == 1)))


def decode_attention(query, key, value, mask, scaling):
    """Attention of one new position per row as two batched matmuls over each key/value
    head's whole query group, where torch's CPU flash kernel walks each query head on
    its own. At long contexts a decode step reads more bytes of cache than of weights:
    with 4 rows of 3.2k tokens a step took 90-94 ms against 97-111 ms with the flash
    kernel here (interleaved runs); at 16 short rows both took the same."""
    b, heads, _, dim = query.shape
    groups = key.shape[1]
    q = query.view(b, groups, heads // groups, dim)
    scores = torch.matmul(q, key.transpose(-1, -2))
    scores.mul_(scaling if scaling is not None else dim ** -0.5)
    if mask is not None and mask.dtype == torch.bool:
        scores.masked_fill_(~mask[:, :, -1:, :], float("-inf"))
    elif mask is not None:
        scores.add_(mask[:, :, -1:, :])
    out = torch.matmul(torch.softmax(scores, dim=-1), value)
    return out.view(b, 1, heads, dim)  # (batch, position, head, dim), as SDPA's path returns

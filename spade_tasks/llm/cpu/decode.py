"""One decode step of a Llama-architecture model, written out as plain tensor ops.

The Hugging Face forward spends much of a small-batch decode step outside the matmuls,
in thousands of small operations and module calls (mask building, cache bookkeeping,
``rotate_half``'s slices and concatenation, hooks, output objects). This step does the
same arithmetic in about 25 operations per layer, reading the model's own parameters at
each call (so a weight reload is seen at once). Its matmuls go through ``linear``: on
AVX-512 and AVX2 CPUs the backend passes the packed small-batch kernel of ``linear.py``, which
keeps a packed copy of each weight and packs it again when the weight changes. Prefill
stays on the Hugging Face forward, where those costs are spread over many positions.
Measurements: ``docs/cpu-inference.md`` and ``benchmarks/decode.py``.

Models it does not cover (``LlamaDecoder.supports``) keep the Hugging Face forward;
``model.fast_decode: false`` turns the whole engine off (the reference path).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from spade_tasks.llm.cpu.linear import STRIP

CASCADE_MIN_TOKENS = 256
"""Decode reads a prefix that all rows share once per step from this length on."""


class LlamaDecoder:
    """``decoder(ids, mask, positions, cache)`` -> next-token logits ``(batch, vocab)``,
    float32, for ``ids`` of shape ``(batch, 1)``: the logits that
    ``model(input_ids=ids, attention_mask=mask, position_ids=positions,
    past_key_values=cache).logits[:, -1]`` gives, up to float rounding."""

    def __init__(self, model, linear=None):
        """``linear(x, weight)``: ``F.linear`` without bias, or a faster equivalent
        (``linear.PackedLinear``)."""
        self.model = model
        self.linear = linear or F.linear
        cfg = model.config
        self.eps = cfg.rms_norm_eps
        attn = model.model.layers[0].self_attn
        self.head_dim = attn.head_dim
        self.scaling = attn.scaling
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads

    def shared_prefix(self, keys: torch.Tensor, values: torch.Tensor) -> SharedPrefix:
        """A layer's prefix keys/values ``(kv_heads, n, head_dim)``, shared by every row,
        for ``__call__``'s ``shared``; through the packed kernel where ``linear`` is."""
        return SharedPrefix(keys, values, getattr(self.linear, "kernel", None))

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
        """``shared``: per layer, a ``SharedPrefix`` (``self.shared_prefix``) that every
        row attends to before its own ``cache`` columns (``mask`` covers only those)."""
        body = self.model.model
        b = ids.shape[0]
        x = body.embed_tokens(ids)  # (b, 1, hidden)
        cos, sin = body.rotary_emb(x, positions)  # (b, 1, head_dim) each
        cos, sin = cos[:, None], _signed_sin(sin)[:, None]  # broadcast over heads
        # Padding as an additive bias, built once per step: cheaper to add per layer than
        # a masked_fill with an inverted boolean mask (docs/cpu-inference.md).
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
                o = cascade_attention(q, keys, values, bias, self.scaling, shared[i])
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


class SharedPrefix:
    """One layer's keys and values ``(kv_heads, n, dim)`` that every row of a batch
    attends to before its own columns (cascade attention), and the two products a
    decode step takes of them: all rows' queries against the keys, and the resulting
    weights against the values, each in one call per step.

    With ``kernel`` (``linear.load_kernel()``) both run through the packed
    small-batch kernel: the prefix is fixed for a whole ``generate`` call, so it is
    packed once, padded to a multiple of 16 columns (the padding's scores are -inf)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, kernel=None):
        self.keys, self.values, self.n = keys, values, keys.shape[1]
        self._kernel = kernel if keys.dtype == torch.float32 and keys.shape[-1] % STRIP == 0 else None
        if self._kernel is not None:
            pad = (0, 0, 0, -self.n % STRIP)
            self._keys = self._kernel.pack(F.pad(keys, pad))  # scores: n columns of dim terms
            self._values = self._kernel.pack(F.pad(values, pad).transpose(1, 2))  # dim of n

    # Most query rows (batch x query heads per key/value head) given to the kernel:
    # measured faster up to 48 (16 sequences of a 3-to-1 grouped model); beyond, matmul.
    MAX_ROWS = 48

    def scores(self, query: torch.Tensor) -> torch.Tensor:
        """``query`` ``(kv_heads, rows, dim)`` -> ``(kv_heads, rows, width)``, where
        columns from ``n`` on (padding, only through the kernel) are -inf."""
        if self._kernel is None or query.shape[1] > self.MAX_ROWS:
            return torch.matmul(query, self.keys.transpose(-1, -2))
        out = self._kernel.packed_bmm(query.contiguous(), self._keys)
        out[..., self.n:] = float("-inf")
        return out

    def mix(self, weights: torch.Tensor) -> torch.Tensor:
        """``weights`` ``(kv_heads, rows, width)`` (from ``scores``) -> ``(kv_heads,
        rows, dim)``."""
        if self._kernel is None or weights.shape[1] > self.MAX_ROWS:
            return torch.matmul(weights, self.values)
        return self._kernel.packed_bmm(weights.contiguous(), self._values)


def cascade_attention(query, keys, values, bias, scaling, shared: SharedPrefix):
    """``attend_one_position`` over ``[shared | own]`` columns, where the ``shared``
    prefix is one copy for every row: all rows' queries meet it in one product per
    key/value head, so a step reads it once, not once per row. ``bias`` (additive,
    ``(batch, 1, 1, length)``) covers the own columns.

    The softmax over both parts runs without joining them: one maximum per query, the
    exponentials of each part, one denominator (the shared part is thousands of columns
    wide; concatenating and re-slicing it cost more than the arithmetic)."""
    b, heads, _, dim = query.shape
    groups = keys.shape[1]
    per = heads // groups
    q = query.view(b, groups, per, dim) * (scaling if scaling is not None else dim ** -0.5)
    s_shared = shared.scores(q.transpose(0, 1).reshape(groups, b * per, dim))
    s_own = torch.matmul(q, keys.transpose(-1, -2))  # (b, groups, per, own)
    if bias is not None:
        s_own.add_(bias)
    top = torch.maximum(s_shared.amax(-1).view(groups, b, per).transpose(0, 1), s_own.amax(-1))
    p_shared = s_shared.sub_(top.transpose(0, 1).reshape(groups, b * per, 1)).exp_()
    p_own = s_own.sub_(top[..., None]).exp_()
    total = p_shared.sum(-1).view(groups, b, per).transpose(0, 1) + p_own.sum(-1)
    out = shared.mix(p_shared).view(groups, b, per, dim).transpose(0, 1)
    out = out + torch.matmul(p_own, values)
    return out.div_(total[..., None]).reshape(b, 1, heads, dim)


def decode_fast_path(query, mask) -> bool:
    """Whether ``decode_attention`` takes this call: one query position, float32, and a
    mask shared by all heads (or none), boolean or an additive bias."""
    return (query.shape[2] == 1 and query.dtype == torch.float32
            and (mask is None or (mask.dtype in (torch.bool, torch.float32)
                                  and mask.shape[1] == 1)))


def decode_attention(query, key, value, mask, scaling):
    """Attention of one new position per row as two batched matmuls over each key/value
    head's whole query group, where torch's CPU flash kernel walks each query head on
    its own: at long contexts a decode step reads more bytes of cache than of weights,
    and this reads each key/value head once per group."""
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

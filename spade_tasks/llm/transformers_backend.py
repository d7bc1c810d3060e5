"""Batched CPU generation with Hugging Face ``transformers`` (the default backend).

A hand-written decode loop rather than ``model.generate`` because the RL trainer needs
three things ``generate`` does not give cheaply:

- the raw-model log-prob of each sampled token, without keeping ``steps x batch x
  vocab`` logits around (``output_logits`` holds ~800 MB at 256 steps x 16 x 49k);
- one random stream per request (``request_seed(seed, i)``), so a completion does not
  depend on which other requests shared its batch, on ``max_batch``, or on order;
- finished rows leave the batch (their KV-cache rows are dropped), so a batch decodes
  only as long as its slowest row needs, at the cost of the rows still running.

Batch independence holds for the random draws exactly; the logits themselves can differ
in the last float bits between batch shapes (different matmul blocking), which can flip
a sampled token in rare near-ties. Greedy fp32 results matched single-request runs in
the tests.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from spade_tasks.errors import ModelLoadError
from spade_tasks.llm.base import (
    Backend,
    Completion,
    SamplingParams,
    cut_at_stop,
    eos_token_ids,
    find_stop,
    render_prompts,
    request_seed,
    with_prefills,
)
from spade_tasks.llm.cpu_linear import small_batch_linear
from spade_tasks.llm.llama_decode import LlamaDecoder, decode_attention, decode_fast_path
from spade_tasks.llm.loading import ModelRef, load_model, load_tokenizer, resolve_model
from spade_tasks.llm.prefix_cache import PrefixCache, common_prefix

# A shared prefix shorter than this is computed with each row (not worth a prefill call).
SHARED_PREFIX_MIN_TOKENS = 64
# Decode reads a prefix that all rows share once per step from this length on.
CASCADE_MIN_TOKENS = 256


class TransformersBackend(Backend):
    """Left-padded batches with a KV cache; ``model``/``tokenizer`` may be passed in (tests)."""

    name = "transformers"

    def __init__(self, cfg, model=None, tokenizer=None):
        self.cfg = cfg
        if model is None or tokenizer is None:
            ref = resolve_model(cfg.name)
            tokenizer = tokenizer or load_tokenizer(ref)
            model = model or load_model(ref, cfg.dtype)
        self._tok = tokenizer
        budget = getattr(cfg, "prefix_cache_mb", 0) * 2**20
        self._prefixes = PrefixCache(budget) if budget else None
        self._set_model(model)

    def _set_model(self, model) -> None:
        if self._prefixes is not None:
            self._prefixes.clear()  # keys/values of the old weights
        if getattr(model.config, "_attn_implementation", None) == "sdpa":
            model.set_attn_implementation(SHARED_KV_SDPA)
        self._model = model.eval()
        if _on_cpu(model):
            _store_input_major(model)
        fast = getattr(self.cfg, "fast_decode", True) and LlamaDecoder.supports(model)
        linear = None
        if fast and getattr(self.cfg, "decode_kernel", True) and _on_cpu(model):
            linear = small_batch_linear()
        self._decoder = LlamaDecoder(model, linear) if fast else None
        self._eos = eos_token_ids(self._tok, getattr(model, "generation_config", None))
        self._max_ctx = getattr(model.config, "max_position_embeddings", None)

    @property
    def tokenizer(self):
        return self._tok

    @property
    def model(self):
        """The underlying ``PreTrainedModel`` (for teacher-forced scoring and training)."""
        return self._model

    def load_weights(self, checkpoint_dir: str | Path) -> None:
        p = Path(checkpoint_dir)
        if not (p / "config.json").is_file():
            raise ModelLoadError(f"checkpoint {p}: no config.json (not a Hugging Face checkpoint)")
        self._set_model(load_model(ModelRef(str(p)), self.cfg.dtype))

    def close(self) -> None:
        self._model = self._decoder = None

    def generate(
        self,
        conversations: list[list[dict]],
        params: SamplingParams,
        tools: list[dict] | None = None,
    ) -> list[Completion]:
        prompts = render_prompts(self._tok, conversations, tools)
        return with_prefills(self.generate_from_ids(prompts, params), conversations)

    def generate_from_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        """``generate`` on already tokenised prompts (benchmarks, tests)."""
        if self._model is None:
            raise RuntimeError("backend is closed")
        # Similar lengths share a batch, so less compute goes to padding.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[Completion | None] = [None] * len(prompts)
        step = self.cfg.max_batch
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            self._share_prefixes([prompts[i] for i in idx])
            seeds = [request_seed(params.seed, i) for i in idx]
            for i, c in zip(idx, self._generate_batch([prompts[i] for i in idx], seeds, params)):
                results[i] = c
        return results  # type: ignore[return-value]

    @torch.inference_mode()
    def _share_prefixes(self, prompts: list[list[int]]) -> None:
        """Compute once, as one unpadded row, each long token prefix that several prompts
        share and no kept sequence covers, and keep it: every row of the batch then
        finds it in the prefix cache and computes only its own suffix.

        The designs of a generation share their contract and memory examples (about
        2.8k of 3.2k tokens here) and the episodes of one environment share their first
        prompt; a padded batch computed each copy, over a square attention mask.
        """
        if self._prefixes is None or len(prompts) < 2:
            return
        # In lexicographic order, rows sharing a prefix are neighbours.
        by_content = [torch.tensor(p, dtype=torch.long) for p in sorted(p[:-1] for p in prompts)]
        shared = {}  # length -> one prefix of that length shared by neighbours in order
        for a, b in zip(by_content, by_content[1:]):
            n = common_prefix(a, b)
            if n >= SHARED_PREFIX_MIN_TOKENS:
                shared.setdefault(n, []).append(a[:n])
        for n in sorted(shared, reverse=True):
            for ids in shared[n]:
                _, have = self._prefixes.match(ids.tolist() + [0])  # cover of all n tokens
                if n - have >= SHARED_PREFIX_MIN_TOKENS:
                    self._keep_prefix(ids)

    def _keep_prefix(self, ids: torch.Tensor) -> None:
        cache = Cache(layer_class_to_replicate=functools.partial(GrowingLayer, len(ids)))
        self._model(input_ids=ids[None], past_key_values=cache, use_cache=True, logits_to_keep=1)
        self._prefixes.add(ids.tolist(), [layer.keys[0] for layer in cache.layers],
                           [layer.values[0] for layer in cache.layers])

    @torch.inference_mode()
    def _generate_batch(self, prompts, seeds, params: SamplingParams) -> list[Completion]:
        # Each row's own budget: a long prompt must not shorten its batch-mates'.
        caps = [min(params.max_new_tokens, self._max_ctx - len(p)) if self._max_ctx
                else params.max_new_tokens for p in prompts]
        if any(c <= 0 for c in caps):  # a prompt that fills the context gets nothing
            full = [i for i, c in enumerate(caps) if c <= 0]
            rest = [i for i, c in enumerate(caps) if c > 0]
            out = {i: self._finish(prompts[i], [], [], "length", params) for i in full}
            if rest:
                done = self._generate_batch([prompts[i] for i in rest], [seeds[i] for i in rest],
                                            params)
                out.update(zip(rest, done))
            return [out[i] for i in range(len(prompts))]
        model, B = self._model, len(prompts)
        n_new = max(caps)
        tokens: list[list[int]] = [[] for _ in range(B)]
        lps: list[list[float]] = [[] for _ in range(B)]
        finish = ["length"] * B

        # Columns of the cache: [0, C) keys/values reused from finished sequences (the
        # first P, which every row shares, in place; the rest of each row's
        # right-aligned), [C, L) the prompt tokens still to compute (right-aligned), then
        # one column per decode step. Masked-out columns are padding.
        hits = [self._prefixes.match(p) if self._prefixes is not None else (None, 0)
                for p in prompts]
        P = _shared_reuse(prompts, hits)
        C = max(n for _, n in hits)
        S = max(len(p) - n for p, (_, n) in zip(prompts, hits))
        L = C + S
        ids = torch.full((B, S), self._tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((B, L), dtype=torch.long)
        for r, (p, (_, n)) in enumerate(zip(prompts, hits)):
            ids[r, S - (len(p) - n) :] = torch.tensor(p[n:], dtype=torch.long)
            mask[r, :P] = 1
            mask[r, C - (n - P) : C] = 1
            mask[r, L - (len(p) - n) :] = 1
        # Positions count real tokens only, so a padded row sees the same positions as
        # the same prompt alone.
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = Cache(layer_class_to_replicate=functools.partial(GrowingLayer, L + n_new))
        if C:
            _load_prefixes(cache, hits, C, P)
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos[:, C:],
                    past_key_values=cache, use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1, :].float()
        next_pos = pos[:, -1:] + 1
        # The mask for every step, allocated once; step t uses its first L + t columns.
        full_mask = torch.cat([mask, mask.new_ones((B, n_new))], dim=1)
        length = L
        shared = None
        if P >= CASCADE_MIN_TOKENS and self._decoder is not None:
            # Decode attends to the shared columns once for all rows (cascade attention)
            # instead of reading B copies of them at every step.
            shared = [self._decoder.shared_prefix(*layer.drop_front(P)) for layer in cache.layers]
            full_mask, length = full_mask[:, P:], length - P

        gens = [torch.Generator().manual_seed(s) for s in seeds]
        alive = list(range(B))  # batch row -> request index, in cache order
        stop = params.stop or []
        tail = max((len(s) for s in stop), default=0) + 4  # tokens whose text can hold a stop string
        for step in range(n_new):
            logp = torch.log_softmax(logits, dim=-1)
            chosen = _sample(logits, params, [gens[r] for r in alive])
            chosen_lp = logp.gather(1, chosen[:, None])[:, 0].tolist()
            keep = []
            for j, (r, t) in enumerate(zip(alive, chosen.tolist())):
                tokens[r].append(t)
                lps[r].append(chosen_lp[j])
                if t in self._eos:
                    finish[r] = "stop"
                elif stop and find_stop(self._tok.decode(tokens[r][-tail:], skip_special_tokens=True), stop) >= 0:
                    finish[r] = "stop"
                elif len(tokens[r]) >= caps[r]:
                    finish[r] = "length"
                else:
                    keep.append(j)
            if not keep or step == n_new - 1:
                self._remember(cache, full_mask, length, prompts, tokens, alive, range(len(alive)),
                               shared)
                break
            if len(keep) < len(alive):
                done = [j for j in range(len(alive)) if j not in keep]
                self._remember(cache, full_mask, length, prompts, tokens, alive, done, shared)
                sel = torch.tensor(keep, dtype=torch.long)
                cache.batch_select_indices(sel)
                full_mask, chosen, next_pos = full_mask[sel], chosen[sel], next_pos[sel]
                alive = [alive[j] for j in keep]
            length += 1
            logits = self._decode(chosen[:, None], full_mask[:, :length], next_pos, cache, shared)
            next_pos = next_pos + 1
        return [self._finish(prompts[r], tokens[r], lps[r], finish[r], params) for r in range(B)]

    def _decode(self, ids, mask, positions, cache, shared=None) -> torch.Tensor:
        """Next-token logits (float32) for one new position per row."""
        if self._decoder is not None:
            return self._decoder(ids, mask, positions, cache, shared)
        out = self._model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          past_key_values=cache, use_cache=True)
        return out.logits[:, -1, :].float()

    def _remember(self, cache, full_mask, length, prompts, tokens, alive, rows,
                  shared=None) -> None:
        """Keep the keys/values of finished batch ``rows``: their prompt and every
        generated token but the last (never fed to the model)."""
        if self._prefixes is None:
            return
        for j in rows:
            r = alive[j]
            cols = full_mask[j, :length].bool()
            keys = [layer.keys[j][:, cols] for layer in cache.layers]
            values = [layer.values[j][:, cols] for layer in cache.layers]
            if shared is not None:
                keys = [torch.cat([sp.keys, own], dim=1) for sp, own in zip(shared, keys)]
                values = [torch.cat([sp.values, own], dim=1) for sp, own in zip(shared, values)]
            self._prefixes.add(list(prompts[r]) + tokens[r][:-1], keys, values)

    def _finish(self, prompt, ids, lps, finish, params) -> Completion:
        # The EOS id stays in token_ids (training must see the stop decision) but not in text.
        text_ids = ids[:-1] if ids and ids[-1] in self._eos else ids
        text = self._tok.decode(text_ids, skip_special_tokens=True)
        if params.stop:
            cut = cut_at_stop(self._tok, text_ids, params.stop)
            if cut is not None:
                n, text = cut
                ids, lps, finish = ids[:n], lps[:n], "stop"
        return Completion(text, list(prompt), list(ids), list(lps), finish)


def _on_cpu(model) -> bool:
    return next(model.parameters()).device.type == "cpu"


def _store_input_major(model) -> None:
    """Store each linear layer's weight transposed in memory (``(in, out)`` contiguous;
    the parameter keeps its ``(out, in)`` shape as a transposed view), so ``x @ W.T``
    runs as a plain row-major GEMM. With 16 rows and weights streamed from memory, MKL
    took ~12% less time that way here (30 layers of the 135M model: 34-35 against
    39 ms). The output projection stays as it is: it is tied to the input embeddings,
    whose lookup wants rows, and it gained nothing."""
    skip = model.get_output_embeddings()
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and m is not skip and m.weight.is_contiguous():
            m.weight.data = m.weight.data.t().contiguous().t()


# -- the KV cache and attention ---------------------------------------------------------


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values live in a buffer sized for the whole
    generation, so a decode step writes its one position in place. ``DynamicLayer``
    concatenates instead, copying the entire cache at every step of every layer."""

    def __init__(self, capacity: int, **kwargs):
        super().__init__(**kwargs)
        self.capacity = capacity
        self.length = 0

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            b, h, n, d = key_states.shape
            cap = max(self.capacity, n)
            self._k = key_states.new_empty((b, h, cap, d))
            self._v = value_states.new_empty((b, h, cap, d))
            self.dtype, self.device, self.is_initialized = key_states.dtype, key_states.device, True
        end = self.length + key_states.shape[-2]
        if end > self._k.shape[-2]:  # beyond the planned size: grow (never in our loop)
            grow = (0, 0, 0, end - self._k.shape[-2])
            self._k = torch.nn.functional.pad(self._k, grow)
            self._v = torch.nn.functional.pad(self._v, grow)
        self._k[:, :, self.length:end] = key_states
        self._v[:, :, self.length:end] = value_states
        self.length = end
        self.keys, self.values = self._k[:, :, :end], self._v[:, :, :end]
        return self.keys, self.values

    def reset(self) -> None:
        super().reset()
        self.length = 0

    def drop_front(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Remove the first ``n`` columns, which every row holds alike, and return them
        once: keys and values ``(kv_heads, n, head_dim)`` (row 0's copy)."""
        shared = self._k[0, :, :n].clone(), self._v[0, :, :n].clone()
        self._k, self._v = self._k[:, :, n:].contiguous(), self._v[:, :, n:].contiguous()
        self.length -= n
        self.keys, self.values = self._k[:, :, : self.length], self._v[:, :, : self.length]
        return shared

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self._k, self._v = self._k[indices], self._v[indices]
            self.keys, self.values = self._k[:, :, : self.length], self._v[:, :, : self.length]


def _shared_reuse(prompts, hits) -> int:
    """How many leading tokens every prompt has in common and reuses from the cache."""
    if len(prompts) < 2 or not all(n for _, n in hits):
        return 0
    first = torch.tensor(prompts[0], dtype=torch.long)
    shared = min(common_prefix(first, torch.tensor(p, dtype=torch.long)) for p in prompts[1:])
    return min(shared, *(n for _, n in hits))


def _load_prefixes(cache: Cache, hits, width: int, shared: int = 0) -> None:
    """Write each row's reused keys/values into the first ``width`` columns of every
    layer of ``cache``: the first ``shared`` (alike in every row) at the start, the rest
    right-aligned (zeros, masked out, where a row has fewer)."""
    first = next(e for e, n in hits if n)
    for layer in range(len(first.keys)):
        heads, _, dim = first.keys[layer].shape
        k = first.keys[layer].new_zeros((len(hits), heads, width, dim))
        v = torch.zeros_like(k)
        for r, (e, n) in enumerate(hits):
            if n:
                k[r, :, :shared] = e.keys[layer][:, :shared]
                v[r, :, :shared] = e.values[layer][:, :shared]
                k[r, :, width - (n - shared) :] = e.keys[layer][:, shared:n]
                v[r, :, width - (n - shared) :] = e.values[layer][:, shared:n]
        cache.update(k, v, layer)


SHARED_KV_SDPA = "sdpa_shared_kv"


def sdpa_shared_kv(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                   is_causal=None, **kwargs):
    """transformers' SDPA attention, except that torch shares each key/value head among
    its query heads (``enable_gqa``) instead of transformers copying it per query head.

    transformers copies (``repeat_kv``) whenever a mask is passed, as it always is for
    a left-padded batch: at a 3k-token context that copy of the whole KV cache took
    86 ms per layer and decode step here, against 4 ms with ``enable_gqa`` (same output).
    """
    groups = getattr(module, "num_key_value_groups", 1)
    if groups == 1 or kwargs.get("position_bias") is not None or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    if dropout == 0.0 and decode_fast_path(query, attention_mask):
        return decode_attention(query, key, value, attention_mask, scaling), None
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = query.shape[2] > 1 and attention_mask is None and causal
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=causal, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(SHARED_KV_SDPA, sdpa_shared_kv)
AttentionMaskInterface.register(SHARED_KV_SDPA, sdpa_mask)  # the masks SDPA takes


def _sample(logits: torch.Tensor, params: SamplingParams, gens: list[torch.Generator]) -> torch.Tensor:
    """One token per row: argmax at temperature 0, else temperature + top-p sampling
    with each row's own generator.

    Sampling inverts the CDF with one uniform draw per row: ``torch.multinomial`` draws
    one exponential per vocabulary entry instead (49k per row and step), which was 13%
    of a batch-16 decode step here.
    """
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits if params.temperature == 1 else logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sp, si = probs.sort(dim=-1, descending=True)
        # Drop a token once the mass before it already reaches top_p (the top one stays).
        sp = sp.masked_fill(sp.cumsum(-1) - sp >= params.top_p, 0.0)
        probs = torch.zeros_like(probs).scatter_(1, si, sp)
    u = torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in gens])
    return _invert_cdf(probs, u)


def _invert_cdf(probs: torch.Tensor, u: torch.Tensor, block: int = 256) -> torch.Tensor:
    """The first index of each row whose cumulative probability exceeds ``u`` times the
    row's total, never a zero-probability index.

    Two levels, blocks of ``block`` entries then the entries of the chosen block,
    instead of one cumulative sum over the vocabulary, which had to run in float64 to
    stay exact over 49k terms and took 0.5-3.7 ms of a ~80 ms batch-16 decode step
    here. Block sums use torch's cascaded float32 sum (relative error ~1e-7); the
    cumulative sums over blocks and inside a block run in float64.
    """
    rows, vocab = probs.shape
    pad = -vocab % block
    blocks = (torch.nn.functional.pad(probs, (0, pad)) if pad else probs).view(rows, -1, block)
    mass = blocks.sum(-1)
    block_cdf = mass.double().cumsum(-1)
    target = u * block_cdf[:, -1]
    b = _first_above(block_cdf, target, mass > 0)
    inside = blocks[torch.arange(rows), b]  # (rows, block)
    before = torch.where(b > 0, block_cdf.gather(1, (b - 1).clamp(min=0)[:, None])[:, 0], 0.0)
    # before <= target by the choice of b, so the rest is never negative.
    i = _first_above(inside.double().cumsum(-1), target - before, inside > 0)
    return b * block + i


def _first_above(cdf: torch.Tensor, target: torch.Tensor, nonzero: torch.Tensor) -> torch.Tensor:
    """Per row, the first index with ``cdf > target``; where rounding leaves the target
    at or past the end, the last index with non-zero mass instead."""
    i = torch.searchsorted(cdf, target[:, None], right=True)[:, 0]
    n = cdf.shape[-1]
    last = n - 1 - nonzero.flip(-1).int().argmax(-1)
    return torch.where(i >= n, last, i)


@torch.inference_mode()
def teacher_forced_logprobs(model, prompt_ids: list[int], token_ids: list[int]) -> list[float]:
    """Raw-model log-prob of each of ``token_ids`` given ``prompt_ids`` and the ids before
    it: what ``Completion.logprobs`` reports, recomputed in one forward pass."""
    ids = torch.tensor([list(prompt_ids) + list(token_ids)], dtype=torch.long)
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float()
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(1, torch.tensor(token_ids)[:, None])[:, 0].tolist()


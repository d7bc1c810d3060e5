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

With ``model.fast_decode`` (the default) the loop runs on the CPU inference engine of
``spade_tasks/llm/cpu/`` (written-out decode step, packed small-batch kernel, shared
prefixes, cascade attention); with ``fast_decode: false`` on the model's own attention
and forward, the reference that the engine's tests compare against. The prefix cache
(``prefix_cache_mb``) works with either.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from transformers.cache_utils import Cache

from spade_tasks.errors import ModelLoadError
from spade_tasks.llm.base import (
    Backend,
    Completion,
    SamplingParams,
    cut_at_stop,
    eos_token_ids,
    find_stop,
    request_seed,
)
from spade_tasks.llm.cpu.attention import SHARED_KV_SDPA
from spade_tasks.llm.cpu.decode import CASCADE_MIN_TOKENS, LlamaDecoder
from spade_tasks.llm.cpu.kv_cache import (GrowingLayer, load_prefixes, remember, share_prefixes,
                                          shared_reuse)
from spade_tasks.llm.cpu.linear import small_batch_linear, store_input_major
from spade_tasks.llm.cpu.prefix_cache import PrefixCache
from spade_tasks.llm.loading import ModelRef, load_model, load_tokenizer, resolve_model


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
        self._model = model.eval()
        self._decoder = None
        # fast_decode: false is the reference path: the model's own attention and
        # forward, its weights as loaded; the engine's tests compare against it.
        if getattr(self.cfg, "fast_decode", True):
            if getattr(model.config, "_attn_implementation", None) == "sdpa":
                model.set_attn_implementation(SHARED_KV_SDPA)
            if _on_cpu(model):
                store_input_major(model)
            if LlamaDecoder.supports(model):
                linear = None
                if getattr(self.cfg, "decode_kernel", True) and _on_cpu(model):
                    linear = small_batch_linear()
                self._decoder = LlamaDecoder(model, linear)
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
            if self._prefixes is not None:
                share_prefixes(self._model, self._prefixes, [prompts[i] for i in idx])
            seeds = [request_seed(params.seed, params.first_index + i) for i in idx]
            for i, c in zip(idx, self._generate_batch([prompts[i] for i in idx], seeds, params)):
                results[i] = c
        return results  # type: ignore[return-value]

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
        P = shared_reuse(prompts, hits)
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
            load_prefixes(cache, hits, C, P)
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
                self._remember(cache, full_mask, length, prompts, tokens, alive,
                               range(len(alive)), shared)
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

    def _remember(self, *args) -> None:
        """Keep finished rows' keys/values (``kv_cache.remember``) where the cache is on."""
        if self._prefixes is not None:
            remember(self._prefixes, *args)

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


def _sample(logits: torch.Tensor, params: SamplingParams, gens: list[torch.Generator]) -> torch.Tensor:
    """One token per row: argmax at temperature 0, else temperature, top-p and min-p
    sampling with each row's own generator.

    Sampling inverts the CDF with one uniform draw per row: ``torch.multinomial`` draws
    one exponential per vocabulary entry instead, a noticeable share of a small-batch
    decode step (docs/cpu-inference.md).
    """
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits if params.temperature == 1 else logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sp, si = probs.sort(dim=-1, descending=True)
        # Drop a token once the mass before it already reaches top_p (the top one stays).
        sp = sp.masked_fill(sp.cumsum(-1) - sp >= params.top_p, 0.0)
        probs = torch.zeros_like(probs).scatter_(1, si, sp)
    if params.min_p > 0.0:
        # The row's top token always survives, so no row is left without mass.
        probs = probs.masked_fill(probs < params.min_p * probs.amax(-1, keepdim=True), 0.0)
    u = torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in gens])
    return _invert_cdf(probs, u)


def _invert_cdf(probs: torch.Tensor, u: torch.Tensor, block: int = 256) -> torch.Tensor:
    """The first index of each row whose cumulative probability exceeds ``u`` times the
    row's total, never a zero-probability index.

    Two levels, blocks of ``block`` entries then the entries of the chosen block,
    instead of one cumulative sum over the vocabulary, which had to run in float64 to
    stay exact over tens of thousands of terms and was slow (docs/cpu-inference.md).
    Block sums use torch's cascaded float32 sum (relative error ~1e-7); the
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


"""The KV cache of a generate call: a layer sized for the whole generation, reused
keys/values loaded into it, prefixes a batch shares computed once, and finished rows'
keys/values kept in the prefix cache."""

from __future__ import annotations

import functools

import torch
from transformers.cache_utils import Cache, DynamicLayer

from spade_tasks.llm.cpu.prefix_cache import PrefixCache, common_prefix

SHARED_PREFIX_MIN_TOKENS = 64
"""A shared prefix shorter than this is computed with each row (not worth a prefill call)."""


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


def shared_reuse(prompts, hits) -> int:
    """How many leading tokens every prompt has in common and reuses from the cache."""
    if len(prompts) < 2 or not all(n for _, n in hits):
        return 0
    first = torch.tensor(prompts[0], dtype=torch.long)
    shared = min(common_prefix(first, torch.tensor(p, dtype=torch.long)) for p in prompts[1:])
    return min(shared, *(n for _, n in hits))


def load_prefixes(cache: Cache, hits, width: int, shared: int = 0) -> None:
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


@torch.inference_mode()
def share_prefixes(model, prefixes: PrefixCache, prompts: list[list[int]]) -> None:
    """Compute once, as one unpadded row, each long token prefix that several prompts
    share and no kept sequence covers, and keep it: every row of the batch then
    finds it in the prefix cache and computes only its own suffix.

    The designs of a generation share their contract and memory examples and the
    episodes of one environment share their first prompt; a padded batch computed each
    copy, over a square attention mask.
    """
    if len(prompts) < 2:
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
            _, have = prefixes.match(ids.tolist() + [0])  # cover of all n tokens
            if n - have >= SHARED_PREFIX_MIN_TOKENS:
                _keep_prefix(model, prefixes, ids)


def _keep_prefix(model, prefixes: PrefixCache, ids: torch.Tensor) -> None:
    cache = Cache(layer_class_to_replicate=functools.partial(GrowingLayer, len(ids)))
    model(input_ids=ids[None], past_key_values=cache, use_cache=True, logits_to_keep=1)
    prefixes.add(ids.tolist(), [layer.keys[0] for layer in cache.layers],
                 [layer.values[0] for layer in cache.layers])


def remember(prefixes: PrefixCache, cache, full_mask, length, prompts, tokens, alive, rows,
             shared=None) -> None:
    """Keep the keys/values of finished batch ``rows``: their prompt and every
    generated token but the last (never fed to the model)."""
    for j in rows:
        r = alive[j]
        cols = full_mask[j, :length].bool()
        keys = [layer.keys[j][:, cols] for layer in cache.layers]
        values = [layer.values[j][:, cols] for layer in cache.layers]
        if shared is not None:
            keys = [torch.cat([sp.keys, own], dim=1) for sp, own in zip(shared, keys)]
            values = [torch.cat([sp.values, own], dim=1) for sp, own in zip(shared, values)]
        prefixes.add(list(prompts[r]) + tokens[r][:-1], keys, values)

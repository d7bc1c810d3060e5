"""The transformers backend's store of finished sequences' keys/values."""

import torch

from spade_tasks.llm.cpu.prefix_cache import PrefixCache, common_prefix


def kv(n: int, fill: float = 0.0, layers: int = 2):
    """Per-layer keys and values for ``n`` tokens: 2 heads x 4 dims of fp32 (64 B/token/layer)."""
    return [torch.full((2, n, 4), fill) for _ in range(layers)], [torch.full((2, n, 4), fill)
                                                                 for _ in range(layers)]


def test_common_prefix_counts_leading_equal_ids():
    t = torch.tensor
    assert common_prefix(t([1, 2, 3]), t([1, 2, 4, 5])) == 2
    assert common_prefix(t([1, 2]), t([1, 2, 3])) == 2
    assert common_prefix(t([9]), t([1])) == 0


def test_match_picks_the_longest_shared_prefix_and_leaves_the_last_prompt_token():
    cache = PrefixCache(budget_bytes=10**6, min_tokens=4)
    cache.add(list(range(10)), *kv(10, 1.0))
    cache.add(list(range(6)) + [99, 98, 97], *kv(9, 2.0))
    entry, n = cache.match(list(range(8)) + [50])
    assert n == 8 and entry.keys[0][0, 0, 0] == 1.0
    # A prompt equal to a kept sequence still computes its last token (its logits).
    entry, n = cache.match(list(range(10)))
    assert n == 9
    assert cache.match([0, 1, 2, 7, 7, 7]) == (None, 0)  # 3 shared < min_tokens
    assert cache.match([5] * 20) == (None, 0)


def test_a_longer_sequence_replaces_the_entries_it_extends():
    cache = PrefixCache(budget_bytes=10**6, min_tokens=2)
    cache.add([1, 2, 3], *kv(3))
    cache.add([1, 2, 3, 4, 5], *kv(5))
    cache.add([1, 2, 9], *kv(3))  # a sibling, not an extension: both stay
    assert len(cache) == 2
    assert cache.nbytes == 8 * 64 * 2  # 5 + 3 tokens, 64 B per token and layer, 2 layers


def test_budget_evicts_least_recently_used_and_skips_oversized_entries():
    per_token = 64 * 2  # bytes: keys and values of 2 layers
    cache = PrefixCache(budget_bytes=20 * per_token, min_tokens=2)
    cache.add([1] * 10, *kv(10))
    cache.add([2] * 10, *kv(10))
    cache.match([1] * 10 + [0])  # [1]*10 is now the most recently used
    cache.add([3] * 10, *kv(10))
    assert cache.match([2] * 11) == (None, 0)
    assert cache.match([1] * 11)[1] == 10 and cache.match([3] * 11)[1] == 10
    cache.add([4] * 30, *kv(30))  # larger than the whole budget: not kept
    assert len(cache) == 2 and cache.nbytes <= cache.budget

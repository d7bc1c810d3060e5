"""Keys and values of finished sequences, kept so that a prompt continuing one does
not compute them again.

A multi-turn episode's next prompt is its last prompt, the action just generated and
the new observation: without this every turn prefills the whole history again, which
was most of a rollout's computed tokens (docs/cpu-inference.md).

Entries are matched by the longest common token prefix, so a history re-rendered from
text still reuses everything up to the first token where its tokenisation differs from
the generated ids. They hold the keys/values the decode loop computed, which can
differ from a fresh prefill of the same tokens in the last float bits (as batched and
single decoding do). Memory is bounded by a byte budget, least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch


@dataclass
class Prefix:
    ids: torch.Tensor  # (n,) token ids whose keys/values are kept
    keys: list[torch.Tensor]  # per layer (kv_heads, n, head_dim)
    values: list[torch.Tensor]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


def common_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many leading entries ``a`` and ``b`` share."""
    m = min(len(a), len(b))
    differ = (a[:m] != b[:m]).nonzero()
    return int(differ[0, 0]) if len(differ) else m


class PrefixCache:
    """Finished sequences' keys/values within ``budget_bytes``; prefixes shorter than
    ``min_tokens`` are not worth a lookup's copy."""

    def __init__(self, budget_bytes: int, min_tokens: int = 32):
        self.budget = budget_bytes
        self.min_tokens = min_tokens
        self._entries: OrderedDict[int, Prefix] = OrderedDict()
        self._next_key = 0
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0

    def match(self, prompt: list[int]) -> tuple[Prefix | None, int]:
        """The entry sharing the longest prefix with ``prompt`` and that length, at most
        ``len(prompt) - 1``: the last prompt token is always computed, as its logits give
        the first new token. ``(None, 0)`` below ``min_tokens``."""
        if len(prompt) - 1 < self.min_tokens or not self._entries:
            return None, 0
        p = torch.tensor(prompt[:-1], dtype=torch.long)
        best, best_n, best_key = None, 0, None
        for key, e in self._entries.items():
            n = common_prefix(e.ids, p)
            if n > best_n:
                best, best_n, best_key = e, n, key
        if best_n < self.min_tokens:
            return None, 0
        self._entries.move_to_end(best_key)
        return best, best_n

    def add(self, ids: list[int], keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        """Keep one sequence; entries it extends are dropped (it serves their prompts too)."""
        entry = Prefix(torch.tensor(ids, dtype=torch.long), keys, values)
        if len(ids) < self.min_tokens or entry.nbytes > self.budget:
            return
        for key in [k for k, e in self._entries.items()
                    if len(e.ids) <= len(entry.ids) and common_prefix(e.ids, entry.ids) == len(e.ids)]:
            self._drop(key)
        while self._entries and self.nbytes + entry.nbytes > self.budget:
            self._drop(next(iter(self._entries)))
        self._entries[self._next_key] = entry
        self._next_key += 1
        self.nbytes += entry.nbytes

    def _drop(self, key: int) -> None:
        self.nbytes -= self._entries.pop(key).nbytes

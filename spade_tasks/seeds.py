"""Seed derivation: every random draw of a run starts from its root seed (``run.seed``)
and the names of where the draw happens, through one function."""

from __future__ import annotations

import hashlib


def derive(*parts: object, bits: int = 31) -> int:
    """A seed of ``bits`` bits for the draw named by ``parts`` (ints and strings).

    A stable hash (sha256, not Python's per-process salted ``hash()``), so a seed is the
    same after a restart, and different parts give unrelated seeds (no two generations
    or stages share a stream by arithmetic coincidence, as ``seed * k + generation``
    formulas can)."""
    if not 1 <= bits <= 64:
        raise ValueError(f"bits must be in 1..64, got {bits}")
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - bits)


def generation_seed(root: int, generation: int, salt: int = 0) -> int:
    """The seed of one generation of a run seeded ``root``; ``salt`` tells its stages
    apart. The flow's stages and ``spade design`` draw from it alike."""
    return derive("generation", root, generation, salt)

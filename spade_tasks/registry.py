"""Named registries: a dict plus ``register``/``get`` that raise on duplicates and unknown names.

The package keeps three: model backends, designer rewards and evaluation suites. Each
is declared here with the module that fills it (its owner), and that module is
imported by name on the first lookup. So the config can check a name at load time by
importing only this module, and the owners stay free to import the config.

An entry is the object itself or a ``"module:attribute"`` string resolved on first
``get``, for entries whose module is costly to import (a backend pulling in torch).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from spade_tasks.errors import (DuplicateName, RegistryError, UnknownBackend,
                                UnknownDesignerReward, UnknownName, UnknownSuite)

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one kind by name; see the module docstring."""

    def __init__(self, kind: str, owner: str, unknown: type[UnknownName] = UnknownName):
        self.kind = kind
        """What an entry is, as error messages name it ("model backend")."""
        self.owner = owner
        """The module whose import registers the built-in entries."""
        self.unknown = unknown
        """The error raised for a name that is not registered."""
        self._entries: dict[str, T | str] = {}
        self._owner_loaded = False

    def _load_owner(self) -> None:
        if self._owner_loaded:
            return
        self._owner_loaded = True  # first, so the owner's own registrations do not recurse
        try:
            importlib.import_module(self.owner)
        except BaseException:
            self._owner_loaded = False
            raise

    def register(self, name: str, entry: T | str) -> T | str:
        """Add ``entry`` (or a lazy ``"module:attribute"``) under ``name``; returns it."""
        self._load_owner()
        if not name:
            raise RegistryError(f"a {self.kind} needs a name")
        if name in self._entries:
            raise DuplicateName(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        """The entry registered under ``name``; an unknown name raises ``self.unknown``."""
        self._load_owner()
        try:
            entry = self._entries[name]
        except KeyError:
            raise self.unknown(self.unknown_message(name)) from None
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = self._entries[name] = getattr(importlib.import_module(module), attr)
        return entry

    __getitem__ = get

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load_owner()
        return sorted(self._entries)

    def unknown_message(self, name: str) -> str:
        """One line naming the unknown ``name`` and the known ones."""
        return f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})"

    def __contains__(self, name: object) -> bool:
        self._load_owner()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


BACKENDS: Registry = Registry("model backend", "spade_tasks.llm.base", UnknownBackend)
"""Factories ``factory(model_config) -> Backend``."""
DESIGNER_REWARDS: Registry = Registry("designer reward", "spade_tasks.regret",
                                      UnknownDesignerReward)
"""Functions ``reward(DesignStats) -> float``."""
SUITES: Registry = Registry("evaluation suite", "spade_tasks.evaluation", UnknownSuite)
"""Held-out evaluation ``Suite`` objects."""

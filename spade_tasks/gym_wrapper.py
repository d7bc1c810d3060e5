"""Any environment program, run in the sandbox, seen as a ``gymnasium.Env``."""

from __future__ import annotations

import string

import gymnasium as gym
from gymnasium.spaces import Text

from spade_tasks.sandbox import Episode, Sandbox
from spade_tasks.errors import SpadeError

CHARSET = string.printable
MAX_TEXT = 1_000_000


class EnvironmentFault(SpadeError):
    """The sandboxed program failed a call (timeout, crash, exception, bad reply)."""


class SandboxedEnv(gym.Env):
    """A ``gymnasium.Env`` whose reset/step run the program in a sandbox worker.

    Each ``reset`` starts a fresh worker, so nothing survives between episodes. Faults of
    the program raise ``EnvironmentFault`` with the sandbox's reason."""

    metadata = {"render_modes": []}

    def __init__(self, source: str, class_name: str, sandbox: Sandbox | None = None,
                 max_turns: int = 10):
        self.source, self.class_name = source, class_name
        self.sandbox = sandbox or Sandbox()
        self.max_turns = max_turns
        self.observation_space = Text(max_length=MAX_TEXT, charset=CHARSET)
        self.action_space = Text(max_length=MAX_TEXT, charset=CHARSET)
        self._ep: Episode | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.close()
        self._ep = self.sandbox.open(self.source, self.class_name, {"max_turns": self.max_turns})
        if not self._ep.load_result.ok:
            raise EnvironmentFault(self._ep.load_result.error)
        r = self._ep.reset(seed)
        if not r.ok:
            raise EnvironmentFault(r.error)
        return r.value

    def step(self, action: str):
        if self._ep is None:
            raise EnvironmentFault("step() before reset()")
        r = self._ep.step(action)
        if not r.ok:
            raise EnvironmentFault(r.error)
        return r.value

    def close(self) -> None:
        if self._ep is not None:
            self._ep.close()
            self._ep = None

"""``spade play``: one episode of an environment program, played by the oracle, by the
model (as a rollout plays it), by a person at the terminal or from a file of actions,
kept as a transcript.

Every policy plays in the sandbox; the transcript's return is the reward total capped
to [-1, 1] as everywhere else (``validation.capped_return``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spade_tasks.environments import EnvRecord, read_program, record_from_meta
from spade_tasks.errors import UserError
from spade_tasks.sandbox import ProgramMeta, Sandbox
from spade_tasks.validation import STATIC_CHECKS, Static, capped_return, oracle_policy, play

DEFAULT_MAX_TURNS = 10
"""Turn cap of a program that declares no ``max_turns``."""


@dataclass
class Transcript:
    """One played episode: ``observations[0]`` is the first observation, then one per
    action; ``end_reason`` uses the rollout's words (terminated, truncated, max_turns,
    context, env_fault:<kind>) plus ``quit`` (a person ended it) and ``policy`` (the
    policy produced no action)."""

    path: str
    class_name: str
    policy: str
    seed: int
    hint: str | None = None
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    end_reason: str = "max_turns"
    error: str | None = None

    @property
    def ret(self) -> float:
        return capped_return(math.fsum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.actions)

    def to_json(self) -> dict:
        """docs/design.md's keys (path, seed, return, turns, terminated) plus the transcript."""
        return {"path": self.path, "seed": self.seed, "return": self.ret, "turns": self.turns,
                "terminated": self.terminated, "truncated": self.truncated,
                "end_reason": self.end_reason, "policy": self.policy,
                "class_name": self.class_name, "hint": self.hint, "actions": self.actions,
                "rewards": self.rewards, "observations": self.observations,
                "error": self.error}


@dataclass(frozen=True)
class Program:
    """A program ready to play: its path, source and what the sandbox learned loading it."""

    path: Path
    source: str
    meta: ProgramMeta

    @property
    def max_turns(self) -> int:
        return self.meta.max_turns or DEFAULT_MAX_TURNS

    def record(self) -> EnvRecord:
        meta = dataclasses.replace(self.meta, max_turns=self.max_turns)
        return record_from_meta(self.source, meta, "cli", str(self.path))


def load_program(path: str | Path, sandbox: Sandbox) -> Program:
    """Read, statically check and load a program; any failure is a UserError whose one
    line names the file and the validator's reason (a forbidden import names it)."""
    path = Path(path)
    source = read_program(path)
    st = Static()
    for check in STATIC_CHECKS:
        reasons = check(source, st)
        if reasons:
            raise UserError(f"{path}: {reasons[0]} (see `spade validate {path}`)")
    with sandbox.open(source, st.class_name, {}) as ep:  # the program's own max_turns
        if not ep.load_result.ok:
            raise UserError(f"{path}: does not load: {ep.load_result.error}")
        return Program(path, source, ep.meta)


def _end_reason(terminated: bool, truncated: bool, error: str | None) -> str:
    if error:
        kind = error.split(":", 1)[0]
        return "policy" if kind == "policy" else f"env_fault:{kind}"
    return "terminated" if terminated else "truncated" if truncated else "max_turns"


def play_oracle(sandbox: Sandbox, prog: Program, seed: int, with_hint: bool) -> Transcript:
    """The oracle's episode (what the validator's feasibility check plays)."""
    p = play(sandbox, prog.source, prog.meta.class_name, seed, oracle_policy, prog.max_turns,
             with_hint=with_hint)
    return Transcript(str(prog.path), prog.meta.class_name, "oracle", seed, p.hint,
                      list(p.observations), list(p.actions), list(p.rewards), p.terminated,
                      p.truncated, _end_reason(p.terminated, p.truncated, p.error), p.error)


def read_actions(path: str | Path) -> list[str]:
    """The actions of a replay file, one per line; a missing or non-UTF-8 file is a
    UserError naming it."""
    p = Path(path)
    try:
        return p.read_bytes().decode("utf-8").splitlines()
    except (FileNotFoundError, IsADirectoryError):
        raise UserError(f"{p}: no such file") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text (offset {e.start})") from None


def play_actions(sandbox: Sandbox, prog: Program, seed: int, with_hint: bool,
                 actions: list[str]) -> Transcript:
    """Replay ``actions`` in order; the episode ends when they run out (or earlier)."""
    replay = iter(actions)
    p = play(sandbox, prog.source, prog.meta.class_name, seed,
             lambda ep, obs: next(replay, None), min(prog.max_turns, len(actions)),
             with_hint=with_hint)
    return Transcript(str(prog.path), prog.meta.class_name, "actions", seed, p.hint,
                      list(p.observations), list(p.actions), list(p.rewards), p.terminated,
                      p.truncated, _end_reason(p.terminated, p.truncated, p.error), p.error)


def play_model(backend, sandbox: Sandbox, prog: Program, seed: int, with_hint: bool,
               rollout_cfg, sampling) -> Transcript:
    """The model's episode, played by ``rollout.play_episode`` with the rollout's caps."""
    from spade_tasks.rollout import play_episode

    if with_hint and not prog.meta.has_hint:
        raise UserError(f"{prog.path}: {prog.meta.class_name} defines no hint(); "
                        "play it without --hint")
    rec = prog.record()
    answers: list[str] = []
    if with_hint:  # the rollout's rule: a hint() that holds the oracle's answer is refused
        from spade_tasks.hints import probe

        answers = [a for a in [probe(sandbox, rec, seed).answer] if a]
    r = play_episode(backend, sandbox, rec, seed, rollout_cfg, with_hint=with_hint,
                     sampling=sampling, answers=answers)
    # Each turn keeps the observation its action answered; the last step's comes apart.
    observations = [t.observation for t in r.turns]
    if r.turns and r.error is None and r.final_observation is not None:
        observations.append(r.final_observation)
    return Transcript(str(prog.path), prog.meta.class_name, "model", seed, r.hint,
                      observations, [t.action for t in r.turns], [t.reward for t in r.turns],
                      r.terminated, r.truncated, r.end_reason or "max_turns", r.error)


def play_human(sandbox: Sandbox, prog: Program, seed: int, with_hint: bool,
               ask: Callable[[str], str] = input, say: Callable[[str], None] = print) -> Transcript:
    """A person's episode: ``say`` shows each observation and reward, ``ask`` reads the
    next action (one line); end of input (Ctrl-D) ends the episode as ``quit``."""
    t = Transcript(str(prog.path), prog.meta.class_name, "human", seed)
    with sandbox.open(prog.source, prog.meta.class_name, {"max_turns": prog.max_turns}) as ep:
        if not ep.load_result.ok:
            raise UserError(f"{prog.path}: does not load: {ep.load_result.error}")
        r = ep.reset(seed)
        if not r.ok:
            t.error, t.end_reason = r.error, _end_reason(False, False, r.error)
            say(f"[environment fault] {r.error}")
            return t
        t.observations.append(r.value[0])
        say(f"== {prog.path.name} ({prog.meta.class_name}), seed {seed}: you play, "
            f"at most {prog.max_turns} turns; one line is one action, Ctrl-D quits")
        say(f"[observation]\n{r.value[0]}")
        if with_hint and prog.meta.has_hint:
            h = ep.hint()
            if h.ok:
                t.hint = h.value
                say(f"[hint]\n{h.value}")
        for turn in range(1, prog.max_turns + 1):
            try:
                action = ask(f"[turn {turn}] action> ")
            except EOFError:
                t.end_reason = "quit"
                say("")
                break
            t.actions.append(action)
            r = ep.step(action)
            if not r.ok:
                t.error, t.end_reason = r.error, _end_reason(False, False, r.error)
                say(f"[environment fault] {r.error}")
                break
            obs, reward, t.terminated, t.truncated, _ = r.value
            t.rewards.append(reward)
            t.observations.append(obs)
            say(f"[turn {turn}] reward {reward:g} (return so far {t.ret:g}); observation:\n{obs}")
            if t.terminated or t.truncated:
                t.end_reason = _end_reason(t.terminated, t.truncated, None)
                break
    return t


def format_transcript(t: Transcript) -> str:
    """The transcript as the terminal shows it."""
    lines = [f"== {t.path} ({t.class_name}), seed {t.seed}, policy {t.policy}",
             f"[observation]\n{t.observations[0] if t.observations else ''}"]
    if t.hint is not None:
        lines.append(f"[hint]\n{t.hint}")
    for i, (action, obs, reward) in enumerate(zip(t.actions, t.observations[1:], t.rewards),
                                              start=1):
        lines.append(f"[turn {i}] action:\n{action}")
        lines.append(f"[turn {i}] reward {reward:g}; observation:\n{obs}")
    if t.error:
        lines.append(f"[fault] {t.error}")
    lines.append(f"== return {t.ret:g} in {t.turns} turns ({t.end_reason})")
    return "\n".join(lines)

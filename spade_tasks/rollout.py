"""Agent rollouts: every environment played G times without its hint and G times with it.

Both arms of an environment use the same G environment seeds, so the only difference
between them is the hint (appended to the first observation). All episodes of a rollout
advance in lockstep: each turn makes ONE batched ``backend.generate`` call over every
episode still running, then every environment steps in its own sandbox worker. The
agent sees a chat: the system prompt (``prompts/agent_system.txt``), then the
environment's observations as user turns and its own actions as assistant turns, with
the whole history kept (memory games need it).

Every turn keeps the prompt ids, generated ids and log-probs exactly as the backend
returned them, which is what the trainer consumes. An episode ends with one
``end_reason``:

- ``terminated`` / ``truncated``: the environment said so;
- ``max_turns``: ``min(environment max_turns, cfg.max_turns)`` turns were played;
- ``context``: the next prompt plus ``cfg.max_new_tokens`` would not fit in
  ``cfg.max_context_tokens`` (so every stored sequence fits the trainer's budget);
- ``env_fault:<kind>``: a sandbox call failed (kind: timeout, memory, crash,
  exception, protocol, bad_return); the rewards so far count;
- ``hint_refused``: the environment's own ``hint()`` contains the oracle's answer for
  this episode (the leak rule of ``hints.leaks``); the episode is not played with it.

An episode's return is its reward total capped to [-1, 1] (``validation.capped_return``,
the same function the validator and ``spade play`` use); an episode whose total exceeds
1.0 is reported by ``overflowing`` so the stage flags its environment (``reward_overflow``).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from spade_tasks import memory, progress
from spade_tasks.config import RolloutConfig
from spade_tasks.environments import EnvRecord, flag_environment, load_record
from spade_tasks.errors import SpadeError
from spade_tasks.hints import leaks, model_hints, probe
from spade_tasks.llm.base import (Backend, Completion, SamplingParams, render_prompts,
                                  with_prefill)
from spade_tasks.records import Played, Verdicts
from spade_tasks.regret import grouped_advantages
from spade_tasks.sandbox import Episode, Sandbox
from spade_tasks.seeds import derive
from spade_tasks.store import Store, queries
from spade_tasks.validation import EPS, RETURN_CAP, capped_return, is_solved

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

PROMPTS = Path(__file__).resolve().parent / "prompts"
HINT_FORMAT = "{observation}\n\nHint: {hint}"
"""How the hint is shown: appended to the first observation of a hint episode."""
MAX_THREADS = 32
"""Threads that start workers and step environments; they mostly wait on pipes."""


class RolloutError(SpadeError):
    """A rollout was asked of inconsistent inputs, or the backend broke its contract."""


def agent_system_prompt() -> str:
    """The agent's default system prompt (``prompts/agent_system.txt``)."""
    return (PROMPTS / "agent_system.txt").read_text(encoding="utf-8").strip()


def episode_seed(seed: int, env_id: str, k: int) -> int:
    """Environment seed of episode ``k`` of ``env_id``; the same in both arms."""
    return derive("episode", seed, env_id, k)


def episode_id(env_id: str, with_hint: bool, k: int) -> str:
    """Deterministic id, so a rerun of the same generation replaces its rows."""
    return f"{env_id}-{'h' if with_hint else 'n'}-{k}"


@dataclass
class Turn:
    """One agent action and what came of it."""

    turn: int
    observation: str
    """The observation this action answers (the first one without the hint)."""
    action: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    reward: float = 0.0
    """0.0 when the step itself failed (an env fault)."""


@dataclass
class EpisodeResult:
    """One played episode; ``end_reason`` says why it stopped."""

    episode_id: str
    env_id: str
    seed: int
    with_hint: bool
    hint: str | None = None
    turns: list[Turn] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    end_reason: str | None = None
    error: str | None = None
    """The sandbox's ``"<kind>: <detail>"`` for an env fault."""
    final_observation: str | None = None
    """The observation after the last action (shown to nobody, kept for transcripts)."""

    @property
    def total(self) -> float:
        return math.fsum(t.reward for t in self.turns)

    @property
    def ret(self) -> float:
        """The return: the reward total capped to [-1, 1]."""
        return capped_return(self.total)

    @property
    def overflow(self) -> bool:
        """The environment paid past 1.0 in this episode (``reward_overflow``)."""
        return self.total > RETURN_CAP + EPS

    @property
    def solved(self) -> bool:
        return is_solved(self.total)


@dataclass
class _Live:
    """An episode in progress: its worker, its chat, its turn cap."""

    result: EpisodeResult
    record: EnvRecord
    limit: int
    episode: Episode | None = None
    messages: list[dict] = field(default_factory=list)
    observation: str = ""

    def end(self, reason: str, error: str | None = None) -> None:
        self.result.end_reason = reason
        self.result.error = error
        if self.episode is not None:
            self.episode.close()  # free the worker now, not at the end of the rollout


def _check_inputs(envs: Sequence[EnvRecord], hints: dict[str, str] | None) -> None:
    ids = [r.env_id for r in envs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RolloutError(f"rollout: environments listed twice: {', '.join(dupes)}")
    missing = [r.env_id for r in envs if not r.has_hint and r.env_id not in (hints or {})]
    if missing:
        raise RolloutError(
            f"rollout: no hint for {', '.join(missing)} (they define no hint(); pass one in "
            "`hints`), so their hint arm would silently equal the no-hint arm")


def _start(sandbox: Sandbox, live: _Live, system_prompt: str, hints: dict[str, str],
           opened: list[Episode], answers: Mapping[str, Sequence[str]]) -> None:
    """Open the worker, reset, fetch the hint; a fault ends the episode at turn 0."""
    rec, res = live.record, live.result
    ep = sandbox.open(rec.source, rec.class_name, {"max_turns": rec.max_turns})
    opened.append(ep)  # list.append is atomic: the rollout's finally closes every worker
    live.episode = ep
    if not ep.load_result.ok:
        return live.end(f"env_fault:{ep.load_result.kind}", ep.load_result.error)
    r = ep.reset(res.seed)
    if not r.ok:
        return live.end(f"env_fault:{r.kind}", r.error)
    live.observation = first = r.value[0]
    if res.with_hint:
        if rec.env_id in hints:  # supplied: a model hint, or one checked beforehand
            res.hint = hints[rec.env_id]
        else:
            h = ep.hint()
            if not h.ok:
                return live.end(f"env_fault:{h.kind}", h.error)
            # Never shown raw: the environment's own hint passes the same leak rule as a
            # model-written one, or the episode is not played with it.
            leaked = leaks(h.value or "", answers.get(rec.env_id, ()))
            if leaked:
                return live.end("hint_refused",
                                f"hint_leak: hint() contains the oracle's answer {leaked!r}")
            res.hint = h.value
        first = HINT_FORMAT.format(observation=first, hint=res.hint)
    live.messages = [{"role": "system", "content": system_prompt},
                     {"role": "user", "content": first}]


def _advance(live: _Live, c: Completion) -> None:
    """Step the environment with the completion's text and record the turn."""
    res = live.result
    # The action is the whole answer: a prefill (rollout.prefill) and what followed it.
    # The prefill is part of the turn's prompt tokens, so only the model's own are trained.
    action = c.full_text
    turn = Turn(len(res.turns), live.observation, action, c.prompt_token_ids, c.token_ids,
                c.logprobs, c.finish_reason)
    res.turns.append(turn)
    r = live.episode.step(action)
    if not r.ok:
        return live.end(f"env_fault:{r.kind}", r.error)
    obs, turn.reward, res.terminated, res.truncated, _ = r.value
    res.final_observation = obs
    if res.terminated:
        return live.end("terminated")
    if res.truncated:
        return live.end("truncated")
    if len(res.turns) >= live.limit:
        return live.end("max_turns")
    live.observation = obs
    live.messages += [{"role": "assistant", "content": action}, {"role": "user", "content": obs}]


def rollout(backend: Backend, sandbox: Sandbox, envs: Sequence[EnvRecord], cfg: RolloutConfig,
            seed: int, hints: dict[str, str] | None = None, system_prompt: str | None = None,
            sampling: SamplingParams | None = None,
            answers: Mapping[str, Sequence[str]] | None = None) -> list[EpisodeResult]:
    """Play every environment ``cfg.episodes_per_env`` times without and as many times
    with its hint, all episodes in lockstep; results in (env, k, no hint / hint) order.

    ``hints`` supplies the hint of environments without ``hint()`` (and replaces the
    ``hint()`` of those listed); ``answers`` holds each environment's oracle answers,
    against which an environment's own ``hint()`` is checked before it is shown (a
    leaking hint ends its episode as ``hint_refused``); ``sampling`` gives
    temperature/top-p/stop (``max_new_tokens`` comes from ``cfg``, the seed from ``seed``
    and the turn). Every sandbox worker is closed on return or on any exception.
    """
    _check_inputs(envs, hints)
    system_prompt = agent_system_prompt() if system_prompt is None else system_prompt
    base = sampling or SamplingParams()
    live: list[_Live] = []
    for rec in envs:
        limit = min(rec.max_turns, cfg.max_turns)
        for k in range(cfg.episodes_per_env):
            s = episode_seed(seed, rec.env_id, k)
            for with_hint in (False, True):
                res = EpisodeResult(episode_id(rec.env_id, with_hint, k), rec.env_id, s, with_hint)
                live.append(_Live(res, rec, limit))
    opened: list[Episode] = []
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(MAX_THREADS, len(live)))) as pool:
            list(pool.map(lambda lv: _start(sandbox, lv, system_prompt, hints or {}, opened,
                                            answers or {}), live))
            active = [lv for lv in live if lv.result.end_reason is None]
            turn = 0
            while active:
                lengths = [len(p) for p in render_prompts(backend.tokenizer,
                                                          [lv.messages for lv in active], None)]
                for lv, n in zip(active, lengths):
                    if n + cfg.max_new_tokens > cfg.max_context_tokens:
                        lv.end("context")
                active = [lv for lv in active if lv.result.end_reason is None]
                if not active:
                    break
                params = replace(base, max_new_tokens=cfg.max_new_tokens,
                                 seed=derive("turn", seed, turn, bits=63))
                completions = backend.generate(
                    [with_prefill(lv.messages, cfg.prefill) for lv in active], params)
                if len(completions) != len(active):
                    raise RolloutError(f"backend returned {len(completions)} completions for "
                                       f"{len(active)} conversations")
                list(pool.map(_advance, active, completions))
                active = [lv for lv in active if lv.result.end_reason is None]
                turn += 1
    finally:
        for ep in opened:
            ep.close()
    return [lv.result for lv in live]


# -- DuckDB rows ------------------------------------------------------------------------

_EPISODE_SCHEMA = pa.schema([
    ("run", pa.string()), ("generation", pa.int32()), ("episode_id", pa.string()),
    ("env_id", pa.string()), ("seed", pa.int64()), ("with_hint", pa.bool_()),
    ("hint", pa.string()), ("return", pa.float64()), ("turns", pa.int32()),
    ("terminated", pa.bool_()), ("truncated", pa.bool_()), ("end_reason", pa.string()),
    ("final_observation", pa.string()), ("error", pa.string())])
_TURN_SCHEMA = pa.schema([
    ("run", pa.string()), ("generation", pa.int32()), ("episode_id", pa.string()),
    ("turn", pa.int32()), ("prompt_token_ids", pa.list_(pa.int32())),
    ("token_ids", pa.list_(pa.int32())), ("logprobs", pa.list_(pa.float64())),
    ("action", pa.string()), ("observation", pa.string()), ("reward", pa.float64())])


def episode_rows(run: str, generation: int,
                 results: Sequence[EpisodeResult]) -> tuple[list[dict], list[dict]]:
    """The ``episodes`` and ``turns`` rows of a rollout."""
    episodes, turns = [], []
    for r in results:
        episodes.append({"run": run, "generation": generation, "episode_id": r.episode_id,
                         "env_id": r.env_id, "seed": r.seed, "with_hint": r.with_hint,
                         "hint": r.hint, "return": r.ret, "turns": len(r.turns),
                         "terminated": r.terminated, "truncated": r.truncated,
                         "end_reason": r.end_reason, "final_observation": r.final_observation,
                         "error": r.error})
        turns += [{"run": run, "generation": generation, "episode_id": r.episode_id,
                   "turn": t.turn, "prompt_token_ids": t.prompt_token_ids,
                   "token_ids": t.token_ids, "logprobs": t.logprobs, "action": t.action,
                   "observation": t.observation, "reward": t.reward} for t in r.turns]
    return episodes, turns


def record_episodes(store: Store, run: str, generation: int,
                    results: Sequence[EpisodeResult]) -> None:
    """Replace this generation's ``episodes`` and ``turns`` rows in one transaction.

    Rows go in as Arrow tables with explicit list types rather than through
    ``Store.replace_rows``' executemany: ~4x faster on turns carrying ~1k token ids
    (measured 3.9k vs 0.95k rows/s), and both tables change atomically together.
    """
    episodes, turns = episode_rows(run, generation, results)
    tables = {"episodes": pa.Table.from_pylist(episodes, schema=_EPISODE_SCHEMA),
              "turns": pa.Table.from_pylist(turns, schema=_TURN_SCHEMA)}
    queries.replace_episode_tables(store, run, generation, tables)


__all__ = ["EpisodeResult", "Turn", "RolloutError", "rollout", "record_episodes",
           "episode_rows", "episode_seed", "episode_id", "agent_system_prompt", "HINT_FORMAT",
           "overflowing"]


def overflowing(results: Sequence[EpisodeResult]) -> dict[str, str]:
    """``env_id -> "reward_overflow: ..."`` for environments that paid past 1.0 in any
    episode (their episodes count capped; the environment then leaves the pool)."""
    out: dict[str, str] = {}
    for r in results:
        if r.overflow and r.env_id not in out:
            out[r.env_id] = (f"reward_overflow: episode {r.episode_id} (seed {r.seed}) paid "
                             f"{r.total:g} in total, past 1.0")
    return out


# -- the flow's stage ---------------------------------------------------------------------


@dataclass
class _Round:
    """One round of the rollout stage: the environments played and what came of it."""

    envs: list[EnvRecord]
    results: list[EpisodeResult]
    hints_model: int
    hints_refused: int
    unhinted: list[str]
    tokens: int
    seconds: float


def _play_round(rt: StageRuntime, backend: Backend, envs: list[EnvRecord], seed: int,
                name: str) -> _Round:
    """Hint every environment (its own ``hint()`` when it leaks no answer, else a
    model-written one), then play each without and with it."""
    cfg = rt.cfg
    # The oracle's answers on this generation's episode seeds (and each hint() there):
    # no hint that contains one is shown, whoever wrote it. Environments without hint(),
    # or whose hint() leaks or fails on any of the seeds, get a model-written hint,
    # refused in turn when it leaks.
    probes = {r.env_id: [probe(rt.sandbox, r, episode_seed(seed, r.env_id, k))
                         for k in range(cfg.rollout.episodes_per_env)] for r in envs}
    answers = {env: [p.answer for p in ps if p.answer] for env, ps in probes.items()}
    refused = [r for r in envs if r.has_hint and any(
        not (p.env_hint or "").strip() or leaks(p.env_hint, answers[r.env_id])
        for p in probes[r.env_id])]
    need = [r for r in envs if not r.has_hint] + refused
    written = model_hints(backend, need, seed, answers) if need else {}
    hints = {env: h.text for env, h in written.items() if h.text}
    # Without a hint the two arms are the same game and regret is not measured: such an
    # environment sits this generation out (its design is scored as unmeasured).
    unhinted = [r.env_id for r in need if r.env_id not in hints]
    envs = [r for r in envs if r.env_id not in unhinted]
    t0 = time.perf_counter()
    with progress.stage(name, total=2 * cfg.rollout.episodes_per_env * len(envs)) as bar:
        results = rollout(backend, rt.sandbox, envs, cfg.rollout, seed, hints,
                          sampling=SamplingParams.from_config(cfg.model), answers=answers)
        tokens = sum(len(t.token_ids) for r in results for t in r.turns)
        bar.advance(len(results), tokens)
    return _Round(envs, results, len(hints), len(refused), unhinted, tokens,
                  time.perf_counter() - t0)


def agent_has_gradient(results: Sequence[EpisodeResult]) -> bool:
    """Some environment's episodes without a hint returned differently, so the agent
    has a sample with a non-zero advantage (the grouping training uses)."""
    mine = [r for r in results if not r.with_hint]
    return any(a != 0.0 for a in grouped_advantages([r.ret for r in mine],
                                                    [r.env_id for r in mine]))


def rollout_stage(rt: StageRuntime, generation: int, verdicts: Verdicts) -> Played:
    """Play this generation's accepted environments plus a sample of the memory pool,
    without and with hints, and record every episode and turn.

    When no environment's episodes differ, the agent has nothing to learn from this
    generation: up to ``rollout.flat_rounds`` more rounds of pool games are played
    until one does."""
    cfg, store, run = rt.cfg, rt.store, rt.run
    seed = rt.seed(generation, salt=7)
    new = [r for r in (load_record(store, e) for e in verdicts.accepted_env_ids)
           if r is not None]
    tried = [r.env_id for r in new]

    def draw(salt: int) -> list[EnvRecord]:
        picked = memory.pool_sample(store, run, cfg.rollout.pool_sample,
                                    seed if salt == 0 else derive(seed, "flat", salt),
                                    exclude=tried, priority=cfg.rollout.pool_priority,
                                    generation=generation, group=cfg.rollout.episodes_per_env)
        tried.extend(r.env_id for r in picked)
        return picked

    backend = rt.backend()
    pool = draw(0)
    rounds = [_play_round(rt, backend, new + pool, seed, "rollout")]
    for k in range(1, cfg.rollout.flat_rounds + 1):
        if agent_has_gradient([r for rd in rounds for r in rd.results]):
            break
        more = draw(k)
        if not more:
            break
        pool += more
        rounds.append(_play_round(rt, backend, more, seed, f"rollout (flat round {k})"))
    results = [r for rd in rounds for r in rd.results]
    tokens, seconds = sum(rd.tokens for rd in rounds), sum(rd.seconds for rd in rounds)
    record_episodes(store, run, generation, results)
    # A program that paid past 1.0 leaves the pool (its episodes counted capped).
    overflow = overflowing(results)
    for env_id, why in overflow.items():
        flag_environment(store, env_id, why)
    memory.drop_flagged(store, run)
    return Played(
        episode_ids=[r.episode_id for r in results],
        episodes=len(results), environments=[r.env_id for rd in rounds for r in rd.envs],
        environments_new=len(new), environments_pool=len(pool),
        hints_model=sum(rd.hints_model for rd in rounds),
        hints_dropped=sum(len(rd.unhinted) for rd in rounds),
        hints_env_refused=sum(rd.hints_refused for rd in rounds),
        environments_overflow=sorted(overflow),
        environments_unhinted=[e for rd in rounds for e in rd.unhinted],
        flat_rounds=len(rounds) - 1, rollout_workers=cfg.model.replicas,
        rollout_tokens=tokens, rollout_tokens_per_s=tokens / seconds if seconds else 0.0,
        end_reasons=dict(Counter(r.end_reason for r in results)))


# -- one episode, for `spade play --policy model` -----------------------------------------


def play_episode(backend: Backend, sandbox: Sandbox, rec: EnvRecord, env_seed: int,
                 cfg: RolloutConfig, with_hint: bool = False, hint: str | None = None,
                 system_prompt: str | None = None,
                 sampling: SamplingParams | None = None,
                 answers: Sequence[str] = ()) -> EpisodeResult:
    """One episode of ``rec`` on environment seed ``env_seed``, played by the backend as
    a rollout plays it (same chat, hint format, turn and context limits, end reasons).

    ``hint`` stands in for an environment without ``hint()`` when ``with_hint``;
    ``answers`` are the oracle's answers, which ``hint()`` must not contain (as in
    ``rollout``).
    """
    if with_hint and not rec.has_hint and not hint:
        raise RolloutError(f"{rec.class_name} defines no hint(); pass one to play with a hint")
    system_prompt = agent_system_prompt() if system_prompt is None else system_prompt
    base = sampling or SamplingParams()
    res = EpisodeResult(episode_id(rec.env_id, with_hint, 0), rec.env_id, env_seed, with_hint)
    live = _Live(res, rec, min(rec.max_turns, cfg.max_turns))
    opened: list[Episode] = []
    try:
        _start(sandbox, live, system_prompt, {rec.env_id: hint} if hint else {}, opened,
               {rec.env_id: answers})
        turn = 0
        while res.end_reason is None:
            (n,) = [len(p) for p in render_prompts(backend.tokenizer, [live.messages], None)]
            if n + cfg.max_new_tokens > cfg.max_context_tokens:
                live.end("context")
                break
            params = replace(base, max_new_tokens=cfg.max_new_tokens,
                             seed=derive("turn", env_seed, turn, bits=63))
            completions = backend.generate([with_prefill(live.messages, cfg.prefill)], params)
            if len(completions) != 1:
                raise RolloutError(f"backend returned {len(completions)} completions for 1")
            _advance(live, completions[0])
            turn += 1
    finally:
        for ep in opened:
            ep.close()
    return res

"""Rollout: lockstep batching, hint arms, end reasons, exact token records, DuckDB rows.

A scripted backend (deterministic actions from a policy over the conversation, a
character-level "tokenizer") drives small programs written here; one slow test runs the
real embedded model end to end.
"""

from __future__ import annotations

import copy
import re
import textwrap
from pathlib import Path

import pytest

from spade_tasks.config import RolloutConfig
from spade_tasks.environments import SEEDS_DIR, EnvRecord
from spade_tasks.llm.base import Backend, Completion, prefill_of, render_prompts
from spade_tasks.rollout import (
    HINT_FORMAT,
    RolloutError,
    agent_system_prompt,
    episode_seed,
    record_episodes,
    rollout,
)
from spade_tasks.store import Store
from spade_tasks.transcripts import format_transcript
from spade_tasks.validation import env_class_name

# -- scripted backend ---------------------------------------------------------------------


class CharTokenizer:
    """One id per character; a chat template that tags each message with its role."""

    def apply_chat_template(self, conv, tools=None, add_generation_prompt=True, tokenize=False):
        return "".join(f"<{m['role']}>{m['content']}" for m in conv) + "<assistant>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


class ScriptedBackend(Backend):
    """Answers each conversation with ``policy(conversation)``; remembers every call.

    Token ids and log-probs are arbitrary but unique per (call, position), so a test can
    check they are stored exactly as returned."""

    name = "scripted"

    def __init__(self, policy, fail_on_call: int | None = None):
        self.policy = policy
        self.fail_on_call = fail_on_call
        self.calls: list[list[list[dict]]] = []
        self.returned: list[list[Completion]] = []
        self._tok = CharTokenizer()

    @property
    def tokenizer(self):
        return self._tok

    def generate(self, conversations, params, tools=None):
        if self.fail_on_call == len(self.calls) + 1:
            raise RuntimeError("scripted backend failure")
        self.calls.append(copy.deepcopy(conversations))
        n = len(self.calls)
        prompts = render_prompts(self._tok, conversations, tools)
        out = [Completion(self.policy(conv), prompt, [n * 1000 + i * 10 + j for j in range(3)],
                          [-(n + i + j) / 7 for j in range(3)], "stop", prefill_of(conv))
               for i, (conv, prompt) in enumerate(zip(conversations, prompts))]
        self.returned.append(out)
        return out

    def load_weights(self, checkpoint_dir):
        raise NotImplementedError


def constant(text):
    return lambda conv: text


# -- small programs -------------------------------------------------------------------------

PROGRAMS = {
    # Ends at the first action; "win" solves it.
    "QuickEnv": '''
        class QuickEnv:
            """Say win."""
            max_turns = 5
            def reset(self, seed=None, options=None):
                return f"seed {seed}: say win", {}
            def step(self, action):
                return "over", (1.0 if action.strip() == "win" else 0.0), True, False, {}
            def hint(self):
                return "the word is win"
    ''',
    # Needs three actions, then terminates with 1.0.
    "SlowEnv": '''
        class SlowEnv:
            """Count to three."""
            max_turns = 5
            def reset(self, seed=None, options=None):
                self.t = 0
                return "count to three", {}
            def step(self, action):
                self.t += 1
                done = self.t >= 3
                return f"count {self.t}", (1.0 if done else 0.0), done, False, {}
            def hint(self):
                return "just keep answering"
    ''',
    # The environment truncates itself after two steps.
    "TruncEnv": '''
        class TruncEnv:
            """Two steps then truncated."""
            max_turns = 2
            def reset(self, seed=None, options=None):
                self.t = 0
                return "go", {}
            def step(self, action):
                self.t += 1
                return "step", 0.0, False, self.t >= 2, {}
            def hint(self):
                return "nothing helps"
    ''',
    # Observations grow the prompt until it no longer fits the context.
    "WordyEnv": '''
        class WordyEnv:
            """Long observations."""
            max_turns = 20
            def reset(self, seed=None, options=None):
                return "start", {}
            def step(self, action):
                return "w" * 60, 0.0, False, False, {}
            def hint(self):
                return "h"
    ''',
    # step raises on turn 2: an env fault after a rewarded first turn.
    "FaultyEnv": '''
        class FaultyEnv:
            """Breaks on the second step."""
            max_turns = 5
            def reset(self, seed=None, options=None):
                self.t = 0
                return "careful", {}
            def step(self, action):
                self.t += 1
                if self.t == 2:
                    raise RuntimeError("boom")
                return "ok", 0.25, False, False, {}
            def hint(self):
                return "h"
    ''',
    "BadResetEnv": '''
        class BadResetEnv:
            """Cannot reset."""
            max_turns = 5
            def reset(self, seed=None, options=None):
                raise ValueError("no")
            def step(self, action):
                return "x", 0.0, True, False, {}
            def hint(self):
                return "h"
    ''',
    # Penalties far past -1: the return is floored.
    "PenaltyEnv": '''
        class PenaltyEnv:
            """Every action costs 0.7."""
            max_turns = 3
            def reset(self, seed=None, options=None):
                return "pay", {}
            def step(self, action):
                return "paid", -0.7, False, False, {}
            def hint(self):
                return "h"
    ''',
    # Pays 0.7 a step for three steps: 2.1 in all, past the 1.0 cap.
    "GreedyEnv": '''
        class GreedyEnv:
            """Paid past solved."""
            max_turns = 5
            def reset(self, seed=None, options=None):
                self.t = 0
                return "say anything", {}
            def step(self, action):
                self.t += 1
                return f"paid {self.t}", 0.7, self.t >= 3, False, {}
            def hint(self):
                return "keep talking"
    ''',
    # Its hint() states the seed's answer.
    "LeakyHintEnv": '''
        class LeakyHintEnv:
            """Name the secret word."""
            max_turns = 2
            def reset(self, seed=None, options=None):
                self.word = ["amber", "cobalt", "indigo"][seed % 3]
                return "name the secret colour", {}
            def step(self, action):
                return "over", float(action.strip() == self.word), True, False, {}
            def hint(self):
                return f"The secret colour is {self.word}."
            def oracle(self):
                return self.word
    ''',
    # No hint(): its hint must come from the caller.
    "HintlessEnv": '''
        class HintlessEnv:
            """No hint method."""
            max_turns = 1
            def reset(self, seed=None, options=None):
                return "guess", {}
            def step(self, action):
                return "over", 0.0, True, False, {}
    ''',
}


def record(class_name: str, env_id: str | None = None) -> EnvRecord:
    source = textwrap.dedent(PROGRAMS[class_name])
    max_turns = int(re.search(r"max_turns = (\d+)", source).group(1))
    return EnvRecord(env_id or class_name.lower(), source, class_name, "", "", max_turns,
                     "def hint" in source, "def oracle" in source, "seed", "")


def seed_record(name: str) -> EnvRecord:
    source = (SEEDS_DIR / name).read_text()
    max_turns = int(re.search(r"max_turns = (\d+)", source).group(1))
    return EnvRecord(Path(name).stem, source, env_class_name(source), "", "", max_turns,
                     "def hint" in source, "def oracle" in source or "def solution" in source,
                     "seed", str(SEEDS_DIR / name))


def by_id(results):
    return {r.episode_id: r for r in results}


CFG = RolloutConfig(episodes_per_env=1, max_turns=8, max_new_tokens=16)

# -- tests ----------------------------------------------------------------------------------


def test_hint_is_appended_only_in_hint_episodes(sandbox):
    backend = ScriptedBackend(constant("win"))
    envs = [record("QuickEnv"), record("HintlessEnv")]
    results = rollout(backend, sandbox, envs, CFG.model_copy(update={"episodes_per_env": 2}),
                      seed=3, hints={"hintlessenv": "think hard"})
    for r in results:
        assert (r.hint is not None) == r.with_hint
    assert by_id(results)["quickenv-h-0"].hint == "the word is win"  # from the program's hint()
    assert by_id(results)["hintlessenv-h-1"].hint == "think hard"    # from the caller
    users = [conv[1]["content"] for conv in backend.calls[0]]
    assert users == [
        "seed {}: say win".format(episode_seed(3, "quickenv", 0)),
        HINT_FORMAT.format(observation="seed {}: say win".format(episode_seed(3, "quickenv", 0)),
                           hint="the word is win"),
        "seed {}: say win".format(episode_seed(3, "quickenv", 1)),
        HINT_FORMAT.format(observation="seed {}: say win".format(episode_seed(3, "quickenv", 1)),
                           hint="the word is win"),
        "guess", HINT_FORMAT.format(observation="guess", hint="think hard"),
        "guess", HINT_FORMAT.format(observation="guess", hint="think hard"),
    ]
    assert all(conv[0]["role"] == "system" and conv[0]["content"] for conv in backend.calls[0])


def test_missing_hint_is_an_error(sandbox):
    with pytest.raises(RolloutError, match="hintlessenv"):
        rollout(ScriptedBackend(constant("x")), sandbox, [record("HintlessEnv")], CFG, seed=0)


def test_same_seeds_in_both_arms_and_deterministic(sandbox):
    envs = [record("QuickEnv")]
    cfg = CFG.model_copy(update={"episodes_per_env": 3})
    results = rollout(ScriptedBackend(constant("win")), sandbox, envs, cfg, seed=7)
    seeds = {(r.with_hint, int(r.episode_id[-1])): r.seed for r in results}
    assert [seeds[(False, k)] for k in range(3)] == [seeds[(True, k)] for k in range(3)]
    assert len({seeds[(False, k)] for k in range(3)}) == 3
    assert seeds[(False, 0)] == episode_seed(7, "quickenv", 0) != episode_seed(8, "quickenv", 0)
    again = rollout(ScriptedBackend(constant("win")), sandbox, envs, cfg, seed=7)
    assert [(r.episode_id, r.seed) for r in again] == [(r.episode_id, r.seed) for r in results]


def test_episodes_advance_in_lockstep_and_finished_ones_drop_out(sandbox):
    backend = ScriptedBackend(constant("win"))
    results = rollout(backend, sandbox, [record("QuickEnv"), record("SlowEnv")], CFG, seed=0)
    # One generate call per turn, batching every episode still running.
    assert [len(c) for c in backend.calls] == [4, 2, 2]
    assert [c[0][1]["content"] for c in backend.calls[1:]] == ["count to three"] * 2
    turns = {r.episode_id: len(r.turns) for r in results}
    assert turns == {"quickenv-n-0": 1, "quickenv-h-0": 1, "slowenv-n-0": 3, "slowenv-h-0": 3}
    slow = by_id(results)["slowenv-n-0"]
    # The full history is kept: system, then alternating observation / action.
    assert [m["role"] for m in backend.calls[2][0]] == ["system", "user", "assistant", "user",
                                                       "assistant", "user"]
    assert [t.observation for t in slow.turns] == ["count to three", "count 1", "count 2"]
    assert slow.final_observation == "count 3"
    assert all(r.end_reason == "terminated" and r.ret == 1.0 and r.solved for r in results)


@pytest.mark.parametrize("program, cfg_update, reason, n_turns, ret", [
    ("QuickEnv", {}, "terminated", 1, 1.0),
    ("SlowEnv", {"max_turns": 2}, "max_turns", 2, 0.0),
    ("TruncEnv", {}, "truncated", 2, 0.0),
    # A budget that fits the first prompt plus two 80-character turns, not a third.
    ("WordyEnv", {"max_context_tokens": "first prompt + 210", "max_new_tokens": 10}, "context",
     3, 0.0),
    ("FaultyEnv", {}, "env_fault:exception", 2, 0.25),
    ("BadResetEnv", {}, "env_fault:exception", 0, 0.0),
    ("PenaltyEnv", {}, "max_turns", 3, -1.0),
    ("GreedyEnv", {}, "terminated", 3, 1.0),  # 2.1 paid, capped
])
def test_end_reasons(sandbox, program, cfg_update, reason, n_turns, ret):
    if "max_context_tokens" in cfg_update:
        first = len(CharTokenizer().apply_chat_template(
            [{"role": "system", "content": agent_system_prompt()},
             {"role": "user", "content": "start"}]))
        cfg_update = dict(cfg_update, max_context_tokens=first + 210)
    cfg = CFG.model_copy(update=cfg_update)
    results = rollout(ScriptedBackend(constant("win")), sandbox, [record(program)], cfg, seed=1)
    for r in results:
        assert (r.end_reason, len(r.turns), r.ret) == (reason, n_turns, ret)
        if reason.startswith("env_fault"):
            assert "boom" in r.error or "no" in r.error
    if reason == "context":
        prompt = len(results[0].turns[-1].prompt_token_ids)
        assert prompt + cfg.max_new_tokens <= cfg.max_context_tokens


def test_tokens_and_logprobs_stored_exactly(sandbox, tmp_path):
    backend = ScriptedBackend(constant("win"))
    results = rollout(backend, sandbox, [record("QuickEnv"), record("SlowEnv")], CFG, seed=0)
    returned = [c for call in backend.returned for c in call]
    kept = [t for r in results for t in r.turns]
    key = lambda x: tuple(x.token_ids)  # noqa: E731
    assert sorted(map(key, kept)) == sorted(map(key, returned))
    by_ids = {key(c): c for c in returned}
    for t in kept:
        c = by_ids[key(t)]
        assert (t.prompt_token_ids, t.token_ids, t.logprobs, t.action) == (
            c.prompt_token_ids, c.token_ids, c.logprobs, c.text)
    with Store(tmp_path / "db.duckdb") as store:
        record_episodes(store, "r", 0, results)
        rows = store.rows("SELECT * FROM turns ORDER BY episode_id, turn")
        stored = {(r["episode_id"], r["turn"]): r for r in rows}
        for res in results:
            for t in res.turns:
                row = stored[(res.episode_id, t.turn)]
                assert row["prompt_token_ids"] == t.prompt_token_ids
                assert row["token_ids"] == t.token_ids
                assert row["logprobs"] == t.logprobs  # DOUBLE[]: bit-exact
        assert store.rows("SELECT typeof(token_ids) t, typeof(logprobs) l FROM turns LIMIT 1") == [
            {"t": "INTEGER[]", "l": "DOUBLE[]"}]


def test_record_episodes_rerun_leaves_one_copy(sandbox, tmp_path):
    envs = [record("QuickEnv"), record("SlowEnv"), record("BadResetEnv")]
    results = rollout(ScriptedBackend(constant("win")), sandbox, envs, CFG, seed=0)
    with Store(tmp_path / "db.duckdb") as store:
        record_episodes(store, "r", 0, results)
        record_episodes(store, "r", 1, results)
        record_episodes(store, "r", 0, results)  # a retried generation 0
        assert store.count("episodes", run="r", generation=0) == 6
        assert store.count("turns", run="r", generation=0) == 8
        assert store.count("episodes", run="r", generation=1) == 6
        ep = store.rows("SELECT * FROM episodes WHERE generation = 0 "
                        "AND episode_id = 'slowenv-h-0'")
        assert ep[0]["return"] == 1.0 and ep[0]["end_reason"] == "terminated"
        assert ep[0]["hint"] == "just keep answering" and ep[0]["turns"] == 3
        record_episodes(store, "r", 0, results[:2])
        assert store.count("episodes", run="r", generation=0) == 2


def test_transcript(sandbox, tmp_path):
    results = rollout(ScriptedBackend(constant("win")), sandbox, [record("SlowEnv")], CFG, seed=0)
    with Store(tmp_path / "db.duckdb") as store:
        record_episodes(store, "r", 0, results)
        record_episodes(store, "r", 1, results)
        text = format_transcript(store, "slowenv-h-0", run="r")
    assert "generation 1" in text
    assert text.index("count to three") < text.index("just keep answering") < text.index("count 2")
    assert "reward 1" in text and "== return 1 in 3 turns (terminated)" in text


def test_workers_closed_when_the_backend_fails(sandbox, monkeypatch):
    opened = []
    real_open = sandbox.open

    def spy(*args, **kwargs):
        ep = real_open(*args, **kwargs)
        opened.append(ep)
        return ep

    monkeypatch.setattr(sandbox, "open", spy)
    with pytest.raises(RuntimeError, match="scripted backend failure"):
        rollout(ScriptedBackend(constant("win"), fail_on_call=2), sandbox,
                [record("SlowEnv"), record("QuickEnv")], CFG, seed=0)
    assert len(opened) == 4
    assert all(ep.proc.poll() is not None for ep in opened)


def binary_search(conv: list[dict]) -> str:
    """Plays number_guess from the observations: keep the feasible interval, guess its middle."""
    lo, hi = 1, int(re.search(r"from 1 to (\d+)", conv[1]["content"]).group(1))
    for m in conv[2:]:
        hit = re.match(r"(\d+) is wrong: the number is (higher|lower)", m["content"])
        if m["role"] == "user" and hit:
            g = int(hit.group(1))
            lo, hi = (g + 1, hi) if hit.group(2) == "higher" else (lo, g - 1)
    return f"My guess: \\boxed{{{(lo + hi) // 2}}}"


def test_seed_environment_solved_by_a_scripted_player(sandbox, tmp_path):
    cfg = RolloutConfig(episodes_per_env=3, max_turns=8, max_new_tokens=16)
    results = rollout(ScriptedBackend(binary_search), sandbox, [seed_record("number_guess.py")],
                      cfg, seed=11)
    assert len(results) == 6
    assert all(r.ret == 1.0 and r.solved and r.end_reason == "terminated" for r in results)
    assert any(len(r.turns) > 1 for r in results)
    with Store(tmp_path / "db.duckdb") as store:
        record_episodes(store, "r", 0, results)
        assert store.count("episodes", run="r") == 6


def test_prefill_opens_every_turn_and_is_part_of_the_action(sandbox):
    """rollout.prefill: the model continues it, the environment sees the whole answer,
    the next turn's history holds it, and the turn's trained tokens are the model's own."""
    prefix = "My guess: \\boxed{"

    def rest(conv):  # the binary search's answer after the prefill the model was given
        assert conv[-1] == {"role": "assistant", "content": prefix}
        return binary_search(conv[:-1]).removeprefix(prefix)

    backend = ScriptedBackend(rest)
    cfg = RolloutConfig(episodes_per_env=2, max_turns=8, max_new_tokens=16, prefill=prefix)
    results = rollout(backend, sandbox, [seed_record("number_guess.py")], cfg, seed=11)
    assert all(r.ret == 1.0 for r in results) and any(len(r.turns) > 1 for r in results)
    for r in results:
        assert all(t.action.startswith(prefix) for t in r.turns)
        assert all(len(t.token_ids) == 3 for t in r.turns)  # the scripted backend's own ids
    later = [c for call in backend.calls for c in call if len(c) > 3]
    assert later and all(m["content"].startswith(prefix)
                         for c in later for m in c[2:-1] if m["role"] == "assistant")


@pytest.mark.slow
def test_real_model_plays_two_seed_environments(sandbox, tmp_path):
    from spade_tasks.config import ModelConfig
    from spade_tasks.llm.base import make_backend

    backend = make_backend(ModelConfig(max_new_tokens=32))
    envs = [seed_record("number_guess.py"), seed_record("sequence_memory.py")]
    # Short turns keep this under ~90 s on two idle cores (model load is ~20 s of it).
    cfg = RolloutConfig(episodes_per_env=1, max_turns=2, max_new_tokens=16)
    results = rollout(backend, sandbox, envs, cfg, seed=0)
    assert len(results) == 4
    for r in results:
        assert r.end_reason in {"terminated", "truncated", "max_turns", "context"}, r.error
        assert r.turns and -1.0 <= r.ret <= 1.0
        for t in r.turns:
            assert 0 < len(t.token_ids) <= 16 and len(t.logprobs) == len(t.token_ids)
            assert all(lp <= 0.0 for lp in t.logprobs)
    with Store(tmp_path / "db.duckdb") as store:
        record_episodes(store, "r", 0, results)
        assert store.count("episodes", run="r", generation=0) == 4
        assert store.count("turns", run="r", generation=0) == sum(len(r.turns) for r in results)
        assert "== return" in format_transcript(store, results[0].episode_id, run="r")


# -- integrity: leaking hints and overflowing rewards ----------------------------------------


def test_leaking_env_hint_is_never_shown(sandbox):
    from spade_tasks.hints import probe

    rec = record("LeakyHintEnv")
    cfg = CFG.model_copy(update={"episodes_per_env": 3})
    seeds = [episode_seed(5, rec.env_id, k) for k in range(3)]
    answers = {rec.env_id: [probe(sandbox, rec, s).answer for s in seeds]}
    assert all(answers[rec.env_id])
    backend = ScriptedBackend(constant("amber"))
    results = rollout(backend, sandbox, [rec], cfg, seed=5, answers=answers)
    hinted = [r for r in results if r.with_hint]
    assert all(r.end_reason == "hint_refused" and r.hint is None and not r.turns for r in hinted)
    assert all(r.error.startswith("hint_leak: ") for r in hinted)
    shown = [m["content"] for call in backend.calls for conv in call for m in conv]
    assert not any("secret colour is" in text for text in shown)


def test_overflowing_episode_flags_its_environment(sandbox):
    from spade_tasks.rollout import overflowing

    results = rollout(ScriptedBackend(constant("x")), sandbox,
                      [record("GreedyEnv"), record("SlowEnv")], CFG, seed=2)
    assert {r.env_id: r.ret for r in results} == {"greedyenv": 1.0, "slowenv": 1.0}
    flagged = overflowing(results)
    assert list(flagged) == ["greedyenv"]
    assert flagged["greedyenv"].startswith("reward_overflow: ")


class _StageRt:
    """What ``rollout_stage`` reads of a runtime (config, store, sandbox, backend, seed)."""

    def __init__(self, store, sandbox, backend):
        from spade_tasks.config import Config

        self.cfg = Config().model_copy(update={"rollout": CFG.model_copy(
            update={"episodes_per_env": 2, "pool_sample": 0})})
        self.store, self.sandbox, self._backend, self.run = store, sandbox, backend, "r"

    def backend(self):
        return self._backend

    def seed(self, generation, salt=0):
        return 100 + generation + salt


def test_stage_replaces_a_leaking_hint_and_drops_an_overflowing_environment(sandbox, tmp_path):
    from spade_tasks import memory
    from spade_tasks.environments import load_record, save_record
    from spade_tasks.records import Verdicts
    from spade_tasks.rollout import rollout_stage

    leaky, greedy = record("LeakyHintEnv"), record("GreedyEnv")
    with Store(tmp_path / "s.duckdb") as store:
        for rec in (leaky, greedy):
            save_record(store, rec)
            store.upsert("memory", memory._new_row("r", rec.env_id, 0))
        backend = ScriptedBackend(constant("Try the colours in turn."))
        verdicts = Verdicts(accepted_env_ids=[leaky.env_id, greedy.env_id])
        out = rollout_stage(_StageRt(store, sandbox, backend), 0, verdicts)
        hints = {r["episode_id"]: r["hint"] for r in store.rows(
            "SELECT episode_id, hint FROM episodes WHERE with_hint")}
        assert hints["leakyhintenv-h-0"] == hints["leakyhintenv-h-1"] == "Try the colours in turn."
        assert out.hints_env_refused == 1 and out.environments_overflow == ("greedyenv",)
        assert sorted(out.episode_ids) == sorted(  # the record names every episode recorded
            r["episode_id"] for r in store.rows("SELECT episode_id FROM episodes"))
        assert out.to_summary()["environments_overflow"] == ["greedyenv"]
        assert load_record(store, greedy.env_id).flag.startswith("reward_overflow: ")
        assert [e.env_id for e in memory.entries(store, "r")] == [leaky.env_id]


def _even_seed_wins(conv):
    """Says "win" when the episode's seed is even: QuickEnv's groups hold wins and losses."""
    seed = re.search(r"seed (\d+)", conv[1]["content"])
    return "win" if seed and int(seed.group(1)) % 2 == 0 else "lose"


@pytest.mark.parametrize("flat_rounds", [0, 2])
def test_flat_generation_plays_more_pool_games_until_a_group_has_spread(sandbox, tmp_path,
                                                                      flat_rounds):
    from spade_tasks import memory
    from spade_tasks.environments import save_record
    from spade_tasks.records import Verdicts
    from spade_tasks.rollout import agent_has_gradient, rollout_stage
    from tests.test_memory import _episodes

    new, flat, spread = record("SlowEnv"), record("TruncEnv"), record("QuickEnv")
    with Store(tmp_path / "s.duckdb") as store:
        for rec in (new, flat, spread):
            save_record(store, rec)
            store.upsert("memory", memory._new_row("r", rec.env_id, 0))
        # QuickEnv was lost often before, so the spread priority draws TruncEnv first
        _episodes(store, "quickenv", 0, [0.0] * 24)
        rt = _StageRt(store, sandbox, ScriptedBackend(_even_seed_wins))
        rt.cfg = rt.cfg.model_copy(update={"rollout": rt.cfg.rollout.model_copy(update={
            "episodes_per_env": 4, "pool_sample": 1, "pool_priority": "spread",
            "flat_rounds": flat_rounds})})
        out = rollout_stage(rt, 1, Verdicts(accepted_env_ids=[new.env_id]))
        returns = {}
        for r in store.rows('SELECT env_id, "return" AS ret FROM episodes'
                            " WHERE generation = 1 AND NOT with_hint"):
            returns.setdefault(r["env_id"], set()).add(r["ret"])
        # SlowEnv and TruncEnv return the same in every episode: no gradient from them
        assert returns["slowenv"] == {1.0} and returns["truncenv"] == {0.0}
        if flat_rounds == 0:
            assert out.flat_rounds == 0 and out.environments == ("slowenv", "truncenv")
            assert "quickenv" not in returns
        else:
            # one more round: QuickEnv, whose episodes differ; then it stops
            assert out.flat_rounds == 1 and out.environments_pool == 2
            assert out.environments == ("slowenv", "truncenv", "quickenv")
            assert returns["quickenv"] == {0.0, 1.0}
        assert out.episodes == 2 * 4 * len(out.environments) == store.count("episodes",
                                                                            generation=1)
        # the agent has a gradient this generation exactly when the extra round ran
        assert any(len(v) > 1 for v in returns.values()) == (flat_rounds > 0)
        assert not agent_has_gradient([])

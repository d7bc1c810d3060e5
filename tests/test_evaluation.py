"""Evaluation suites: each scores a known-correct answer from its own data as correct and
a wrong one as wrong (no model); registry errors; one slow end-to-end run per suite."""

from __future__ import annotations

import pytest

from spade_tasks.errors import DuplicateName, UserError
from spade_tasks.evaluation import (
    Suite,
    UnknownSuite,
    compare,
    get_suite,
    plot_compare,
    record,
    register_suite,
    suite_names,
)
from spade_tasks.evaluation.runner import EvalResult, evaluate
from spade_tasks.llm.base import Backend, Completion

SUITES = ["bfcl-multi-turn", "humaneval", "reasoning-gym", "textarena", "word-games"]


def _hanoi(n, src="A", dst="C", via="B"):
    if n == 0:
        return []
    return _hanoi(n - 1, src, via, dst) + [f"[{src} {dst}]"] + _hanoi(n - 1, via, dst, src)


def _correct(suite: Suite, item):
    """A known-correct response for ``item``, built from the suite's own reference data."""
    if suite.name == "bfcl-multi-turn":
        return [["[" + ", ".join(turn) + "]"] for turn in item.data["ground_truth"]]
    if suite.name == "humaneval":
        return item.data["canonical_solution"]
    if suite.name == "reasoning-gym":
        return f"<answer>{item.data['entry']['answer']}</answer>"
    if suite.name == "word-games":  # the model continues the answer opened with \boxed{
        return item.data["answer"].removeprefix("\\boxed{")
    if suite.name == "textarena":
        game = item.data["game"]
        base = suite.start(item)
        while hasattr(base, "env"):
            base = base.env
        if game.startswith("GuessTheNumber"):
            return [f"[{base.state.game_state['game_number']}]"]
        if game.startswith("TowerOfHanoi"):
            return _hanoi(base.num_disks)
        if game.startswith("Mastermind"):
            return ["[" + " ".join(map(str, base.state.game_state["secret_code"])) + "]"]
    raise AssertionError(f"no known answer for {item.id}")


def _wrong(suite: Suite, item):
    if suite.multi_turn and suite.name == "bfcl-multi-turn":
        return [["I cannot help with that."] for _ in item.data["ground_truth"]]
    if suite.name == "textarena":
        return ["I give up."] * 3
    if suite.name == "humaneval":
        return "```python\ndef " + item.data["entry_point"] + "(*args, **kwargs):\n    return None\n```"
    if suite.name == "word-games":
        return "definitely not the answer 12345}"
    return "<answer>definitely not the answer 12345</answer>"


@pytest.mark.parametrize("name", SUITES)
def test_known_answers_score_right_and_wrong(name, sandbox):
    suite = get_suite(name)
    items = suite.load(6 if name == "textarena" else 3, seed=0)
    if name == "textarena":  # the games whose solution can be read from their state
        items = [it for it in items if it.data["game"].split("-")[0] in
                 ("GuessTheNumber", "TowerOfHanoi", "Mastermind")]
    assert items
    right = suite.score_all(items, [_correct(suite, it) for it in items], sandbox=sandbox.cfg)
    wrong = suite.score_all(items, [_wrong(suite, it) for it in items], sandbox=sandbox.cfg)
    assert right == [1.0] * len(items), dict(zip([it.id for it in items], right))
    assert all(s < 1.0 for s in wrong), dict(zip([it.id for it in items], wrong))


@pytest.mark.parametrize("name", SUITES)
def test_load_is_seeded(name):
    suite = get_suite(name)
    a, b = suite.load(4, seed=1), suite.load(4, seed=1)
    assert [it.id for it in a] == [it.id for it in b] and len(a) == 4
    assert [it.prompt for it in a] == [it.prompt for it in b]


def test_humaneval_candidate_cannot_escape_into_harness(sandbox, tmp_path):
    suite = get_suite("humaneval")
    item = suite.load(1, seed=0)[0]
    marker = tmp_path / "pwned"
    evil = f"```python\nopen({str(marker)!r}, 'w').write('x')\n```"
    assert suite.score(item, evil, sandbox=sandbox) == 0.0
    assert not marker.exists()


def test_bfcl_never_evaluates_non_literal_calls():
    from spade_tasks.evaluation.bfcl import DecodeError, decode_calls

    assert decode_calls("[cd(folder='x'), ls(a=True)]") == [
        ("cd", "cd(folder='x')"), ("ls", "ls(a=True)")]
    for text in ["[__import__('os').system('true')]", "[cd(folder=open('x'))]", "[cd(**k)]"]:
        with pytest.raises(DecodeError):
            decode_calls(text)
    item = get_suite("bfcl-multi-turn").load(1, seed=0)[0]
    response = [["[exec(\"raise SystemExit\")]"] for _ in item.data["ground_truth"]]
    assert get_suite("bfcl-multi-turn").score(item, response) == 0.0


class ScriptedBackend(Backend):
    """Answers each conversation with ``reply(conversation)``; no model."""

    def __init__(self, reply):
        self.reply, self.calls = reply, 0

    @property
    def tokenizer(self):
        return None

    def generate(self, conversations, params, tools=None):
        self.calls += 1
        return [Completion(self.reply(c), [], [], [], "stop") for c in conversations]

    def load_weights(self, checkpoint_dir):
        raise NotImplementedError


def test_bfcl_play_batches_turns_and_scores_a_scripted_expert():
    suite = get_suite("bfcl-multi-turn")
    items = suite.load(2, seed=3)
    by_prompt = {it.data["entry"]["question"][0][0]["content"]: it for it in items}

    def expert(conv):
        if conv[-1]["role"] == "tool":
            return ""  # the turn's calls are done: no more calls ends the turn
        item = by_prompt[conv[1]["content"]]
        turn = sum(m["role"] == "user" for m in conv) - 1
        return "[" + ", ".join(item.data["ground_truth"][turn]) + "]"

    backend = ScriptedBackend(expert)
    result = evaluate("bfcl-multi-turn", backend, 2, seed=3)
    assert result.score == 1.0 and result.n == 2
    most_turns = max(len(it.data["ground_truth"]) for it in items)
    assert backend.calls == 2 * most_turns  # one generate call per step for all items
    cut = evaluate("bfcl-multi-turn", ScriptedBackend(expert), 2, seed=3, max_turns=2)
    assert cut.score == 0.0  # an episode cut before its last user turn fails


def test_textarena_play_ends_games_and_replays_the_same_outcome():
    suite = get_suite("textarena")
    item = suite.load(1, seed=5)[0]
    assert item.data["game"].startswith("GuessTheNumber")
    answer = _correct(suite, item)[0]
    backend = ScriptedBackend(lambda conv: f"My guess: {answer}")
    result = evaluate("textarena", backend, 1, seed=5, max_turns=5)
    assert result.score == 1.0 and backend.calls == 1
    assert result.responses[item.id] == [f"My guess: {answer}"]


def test_unknown_suite_is_a_one_line_user_error():
    with pytest.raises(UnknownSuite) as e:
        get_suite("no-such-suite")
    assert isinstance(e.value, UserError)
    msg = str(e.value)
    assert "\n" not in msg and "no-such-suite" in msg
    assert all(n in msg for n in suite_names())


def test_duplicate_suite_name_raises():
    with pytest.raises(DuplicateName, match="already registered"):
        register_suite(get_suite("humaneval"))


def test_record_and_compare(tmp_path):
    from spade_tasks.store import Store

    with Store(tmp_path / "spade.duckdb") as store:
        for run, scores in (("a", [0.0, 1.0]), ("b", [1.0, 1.0])):
            res = EvalResult("humaneval", 2, sum(scores) / 2,
                             {"HumanEval/0": scores[0], "HumanEval/1": scores[1]},
                             {"HumanEval/0": "x", "HumanEval/1": ["y"]}, run=run)
            record(store, res, "ckpt")
            record(store, res, "ckpt")  # idempotent
        assert store.count("evaluations") == 4
        rows = compare(store, "a", "b")
        assert rows == [{"suite": "humaneval", "n": 2, "score_a": 0.5, "score_b": 1.0,
                         "delta": 0.5, "improved": 1, "regressed": 0}]
        png = plot_compare(rows, "a", "b", tmp_path / "cmp.png")
        assert png.read_bytes()[:4] == b"\x89PNG"
        with pytest.raises(UserError, match="no evaluation run 'zzz'"):
            compare(store, "a", "zzz")


@pytest.mark.slow
def test_every_suite_end_to_end_on_the_embedded_model(tmp_path, sandbox):
    from spade_tasks.config import Config
    from spade_tasks.evaluation import run_eval
    from spade_tasks.llm.base import make_backend
    from spade_tasks.store import Store

    cfg = Config.model_validate({
        "run": {"name": "evaltest", "root": str(tmp_path)},
        "model": {"max_new_tokens": 64},
        "sandbox": sandbox.cfg.model_dump(),
        "tracking": {"mlflow_uri": f"sqlite:///{tmp_path}/mlflow.db"},
    })
    results = {}
    with make_backend(cfg.model) as backend, Store(tmp_path / "spade.duckdb") as store:
        for name in SUITES:
            # Short episodes keep the multi-turn suites to a few generate calls.
            results[name] = run_eval(cfg, name, limit=2, backend=backend, store=store, max_turns=2)
        for name, res in results.items():
            assert res.n == 2 and 0.0 <= res.score <= 1.0, name
            assert store.count("evaluations", run=res.run, suite=name) == 2
        rows = compare(store, results["humaneval"].run, results["humaneval"].run)
        assert rows[0]["delta"] == 0.0

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cfg.tracking.mlflow_uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    runs = client.search_runs([exp.experiment_id])
    assert {r.data.tags["spade.suite"] for r in runs} == set(SUITES)


def test_reasoning_gym_suite_is_held_out_from_the_fixed_pool():
    """No dataset of the suite shares a generator (reasoning-gym's dataset class) with a
    program of the default fixed pool."""
    import ast

    from reasoning_gym.factory import DATASETS as REGISTRY

    from spade_tasks.config import DesignerConfig
    from spade_tasks.evaluation.rgym import DATASETS

    pool = set()
    for folder in DesignerConfig().fixed_pool:
        for path in folder.glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and getattr(node.targets[0], "id", None) == "dataset"):
                    pool.add(ast.literal_eval(node.value))
    assert len(pool) >= 8, pool  # the 8 wrapped generators
    suite = {name for group in DATASETS.values() for name in group}
    assert len(suite) == 12
    generator = {name: REGISTRY[name][0] for name in pool | suite}
    shared = {n for n in suite if generator[n] in {generator[p] for p in pool}}
    assert not shared and not suite & pool


def test_word_games_are_held_out_from_every_committed_program():
    """No game of the word-games suite is a committed program (seed, small seed or
    wrapped generator) under the designer's own duplicate rule, the same-game rule
    included: the agent trains on those and never on these."""
    from spade_tasks.config import MemoryConfig
    from spade_tasks.designer import committed_programs, duplicate_reason, text_record
    from spade_tasks.evaluation.wordgames import GAMES_DIR

    known = committed_programs()
    assert len(known) >= 24 + 8
    paths = sorted(GAMES_DIR.glob("*.py"))
    assert len(paths) == 8
    for path in paths:
        rec = text_record(path, origin="heldout")
        assert duplicate_reason(rec, known, MemoryConfig().dedup_threshold) is None, path.name


def test_word_games_ask_as_the_rollout_asks():
    """The agent's system prompt, the game's first question, the answer opened with
    ``\\boxed{``; the score is the game's own step reward (a right answer in other case
    and spacing still counts, no box scores 0)."""
    suite = get_suite("word-games")
    items = suite.load(None, seed=0)
    assert len(items) == 128 and len({it.data["game"] for it in items[:8]}) == 8
    conv = suite.conversation(items[0])
    assert [m["role"] for m in conv] == ["system", "user", "assistant"]
    assert conv[1]["content"] == items[0].prompt and conv[2]["content"] == "\\boxed{"
    answer = items[0].data["answer"].removeprefix("\\boxed{").removesuffix("}")
    assert suite.score(items[0], f" {answer.upper()} }} because") == 1.0
    assert suite.score(items[0], "") == 0.0
    assert suite.load(8, seed=3)[0].id.endswith("/3")

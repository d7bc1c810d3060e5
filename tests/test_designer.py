"""The designer: prompt, parse, validate, record (scripted backend) and one real-model run."""

import json
import re

import pytest

from spade_tasks.config import Config, CorpusConfig, DesignerConfig, MemoryConfig, ModelConfig
from spade_tasks.corpus import Document
from spade_tasks.design_command import run_design
from spade_tasks.designer import (NO_CODE, Design, build_prompt, design, extract_program,
                                  failure_of, record_designs, refusal_of, revise, to_revise,
                                  validate_program, variant_parents, with_reports)
from spade_tasks.environments import env_id_of
from spade_tasks.llm.base import Completion
from spade_tasks.memory import PromptExamples
from spade_tasks.store import Store
from tests.test_hints import LEAKY
from tests.test_memory import SEEDS, put_seeds

GOOD = LEAKY.replace("    def hint(self):\n        return f\"The sum is {self.a + self.b}.\"\n\n", "")
BAD_IMPORT = "import os\n\n" + GOOD.replace("AddPairEnv", "OsPairEnv")
CFG = Config(designer=DesignerConfig(max_new_tokens=64), memory=MemoryConfig(enabled=False))


class ScriptedBackend:
    """Returns canned completions, one per conversation, recording every call."""

    def __init__(self, texts):
        self.texts = texts
        self.calls = []

    def generate(self, conversations, params, tools=None):
        self.calls.append((conversations, params))
        return [Completion(self.texts[i % len(self.texts)], [1, 2, 3], [4, 5], [-0.1, -0.2],
                           "stop") for i in range(len(conversations))]

    def close(self):
        pass


def fenced(code, lang="python"):
    return f"Plan: a sum task.\n```{lang}\n{code}```\nDone."


DOCS = [Document(f"news:{i}", "embedded:news", f"Text about harbour number {i}.") for i in range(3)]
COMPLETIONS = [fenced(GOOD), "I would write a maze game but no code here.", fenced(BAD_IMPORT)]


def test_extract_program():
    assert extract_program("no code") is None
    assert extract_program("```\nprint(1)\n```") is None  # bare fence without an env class
    two = fenced("class AEnv:\n    def reset(self): pass\n") + fenced(GOOD)
    assert extract_program(two) == GOOD
    broken_last = fenced(GOOD) + fenced("class BEnv:\n    def reset(self:\n")
    assert extract_program(broken_last) == GOOD
    cut = "Here:\n```python\n" + GOOD  # truncated at the token limit: no closing fence
    assert extract_program(cut) == GOOD
    assert extract_program(fenced(GOOD, lang="")) == GOOD


def test_prompt_contents():
    put = PromptExamples([], [], ["Tower of Hanoi", "Number guessing"])
    msgs = build_prompt(DOCS[0], put, "games")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "def oracle" in msgs[0]["content"] and "harbour number 0" in msgs[1]["content"]
    assert "- Tower of Hanoi" in msgs[1]["content"]
    assert "any theme" in build_prompt(None, PromptExamples([], [], []), "games")[1]["content"]
    tool = build_prompt(None, PromptExamples([], [], []), "tool_use")
    assert "ToolEnv" in tool[0]["content"] and "def solution" in tool[0]["content"]
    assert "self.user_messages" in tool[0]["content"] and "self.message_criteria" in tool[0]["content"]


def test_prompt_shows_memory_examples(tmp_path):
    from spade_tasks import memory

    with Store(tmp_path / "s.duckdb") as store:
        put_seeds(store, ["number_guess", "water_jugs", "code_breaker"])
        ids = [e.env_id for e in memory.entries(store, "r")]
        memory.update_stats(store, "r", 1, {ids[0]: memory.EnvStats(4, 0.1, 1.0, 1.0)})
        ex = memory.prompt_examples(store, "r", 1, MemoryConfig(), seed=0)
    user = build_prompt(DOCS[0], ex, "games")[1]["content"]
    assert "```python\n" in user and "not yet played" in user
    assert "too easy: no-hint win rate 1.00" in user


def test_variant_parents_spread_over_the_memory_before_repeating(tmp_path):
    from spade_tasks import memory

    with Store(tmp_path / "s.duckdb") as store:
        put_seeds(store, ["number_guess", "water_jugs", "code_breaker"])
        pool = memory.entries(store, "r")
    assert variant_parents(pool, 4, 0.0, seed=1) == [None] * 4
    assert variant_parents([], 4, 1.0, seed=1) == [None] * 4
    half = variant_parents(pool, 4, 0.5, seed=1)
    assert half[:2] == [None, None] and len({e.env_id for e in half[2:]}) == 2
    every = variant_parents(pool, 5, 1.0, seed=1)
    assert {e.env_id for e in every[:3]} == {e.env_id for e in pool}  # all before a repeat
    assert [e.env_id for e in every] == [e.env_id for e in variant_parents(pool, 5, 1.0, 1)]


def test_a_variant_prompt_shows_its_parent_instead_of_the_examples(tmp_path):
    from spade_tasks import memory

    with Store(tmp_path / "s.duckdb") as store:
        put_seeds(store, ["number_guess", "water_jugs"])
        pool = memory.entries(store, "r")
        ex = memory.prompt_examples(store, "r", 1, MemoryConfig(), seed=0)
    parent = pool[0]
    user = build_prompt(DOCS[0], ex, "games", parent=parent.record.source)[1]["content"]
    shown = re.sub(r"\n{3,}", "\n\n", parent.record.source.strip())  # as the prompt tidies it
    assert shown in user and "Grow a different game" in user
    assert "Go beyond them" not in user and "harbour number 0" in user
    backend = ScriptedBackend(COMPLETIONS)
    designs = design(backend, DOCS[:2], ex, CFG, seed=3, parents=[None, parent])
    plain, variant = (d.prompt[1]["content"] for d in designs)
    assert "Go beyond them" in plain and "Grow a different game" not in plain
    assert "Grow a different game" in variant and len(backend.calls) == 1
    with Store(tmp_path / "s.duckdb") as store:  # the lineage is recorded with the design
        record_designs(store, "r", 0, designs, root=tmp_path / "envs")
        from spade_tasks.designer import load_designs

        assert [d.parent_env_id for d in load_designs(store, "r", 0)] == [None, parent.env_id]


def test_design_is_one_batched_call_and_parses():
    backend = ScriptedBackend(COMPLETIONS)
    designs = design(backend, DOCS, PromptExamples([], [], []), CFG, seed=11)
    assert len(backend.calls) == 1 and len(backend.calls[0][0]) == 3
    params = backend.calls[0][1]
    assert params.max_new_tokens == 64 and params.seed == 11
    assert [d.doc_id for d in designs] == ["news:0", "news:1", "news:2"]
    assert designs[0].source == GOOD and designs[1].source is None
    assert designs[1].reasons == [NO_CODE] and not designs[1].accepted


def _validated(designs, sandbox, gen):
    """The flow's validation: ``validate_program`` per design, then the reports applied
    as ``apply_reports`` applies them before recording."""
    reports = [validate_program(d.source, sandbox.cfg, CFG.validation) for d in designs]
    return with_reports(designs, reports, "r", gen)


def _pipeline(store, sandbox, root, gen=0):
    designs = design(ScriptedBackend(COMPLETIONS), DOCS, PromptExamples([], [], []), CFG, seed=0)
    return record_designs(store, "r", gen, _validated(designs, sandbox, gen), root)


def test_validate_and_record(tmp_path, sandbox):
    root = tmp_path / "envs"
    with Store(tmp_path / "s.duckdb") as store:
        designs = _pipeline(store, sandbox, root)
        good, none, bad = designs
        assert good.accepted and good.env_id == env_id_of(GOOD)
        assert not bad.accepted and bad.reasons[0].startswith("imports: not allowed: os")
        path = root / "runs" / "r" / f"{good.env_id}.py"
        assert path.read_text() == GOOD
        env = store.rows("SELECT * FROM environments")[0]
        assert (env["origin"], env["run"], env["generation"], env["doc_id"], env["path"]) == (
            "designed", "r", 0, "news:0", str(path))
        rows = store.rows("SELECT * FROM designs ORDER BY design_idx")
        assert [r["accepted"] for r in rows] == [True, False, False]
        assert rows[1]["reasons"] == [NO_CODE] and rows[1]["env_id"] is None
        assert rows[0]["token_ids"] == [4, 5] and rows[0]["prompt_token_ids"] == [1, 2, 3]
        assert rows[0]["logprobs"] == [-0.1, -0.2] and rows[0]["reward"] is None
        assert json.loads(rows[0]["prompt"])[1]["role"] == "user"
        assert rows[2]["completion"] == COMPLETIONS[2]
        vals = store.rows("SELECT * FROM validations ORDER BY design_idx")
        assert [v["accepted"] for v in vals] == [True, False, False]
        assert vals[0]["tier"] == sandbox.tier and vals[1]["tier"] is None

        _pipeline(store, sandbox, root)  # a retried flow run
        for table in ("designs", "validations"):
            assert store.count(table, run="r", generation=0) == 3
        assert store.count("environments") == 1
        assert len(list((root / "runs" / "r").iterdir())) == 1


def test_run_design_without_corpus(tmp_path, sandbox, monkeypatch):
    monkeypatch.chdir(tmp_path)  # accepted programs go under ./environments_store
    cfg = CFG.model_copy(update={"corpus": CorpusConfig(source="none")})
    summary = run_design(cfg, 2, tmp_path / "s.duckdb", backend=ScriptedBackend(COMPLETIONS[:2]),
                         sandbox=sandbox)
    assert (summary.generation, summary.designs, summary.accepted) == (0, 2, 1)
    assert summary.reasons == {"parse": 1}
    with Store(tmp_path / "s.duckdb") as store:
        assert [r["doc_id"] for r in store.rows("SELECT doc_id FROM designs")] == [None, None]
        assert store.count("documents") == 0


def test_run_design_before_any_checkpoint_designs_on_the_warm_start(tmp_path, sandbox,
                                                                     monkeypatch):
    """A run with no weights of its own designs on the first warm start's, as the flow's
    first generation does after its warmstart stage; with the warm start off, on the base
    model."""
    from spade_tasks import design_command, runtime
    from spade_tasks.config import WarmstartConfig

    monkeypatch.chdir(tmp_path)
    built, backend = [], ScriptedBackend(COMPLETIONS[:1])

    def make_backend(model_cfg):
        built.append(model_cfg.name)
        return backend

    monkeypatch.setattr(runtime, "make_backend", make_backend)  # Runtime.backend()'s
    monkeypatch.setattr(design_command, "first_weights",
                        lambda cfg, log=print: "/ckpt/warm" if cfg.warmstart.enabled else None)
    cfg = CFG.model_copy(update={"corpus": CorpusConfig(source="none"),
                                 "warmstart": WarmstartConfig(enabled=True)})
    run_design(cfg, 1, tmp_path / "on.duckdb", sandbox=sandbox)
    assert built == ["/ckpt/warm"] and len(backend.calls) == 1
    off = cfg.model_copy(update={"warmstart": WarmstartConfig(enabled=False)})
    run_design(off, 1, tmp_path / "off.duckdb", sandbox=sandbox)
    assert built == ["/ckpt/warm", off.model.name] and len(backend.calls) == 2


def test_run_design_next_generation_samples_new_documents(tmp_path, sandbox, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = CFG.model_copy(update={"corpus": CorpusConfig(source="embedded:news", max_words=30)})
    backend = ScriptedBackend(COMPLETIONS[1:2])
    a = run_design(cfg, 2, tmp_path / "s.duckdb", backend=backend, sandbox=sandbox)
    b = run_design(cfg, 2, tmp_path / "s.duckdb", backend=backend, sandbox=sandbox)
    assert (a.generation, b.generation, a.accepted, b.accepted) == (0, 1, 0, 0)
    with Store(tmp_path / "s.duckdb") as store:
        ids = [r["doc_id"] for r in store.rows("SELECT doc_id FROM designs")]
        assert len(set(ids)) == 4 and all(i.startswith("news:") for i in ids)
    prompt = backend.calls[0][0][0][1]["content"]
    assert "<text>" in prompt


RECORDED = {  # every column but the seconds a validation took
    "documents": "SELECT * FROM documents ORDER BY generation, doc_idx",
    "designs": "SELECT * FROM designs ORDER BY generation, design_idx",
    "validations": "SELECT * EXCLUDE (seconds) FROM validations ORDER BY generation, design_idx",
    "environments": "SELECT * FROM environments ORDER BY env_id",
    "memory": "SELECT * FROM memory ORDER BY env_id",
}


def test_spade_design_records_what_a_flow_generation_records(tmp_path):
    """One config and seed, the same scripted completions (an accepted program, no code,
    a refused import, a second copy of the first): ``spade design`` and the flow's design
    stages (Prefect tasks) record the same rows; only the flow marks its stages."""
    from prefect import flow
    from prefect.testing.utilities import prefect_test_harness

    from flows import generation as fg
    from spade_tasks.config import RunConfig, SandboxConfig
    from spade_tasks.runtime import close_all, open_runtime

    texts = COMPLETIONS + COMPLETIONS[:1]

    def cfg_at(root):
        return CFG.model_copy(update={
            "run": RunConfig(name="r", root=root, seed=5), "memory": MemoryConfig(),
            "corpus": CorpusConfig(source="embedded:news", max_words=30),
            "designer": CFG.designer.model_copy(update={"designs_per_generation": len(texts)}),
            "sandbox": SandboxConfig(call_timeout_s=3.0, load_timeout_s=10.0, cpu_seconds=10)})

    summary = run_design(cfg_at(tmp_path / "cli"), backend=ScriptedBackend(texts))
    assert (summary.generation, summary.designs, summary.accepted) == (0, 4, 1)
    assert summary.reasons == {"parse": 1, "imports": 1, "duplicate": 1}

    cfg = cfg_at(tmp_path / "flow")
    open_runtime(cfg)._backend = ScriptedBackend(texts)  # what backend() would have loaded

    @flow
    def design_generation():
        documents = fg.sample_documents(cfg, 0)
        return fg.validate_environments(cfg, 0, fg.design_environments(cfg, 0, documents))

    try:
        with prefect_test_harness():
            verdicts = design_generation()
    finally:
        close_all()
    assert list(verdicts.accepted_env_ids) == summary.env_ids and verdicts.rejected == 3

    tables = {}
    for side in ("cli", "flow"):
        with Store(tmp_path / side / "r" / "spade.duckdb") as store:
            tables[side] = {t: store.rows(sql) for t, sql in RECORDED.items()}
            tables[side]["stages"] = [r["stage"] for r in store.rows(
                "SELECT stage FROM stages ORDER BY stage")]
    assert tables["flow"].pop("stages") == ["design_environments", "sample_documents",
                                            "validate_environments"]
    assert tables["cli"].pop("stages") == []
    assert tables["cli"] == tables["flow"]
    assert len(tables["cli"]["documents"]) == 4 and len(tables["cli"]["memory"]) > 1


@pytest.mark.slow
def test_real_model_designs_are_recorded(tmp_path, monkeypatch):
    """The embedded model writes 2 designs end to end; rows exist accepted or not."""
    monkeypatch.chdir(tmp_path)
    cfg = Config(model=ModelConfig(max_new_tokens=64),
                 designer=DesignerConfig(max_new_tokens=64),
                 corpus=CorpusConfig(source="embedded:news", max_words=60),
                 memory=MemoryConfig(enabled=False))
    summary = run_design(cfg, 2, tmp_path / "s.duckdb")
    assert summary.designs == 2
    with Store(tmp_path / "s.duckdb") as store:
        rows = store.rows("SELECT * FROM designs ORDER BY design_idx")
        assert len(rows) == 2 and store.count("validations") == 2
        for r in rows:
            assert r["token_ids"] and len(r["token_ids"]) == len(r["logprobs"]) <= 64
            assert r["prompt_token_ids"] and r["doc_id"].startswith("news:")
            assert r["accepted"] or r["reasons"]


def test_designer_sampling_overrides_the_model_config():
    backend = ScriptedBackend(COMPLETIONS[:1])
    cfg = CFG.model_copy(update={"model": ModelConfig(temperature=1.0, top_p=0.95, min_p=0.05),
                                 "designer": DesignerConfig(max_new_tokens=64, top_p=0.8,
                                                            min_p=0.1)})
    design(backend, DOCS[:1], PromptExamples([], [], []), cfg, seed=0)
    params = backend.calls[0][1]
    assert (params.temperature, params.top_p, params.min_p, params.max_new_tokens) == (
        1.0, 0.8, 0.1, 64)


def test_prefill_is_parsed_with_the_completion_but_never_generated():
    from spade_tasks.llm.scripted import ScriptedBackend as ByteBackend

    prefill = "```python\nimport random\n"
    rest = GOOD.replace("import random\n", "", 1) + "```"
    backend = ByteBackend([rest])
    cfg = CFG.model_copy(update={"designer": DesignerConfig(max_new_tokens=4096,
                                                            prefill=prefill, temperature=0.3)})
    (d,) = design(backend, DOCS[:1], PromptExamples([], [], []), cfg, seed=0)
    conv, params = backend.calls[0][0][0], backend.calls[0][1]
    assert conv[-1] == {"role": "assistant", "content": prefill} and params.temperature == 0.3
    assert params.top_p == CFG.model.top_p == 1.0  # designer.top_p None: the model's
    # The program is the prefill and the generated text together ...
    assert d.source is not None and d.source.startswith("import random\n")
    assert d.completion.full_text == prefill + rest
    # ... while the prompt ends with the prefill and only the generated text is sampled.
    tok = backend.tokenizer
    assert tok.decode(d.completion.prompt_token_ids).endswith("<assistant>" + prefill)
    assert tok.decode(d.completion.token_ids) == rest


def test_prefill_text_is_recorded_as_the_completion(tmp_path):
    from spade_tasks.llm.scripted import ScriptedBackend as ByteBackend

    prefill = "```python\nimport random\n"
    backend = ByteBackend([GOOD.replace("import random\n", "", 1) + "```"])
    cfg = CFG.model_copy(update={"designer": DesignerConfig(max_new_tokens=4096,
                                                            prefill=prefill)})
    designs = design(backend, DOCS[:1], PromptExamples([], [], []), cfg, seed=0)
    with Store(tmp_path / "s.duckdb") as store:
        record_designs(store, "r", 0, designs, root=tmp_path / "envs")
        from spade_tasks.designer import load_designs

        (again,) = load_designs(store, "r", 0)
    assert again.source == designs[0].source


# -- the duplicate rule: refused at validation time, before any reward ------------------


def _designs(sources):
    return [Design(i, None, "games", [], Completion(s, [1], [2], [-0.1], "stop"), s)
            for i, s in enumerate(sources)]


def _validate_and_record(store, sandbox, root, sources, gen, threshold=0.9):
    designs = _validated(_designs(sources), sandbox, gen)
    assert all(d.accepted for d in designs), [d.reasons for d in designs]
    return record_designs(store, "r", gen, designs, root, dedup_threshold=threshold)


SEED_SOURCE = (SEEDS / "number_guess.py").read_text()
DUPLICATES = {
    # the same text as a seed (its env_id): refused, and the seed's row keeps its origin
    "same_program": (SEED_SOURCE, 0.9, "the same program as"),
    # near the same text, other behaviour (one message changed)
    "text": (GOOD.replace('"Correct."', '"Right."'), 0.9, "text similarity"),
    # the question reworded (no shingle limit at 1.0): the same game told in other words
    "reworded": (GOOD.replace("What is {self.a} + {self.b}?", "Add {self.a} and {self.b}."),
                 1.0, "the same game as"),
    # other text and code (no shingle limit can catch it at 1.0), the same episodes
    "behaviour": (GOOD.replace("AddPairEnv", "SumTwoEnv").replace(
        "Add two numbers.", "Sum a pair of integers.").replace(
        "str(self.a + self.b)", 'f"{self.a + self.b}"'), 1.0, "plays the same episodes"),
    # the same code told differently (class name, docstring): the same game
    "retold": (GOOD.replace("AddPairEnv", "SumTwoEnv").replace(
        "Add two numbers.", "Sum a pair of integers."), 1.0, "the same game as"),
}


@pytest.mark.parametrize("kind", sorted(DUPLICATES))
def test_duplicate_is_rejected_before_any_reward(tmp_path, sandbox, kind):
    source, threshold, detail = DUPLICATES[kind]
    with Store(tmp_path / "s.duckdb") as store:
        put_seeds(store, ["number_guess"])
        _validate_and_record(store, sandbox, tmp_path, [GOOD], gen=0, threshold=threshold)
        (dup,) = _validate_and_record(store, sandbox, tmp_path, [source], gen=1,
                                      threshold=threshold)
        assert not dup.accepted and dup.record is None
        assert dup.reasons[0].startswith("duplicate: ") and detail in dup.reasons[0], dup.reasons
        row = store.rows("SELECT accepted, env_id, reasons FROM designs WHERE generation = 1")[0]
        assert row["accepted"] is False and row["env_id"] is None
        origins = {r["env_id"]: r["origin"] for r in store.rows(
            "SELECT env_id, origin FROM environments")}
        assert origins[env_id_of(SEED_SOURCE)] == "seed" and len(origins) == 2


def test_second_copy_in_one_batch_is_a_duplicate(tmp_path, sandbox):
    with Store(tmp_path / "s.duckdb") as store:
        first, second = _validate_and_record(store, sandbox, tmp_path, [GOOD, GOOD], gen=0)
        assert first.accepted and not second.accepted
        assert second.reasons[0].startswith("duplicate: the same program as")


def test_rerun_of_a_generation_is_not_its_own_duplicate(tmp_path, sandbox):
    with Store(tmp_path / "s.duckdb") as store:
        _validate_and_record(store, sandbox, tmp_path, [GOOD], gen=0)
        (again,) = _validate_and_record(store, sandbox, tmp_path, [GOOD], gen=0)
        assert again.accepted, again.reasons


def test_flow_path_carries_the_fingerprint_to_the_duplicate_rule(tmp_path, sandbox):
    """``validate_program`` (a task's plain dict) then ``apply_reports``, as the flow runs."""
    from spade_tasks.designer import apply_reports

    class Rt:
        cfg = CFG.model_copy(update={"memory": MemoryConfig(enabled=False, dedup_threshold=1.0)})
        run = "r"

    Rt.sandbox = sandbox
    source, _, detail = DUPLICATES["behaviour"]
    designs = _designs([GOOD, source])
    reports = [validate_program(d.source, sandbox.cfg, CFG.validation) for d in designs]
    assert all(r["accepted"] and r["fingerprint"] for r in reports)
    with Store(tmp_path / "s.duckdb") as store:
        Rt.store = store
        verdicts = apply_reports(Rt, 0, designs, reports)
        assert verdicts.accepted_env_ids == (env_id_of(GOOD),) and verdicts.rejected == 1
        row = store.rows("SELECT reasons FROM designs WHERE design_idx = 1")[0]
        assert row["reasons"][0].startswith("duplicate: ") and detail in row["reasons"][0]


def test_flow_path_refuses_a_committed_quiz_in_other_code(tmp_path, sandbox):
    """``apply_reports`` hands the run's sandbox to the duplicate rule, which runs the
    quizzes: `reverse_list.py`'s answer in other code under another question (learn-s23)
    is refused even in a run whose store holds no program."""
    from spade_tasks.designer import apply_reports
    from tests.test_seeds import REVERSE_RETOLD

    class Rt:
        cfg = CFG
        run = "r"

    Rt.sandbox = sandbox
    designs = _designs([REVERSE_RETOLD])
    reports = [validate_program(d.source, sandbox.cfg, CFG.validation) for d in designs]
    assert reports[0]["accepted"], reports[0]["reasons"]
    with Store(tmp_path / "s.duckdb") as store:
        Rt.store = store
        verdicts = apply_reports(Rt, 0, designs, reports)
        assert verdicts.accepted_env_ids == () and verdicts.rejected == 1
        (why,) = store.rows("SELECT reasons FROM designs")[0]["reasons"]
        assert why.startswith("duplicate: the same game as") and "gives the same answers" in why


# -- designer-only rules: the committed programs and the fixed pool's generators --------

RG_PROGRAM = (SEEDS.parent / "reasoning_gym" / "gcd.py").read_text()
POOL_USERS = {
    "base_class": RG_PROGRAM,
    "package": "import reasoning_gym\n\n" + GOOD,
    "attribute": GOOD.replace("class AddPairEnv:", "import spade_env\n\n\nclass AddPairEnv:")
                     .replace("self.done = False\n", "self.done = False\n"
                              "        self.base = spade_env.ReasoningGymEnv\n", 1),
}


@pytest.mark.parametrize("kind", sorted(POOL_USERS))
def test_design_using_the_fixed_pools_generators_is_refused(sandbox, kind):
    (d,) = _validated(_designs([POOL_USERS[kind]]), sandbox, 0)
    assert d.reasons[0].startswith("imports: ") and "fixed pool only" in d.reasons[0], d.reasons
    assert not d.accepted and d.record is None


def test_near_copy_of_a_committed_program_is_a_duplicate_with_an_empty_store(tmp_path, sandbox):
    """The seeds are what designers see and are warm-started on: a near-copy is refused
    even in a run whose store holds none of them."""
    near = (SEEDS / "water_jugs.py").read_text() + "\n# my own environment\n"
    assert env_id_of(near) != env_id_of((SEEDS / "water_jugs.py").read_text())
    with Store(tmp_path / "s.duckdb") as store:
        assert store.count("environments") == 0
        (d,) = _validated(_designs([near]), sandbox, 0)
        assert d.accepted, d.reasons
        (dup,) = record_designs(store, "r", 0, [d], tmp_path, dedup_threshold=0.9)
        assert not dup.accepted and dup.reasons[0].startswith("duplicate: the same game as")


# -- revisions (designer.revisions) ------------------------------------------------------
CRASH = GOOD.replace("got = extract_boxed(action", "got = extract_boxed(actoin")
"""GOOD with a misspelt name in step: every action raises NameError."""
MUL = (GOOD.replace("AddPairEnv", "MulPairEnv").replace("Add two numbers", "Multiply two numbers")
       .replace("{self.a} + {self.b}", "{self.a} * {self.b}")
       .replace("self.a + self.b", "self.a * self.b"))
"""Another game than GOOD: a fix that is not a copy."""


def test_failure_of_names_only_a_program_that_did_not_run():
    assert failure_of(["step_return: probe action 'empty': exception: NameError (line 14): "
                       "name 'question' is not defined"]) == \
        "NameError (line 14): name 'question' is not defined"
    assert failure_of(["parse: line 13: f-string: unmatched '('"]) == \
        "SyntaxError (line 13): f-string: unmatched '('"
    # No code at all (nothing to fix), a program refused for what it does, no reason.
    assert failure_of([NO_CODE]) is None
    assert failure_of(["answer_given: the answer is shown"]) is None
    assert failure_of([]) is None


def test_refusal_of_names_only_a_program_that_ran_and_was_refused():
    dup = "duplicate: the same game as 0feabd7a207e30eb (Count the vowels of three words.)"
    assert refusal_of([dup, "answer_given: x"]) == dup
    assert refusal_of(["parse: line 13: f-string: unmatched '('"]) is None  # did not run
    assert refusal_of(["step_return: probe action 'empty': exception: NameError (line 1): x"]) \
        is None
    assert refusal_of([NO_CODE]) is None and refusal_of([]) is None


def test_to_revise_takes_refusals_only_when_asked(sandbox):
    drafts = _validated(design(ScriptedBackend([fenced(CRASH), fenced(GOOD), "no code here"]),
                               DOCS, PromptExamples([], [], []), CFG, seed=0), sandbox, 0)
    drafts[1].accepted, drafts[1].reasons = False, ["answer_given: the answer is word 3"]
    errors = to_revise(drafts)
    assert [(d.design_idx, t) for d, _, t in errors] == [(0, "designer_revise.txt")]
    both = to_revise(drafts, on="rejections")
    assert [(d.design_idx, t) for d, _, t in both] == [(0, "designer_revise.txt"),
                                                       (1, "designer_refused.txt")]
    backend = ScriptedBackend([fenced(MUL), fenced(MUL)])
    revise(backend, both, CFG, seed=1, first_idx=3)
    told = backend.calls[0][0][1][3]["content"]
    assert "The checks refused your program" in told and "answer is word 3" in told


def test_a_revision_shows_the_program_and_its_error_and_names_its_draft(sandbox):
    designs = design(ScriptedBackend([fenced(CRASH), fenced(GOOD), "no code here"]), DOCS,
                     PromptExamples([], [], []), CFG, seed=0)
    validated = _validated(designs, sandbox, 0)
    assert [d.accepted for d in validated] == [False, True, False]
    backend = ScriptedBackend([fenced(MUL)])
    (rev,) = revise(backend, to_revise(validated), CFG, seed=1, first_idx=3)
    assert (rev.design_idx, rev.revises, rev.doc_id) == (3, 0, validated[0].doc_id)
    assert rev.source == MUL
    (conv,) = backend.calls[0][0]
    assert conv[:2] == validated[0].prompt[:2]  # the same task, then its answer and the error
    assert conv[2] == {"role": "assistant", "content": f"```python\n{CRASH.strip()}\n```"}
    assert conv[3]["role"] == "user" and "NameError" in conv[3]["content"] \
        and "actoin" in conv[3]["content"]
    assert revise(ScriptedBackend([fenced(MUL)]), to_revise(validated[1:]), CFG, 1, 3) == []


def test_flow_revises_a_crashed_design_and_validates_the_fix(tmp_path):
    """The flow's revision round (Prefect tasks): the crashed draft is rewritten, the
    rewrite is validated in its own stage and joins the verdicts; a rewrite that copies
    a design accepted earlier in the generation is a duplicate."""
    from prefect import flow
    from prefect.testing.utilities import prefect_test_harness

    from flows import generation as fg
    from spade_tasks import designer
    from spade_tasks.config import RunConfig, SandboxConfig
    from spade_tasks.llm.scripted import ScriptedBackend as Cycling
    from spade_tasks.records import Designs
    from spade_tasks.runtime import close_all, open_runtime

    cfg = CFG.model_copy(update={
        "run": RunConfig(name="r", root=tmp_path, seed=5), "memory": MemoryConfig(),
        "corpus": CorpusConfig(source="embedded:news", max_words=30),
        # Room for a whole program: this backend's tokens are bytes.
        "designer": CFG.designer.model_copy(update={"designs_per_generation": 3,
                                                     "revisions": 2, "max_new_tokens": 4096}),
        "sandbox": SandboxConfig(call_timeout_s=3.0, load_timeout_s=10.0, cpu_seconds=10)})
    # Drafts: a crash, GOOD, no code (nothing to fix: never revised). Round 1 rewrites
    # the crash and crashes again; round 2 rewrites that rewrite into another game.
    open_runtime(cfg)._backend = Cycling([fenced(CRASH), fenced(GOOD), "no code", fenced(CRASH),
                                          fenced(MUL)])

    @flow
    def designs_with_revisions():
        g = 0
        designs = fg.design_environments(cfg, g, fg.sample_documents(cfg, g))
        verdicts = fg.validate_environments(cfg, g, designs)
        drafts = designs
        for r in range(cfg.designer.revisions):
            drafts = fg.revise_environments(cfg, g, drafts, r)
            verdicts = verdicts.joined(fg.validate_environments(
                cfg, g, drafts, fg._round_stage("validate_revisions", r)))
        return verdicts

    try:
        with prefect_test_harness():
            verdicts = designs_with_revisions()
    finally:
        close_all()
    with Store(tmp_path / "r" / "spade.duckdb") as store:
        rows = store.rows("SELECT design_idx, revises, accepted, env_id, reasons FROM designs"
                          " ORDER BY design_idx")
        stages = sorted(r["stage"] for r in store.rows("SELECT stage FROM stages"))
    assert [(r["design_idx"], r["revises"], r["accepted"]) for r in rows] == [
        (0, None, False), (1, None, True), (2, None, False), (3, 0, False), (4, 3, True)]
    assert "NameError" in rows[3]["reasons"][0]  # the first rewrite crashed too
    assert list(verdicts.accepted_env_ids) == [rows[1]["env_id"], rows[4]["env_id"]]
    assert verdicts.rejected == 3
    assert stages == ["design_environments", "revise_environments", "revise_environments_2",
                      "sample_documents", "validate_environments", "validate_revisions",
                      "validate_revisions_2"]

    # The last round again, as a rerun after a crash before its stage was marked: its
    # revision is numbered as before and replaces that row; nothing is appended.
    try:
        rt = open_runtime(cfg)
        rt._backend = Cycling([fenced(MUL)])
        assert designer.revise_stage(rt, 0, Designs(design_ids=(3,)), 1).design_ids == (4,)
        assert [(r["design_idx"], r["revises"]) for r in rt.store.rows(
            "SELECT design_idx, revises FROM designs ORDER BY design_idx")] == \
            [(0, None), (1, None), (2, None), (3, 0), (4, 3)]
        # A round with nothing to rewrite records nothing, and removes nothing.
        assert designer.apply_reports(rt, 0, [], []).accepted_env_ids == ()
        assert rt.store.rows("SELECT count(*) AS n FROM designs")[0]["n"] == 5
    finally:
        close_all()


def test_a_revision_that_copies_an_accepted_draft_of_its_generation_is_a_duplicate(
        tmp_path, sandbox):
    from spade_tasks.designer import accepted_before

    root = tmp_path / "envs"
    with Store(tmp_path / "s.duckdb") as store:
        drafts = record_designs(store, "r", 0, _validated(design(
            ScriptedBackend([fenced(CRASH), fenced(GOOD)]), DOCS[:2],
            PromptExamples([], [], []), CFG, seed=0), sandbox, 0), root)
        revs = revise(ScriptedBackend([fenced(GOOD)]), to_revise(drafts), CFG, seed=1,
                      first_idx=2)
        earlier = accepted_before(store, "r", 0, revs)
        assert [e.env_id for e in earlier] == [drafts[1].env_id]
        (out,) = record_designs(store, "r", 0, _validated(revs, sandbox, 0), root,
                                only_these=True, also_known=earlier)
        assert not out.accepted and out.reasons[0].startswith("duplicate: the same program")
        # The drafts' rows stay; the revision's is added beside them.
        assert [(r["design_idx"], r["revises"]) for r in store.rows(
            "SELECT design_idx, revises FROM designs ORDER BY design_idx")] == \
            [(0, None), (1, None), (2, 0)]

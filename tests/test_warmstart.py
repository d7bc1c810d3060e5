"""The designer's warm start: programs chosen, pairs built and tokenised, the schedule,
the cache key, the accepted designs of expert iteration (no model needed)."""

import ast
import json
from pathlib import Path

import pytest

from spade_tasks import warmstart as ws
from spade_tasks.config import Config, DesignerConfig, WarmstartConfig
from spade_tasks.corpus import Document
from spade_tasks.designer import extract_program
from spade_tasks.llm.base import render_prompts
from spade_tasks.llm.scripted import _ByteTokenizer
from spade_tasks.store import Store

PREFILL = "```python\nimport random\n"
CFG = Config(designer=DesignerConfig(prefill=PREFILL, max_new_tokens=4096),
             warmstart=WarmstartConfig(enabled=True, steps=2))
DOCS = [Document(f"news:{i}", "embedded:news", f"Harbour story number {i}.") for i in range(9)]


STORE = Path(__file__).resolve().parent.parent / "environments_store"


def _all():
    """The seeds and the Reasoning Gym pool (eight near-identical wrappers)."""
    return ws.programs_in([STORE / "seeds", STORE / "reasoning_gym"])


def test_default_sources_teach_no_program_a_design_may_not_be():
    from spade_tasks.designer import pool_only_reason

    programs = ws.programs_in(list(WarmstartConfig().sources))
    assert programs and all(pool_only_reason(p.source) is None for p in programs)


def test_near_identical_programs_count_once():
    seeds = ws.programs_in([STORE / "seeds"])
    guess = next(p for p in seeds if p.origin.endswith("number_guess.py"))
    copies = [ws.Program(f"copy{i}", guess.source.replace("Guess", f"Guess{i}"))
              for i in range(3)]  # one template written three more times
    picked = ws.select_programs(seeds + copies, "games", 0.5)
    names = [p.origin.rsplit("/", 1)[-1] for p in picked]
    assert "number_guess.py" in names and not any(n.startswith("copy") for n in names)
    assert not any("ToolEnv" in p.source for p in picked)  # games only
    tools = ws.select_programs(_all(), "tool_use", 0.5)
    assert tools and all("ToolEnv" in p.source for p in tools)
    assert len(ws.select_programs(seeds + copies, "games", 1.0)) == len(picked) + 3


@pytest.mark.parametrize("prefill", ["", PREFILL, "```python\nimport random\nimport re\n",
                                     "```python\nfrom spade_env import "])  # cpu-tiny's
def test_prefill_then_target_is_the_same_program(prefill):
    for p in ws.select_programs(_all(), "games", 0.5):
        target = ws.assistant_target(p.source, prefill)
        assert target is not None and target.endswith("```")
        program = extract_program(prefill + target)
        # The same imports (the prefill may add one and moves its own first), then the
        # same statements in the same order.
        def split(src):
            body = ast.parse(src).body
            imp = {ast.dump(n) for n in body if isinstance(n, (ast.Import, ast.ImportFrom))}
            return imp, [ast.dump(n) for n in body
                         if not isinstance(n, (ast.Import, ast.ImportFrom))]

        (want_imp, want), (got_imp, got) = split(p.source), split(program)
        assert want_imp <= got_imp and got == want


def test_a_prefill_that_is_not_fence_and_imports_cannot_be_matched():
    assert ws.assistant_target("import random\nclass AEnv:\n    pass\n",
                               "```python\nclass ") is None


def test_pairs_vary_the_document_and_never_show_the_target():
    progs = ws.select_programs(_all(), "games", 0.5)[:3]
    pairs = ws.build_pairs(progs, DOCS, CFG, docs_per_program=3)
    assert len(pairs) == 9
    texts = [p.prompt[1]["content"] for p in pairs]
    assert len(set(texts)) == 9  # a different document in every pair
    for p in pairs:
        assert p.prompt[-1] == {"role": "assistant", "content": PREFILL}
        cls = ast.parse(extract_program(PREFILL + p.target)).body
        name = next(n.name for n in cls if isinstance(n, ast.ClassDef))
        assert name not in p.prompt[1]["content"]


def test_seed_pairs_take_the_warm_start_prefill_apart_from_the_designer_s():
    """A designer opened with the word steps' import is still taught every small seed:
    the seed pairs end with ``warmstart.prefill``; without it, only the programs that
    continue the designer's prefill are taught."""
    progs = ws.programs_in([STORE / "seeds_small"])
    chained = "```python\nfrom spade_env import QuizEnv, chain, "
    only = Config(designer=DesignerConfig(prefill=chained, max_new_tokens=4096),
                  warmstart=WarmstartConfig(enabled=True, steps=2))
    taught = {p.origin for p in ws.build_pairs(progs, DOCS, only, docs_per_program=1)}
    assert taught and all(Path(o).stem.startswith("steps_") for o in taught)
    apart = only.model_copy(update={"warmstart": only.warmstart.model_copy(
        update={"prefill": "```python\nfrom spade_env import "})})
    pairs = ws.build_pairs(progs, DOCS, apart, docs_per_program=1)
    assert {p.origin for p in pairs} == {p.origin for p in progs}
    assert all(p.prompt[-1]["content"] == "```python\nfrom spade_env import " for p in pairs)
    assert ws.seed_prefill(only) == chained and ws.seed_prefill(CFG) == PREFILL


def test_pattern_picks_the_programs_taught_and_names_itself_when_it_matches_none():
    from spade_tasks.errors import UserError

    small = STORE / "seeds_small"
    steps = ws.programs_in([small], "steps_*.py")
    assert steps and all(Path(p.origin).name.startswith("steps_") for p in steps)
    assert all("chain(" in p.source for p in steps)
    assert len(steps) < len(ws.programs_in([small]))
    cfg = Config(warmstart=WarmstartConfig(enabled=True, steps=2, sources=[small],
                                           pattern="nothing_*.py"))
    with pytest.raises(UserError, match=r"warmstart\.pattern: 'nothing_\*\.py' matches no"):
        ws.first_pairs(cfg, _ByteTokenizer(), seed=0)


def test_variant_pairs_show_another_program_as_the_one_to_grow_from():
    progs = ws.select_programs(_all(), "games", 0.5)[:3]
    cfg = CFG.model_copy(update={"warmstart": WarmstartConfig(variant_pairs=0.5)})
    pairs = ws.build_pairs(progs, DOCS, cfg, docs_per_program=4, seed=1)
    grown = [p for p in pairs if "Grow a different game" in p.prompt[1]["content"]]
    assert len(pairs) == 12 and len(grown) == 6  # the last 2 of each program's 4
    for p in pairs:
        target = extract_program(PREFILL + p.target)
        name = next(n.name for n in ast.parse(target).body if isinstance(n, ast.ClassDef))
        # The program shown is never the one to write: a variant is a different game.
        assert name not in p.prompt[1]["content"]
    names = [next(n.name for n in ast.parse(q.source).body if isinstance(n, ast.ClassDef))
             for q in progs]
    for p in grown:  # one of the other programs is shown
        assert sum(f"class {n}" in p.prompt[1]["content"] for n in names) == 1
    assert ws.build_pairs(progs, DOCS, cfg, docs_per_program=4, seed=1) == pairs  # seeded
    # One program has no other to show: plain pairs only.
    assert not any("Grow a different game" in p.prompt[1]["content"]
                   for p in ws.build_pairs(progs[:1], DOCS, cfg, docs_per_program=4))


WORDY = ('import random\n\nWORDS = ["apple", "brick", "cloud", "delta", "ember", "frost"]\n\n\n'
         'class WordEnv:\n    """Spell a word."""\n    max_turns = 1\n')


def test_document_words_are_the_first_distinct_words_of_four_to_ten_letters():
    text = "The Ian Murray-skippered boat, the boat! Zeus Two failed in 2001 extraordinarily."
    assert ws.document_words(text, 5) == ["murray", "skippered", "boat", "zeus", "failed"]
    assert ws.document_words("a bb ccc", 6) == []


def test_a_programs_word_list_comes_from_its_document():
    doc = Document("d", "x", "Harbour pilots guided seven cargo vessels through winter storms.")
    grounded = ws.ground_in_document(WORDY, doc)
    tree = ast.parse(grounded)
    words = ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign)))
    assert words == ["harbour", "pilots", "guided", "seven", "cargo", "vessels"]
    # Nothing else changes.
    assert [ln for ln in grounded.splitlines() if not ln.startswith("WORDS")] == \
        [ln for ln in WORDY.splitlines() if not ln.startswith("WORDS")]
    # Too few words in the document, no document, or no WORDS list: unchanged.
    assert ws.ground_in_document(WORDY, Document("d", "x", "Two big cats ran.")) == WORDY
    assert ws.ground_in_document(WORDY, None) == WORDY
    plain = "import random\n\nclass AEnv:\n    pass\n"
    assert ws.ground_in_document(plain, doc) == plain


def test_pairs_of_a_wordy_program_differ_with_their_documents():
    docs = [Document(f"d{i}", "x", f"{w} lighthouse keepers counted gulls along northern cliffs "
                     "during autumn") for i, w in enumerate(["Morning", "Evening"])]
    prefill = "```python\nimport random\n"
    pairs = ws.build_pairs([ws.Program("wordy", WORDY)], docs, CFG, docs_per_program=2)
    assert len(pairs) == 2 and pairs[0].target != pairs[1].target
    assert '"morning", "lighthouse"' in pairs[0].target and '"evening"' in pairs[1].target
    off = CFG.model_copy(update={"warmstart": WarmstartConfig(document_words=False)})
    same = ws.build_pairs([ws.Program("wordy", WORDY)], docs, off, docs_per_program=2)
    assert same[0].target == same[1].target == ws.assistant_target(WORDY, prefill)


def test_tokenised_pairs_condition_on_prompt_and_prefill_and_end_the_turn():
    tok = _ByteTokenizer()
    progs = ws.select_programs(_all(), "games", 0.5)[:2]
    pairs = ws.build_pairs(progs, DOCS, CFG, docs_per_program=1)
    samples = ws.tokenize_pairs(tok, pairs, max_tokens=100_000)
    for pair, s in zip(pairs, samples):
        assert s.prompt_ids == render_prompts(tok, [pair.prompt], None)[0]
        assert tok.decode(s.prompt_ids).endswith(PREFILL)
        assert s.target_ids[-1] == tok.eos_token_id
        assert tok.decode(s.target_ids) == pair.target
    short = min(len(s.target_ids) for s in samples)
    assert len(ws.tokenize_pairs(tok, pairs, 100_000, max_target_tokens=short)) == 1
    assert ws.tokenize_pairs(tok, pairs, max_tokens=10) == []


def test_schedule_sees_every_pair_once_per_pass_and_is_seeded():
    steps = ws.schedule(5, steps=10, batch_size=1, seed=3)
    flat = [i for b in steps for i in b]
    assert sorted(flat[:5]) == list(range(5)) and sorted(flat[5:]) == list(range(5))
    assert steps == ws.schedule(5, 10, 1, seed=3) and steps != ws.schedule(5, 10, 1, seed=4)
    assert all(len(b) == 2 for b in ws.schedule(5, 4, 2, seed=0))


def test_cache_key_follows_data_hyperparameters_and_seed():
    from spade_tasks.training import SFTSample

    samples = [SFTSample([1, 2], [3, 4])]
    key = ws.cache_key("embedded:smollm2-135m", samples, CFG, 0)
    assert key == ws.cache_key("embedded:smollm2-135m", samples, CFG, 0)
    other_steps = CFG.model_copy(update={"warmstart": WarmstartConfig(enabled=True, steps=3)})
    assert key != ws.cache_key("embedded:smollm2-135m", samples, other_steps, 0)
    assert key != ws.cache_key("embedded:smollm2-135m", samples, CFG, 1)
    assert key != ws.cache_key("embedded:smollm2-135m", [SFTSample([1, 2], [3, 5])], CFG, 0)


def test_cache_key_ignores_policy_gradient_settings_and_follows_the_engine_s():
    from spade_tasks.training import SFTSample

    samples = [SFTSample([1, 2], [3, 4])]
    key = ws.cache_key("embedded:smollm2-135m", samples, CFG, 0)

    def with_training(**update):
        return CFG.model_copy(update={"training": CFG.training.model_copy(update=update)})

    # Tuning the policy-gradient step or retention reuses the warm start...
    for update in ({"lr": 3e-5}, {"clip_eps_high": 0.5}, {"kl_coef": 0.1}, {"keep_last": 5}):
        assert ws.cache_key("embedded:smollm2-135m", samples, with_training(**update), 0) == key
    # ...while what a supervised step computes with keys a new one.
    for update in ({"adam_betas": (0.9, 0.95)}, {"weight_decay": 0.1},
                   {"micro_batch_size": 2}, {"world_size": 2}):
        assert ws.cache_key("embedded:smollm2-135m", samples, with_training(**update), 0) != key


def test_cache_key_reads_the_deepspeed_config_by_content_not_by_path(tmp_path):
    from spade_tasks.training import SFTSample

    samples = [SFTSample([1, 2], [3, 4])]
    src = CFG.training.deepspeed_config
    copy = tmp_path / "ds.json"  # the same file in another checkout
    copy.write_bytes(Path(src).read_bytes())

    def at(path):
        return CFG.model_copy(update={"training": CFG.training.model_copy(
            update={"deepspeed_config": path})})

    key = ws.cache_key("embedded:smollm2-135m", samples, CFG, 0)
    assert ws.cache_key("embedded:smollm2-135m", samples, at(copy), 0) == key
    copy.write_text(copy.read_text().replace("{", '{"gradient_clipping": 0.5, ', 1))
    assert ws.cache_key("embedded:smollm2-135m", samples, at(copy), 0) != key


def test_a_new_warm_start_deletes_the_earlier_ones_but_its_start(tmp_path):
    ckpts = tmp_path / "checkpoints"
    for name in ["warmstart-0001", "warmstart-0002", "warmstart-0003", "warmstart-0004",
                 "gen-0002"]:
        (ckpts / name).mkdir(parents=True)
    gone = ws.prune_warm_starts(ckpts, keep=[ckpts / "warmstart-0004", ckpts / "warmstart-0002"])
    assert [p.name for p in gone] == ["warmstart-0001", "warmstart-0003"]
    assert sorted(p.name for p in ckpts.iterdir()) == ["gen-0002", "warmstart-0002",
                                                       "warmstart-0004"]


def test_cached_warm_start_is_reused_without_an_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path))
    cfg = CFG.model_copy(update={"corpus": CFG.corpus.model_copy(update={"max_words": 30})})
    from spade_tasks.llm.loading import load_tokenizer, resolve_model

    tok = load_tokenizer(resolve_model(cfg.model.name))
    _, samples = ws.first_pairs(cfg, tok, seed=5)
    key = ws.cache_key(cfg.model.name, samples, cfg, 5)
    (tmp_path / "warmstart" / key).mkdir(parents=True)
    (tmp_path / "warmstart" / key / "warmstart.json").write_text(
        json.dumps({"steps": 2, "losses": [1.5, 1.2]}))

    def no_engine():
        raise AssertionError("a cached warm start must not build an engine")

    res = ws.first_warmstart(cfg, no_engine, seed=5, log=lambda m: None)
    assert res.cached and res.losses == [1.5, 1.2] and res.checkpoint.endswith(key)


def _design(gen, idx, env_id, accepted, reasons, prompt):
    return {"run": "r", "generation": gen, "design_idx": idx, "doc_id": None,
            "setting": "games", "prompt": json.dumps(prompt), "completion": "",
            "prompt_token_ids": [], "token_ids": [], "logprobs": [], "env_id": env_id,
            "accepted": accepted, "reasons": reasons, "reward": None}


def test_expert_iteration_learns_only_new_accepted_designs(tmp_path):
    src = ws.select_programs(_all(), "games", 0.5)[0].source
    with Store(tmp_path / "s.duckdb") as store:
        for env_id, source in (("new", src), ("seedcopy", src + "\n"), ("dup", src + "\n\n")):
            store.upsert("environments", {"env_id": env_id, "source": source})
        store.upsert("memory", {"run": "r", "env_id": "new", "added_generation": 0})
        store.upsert("memory", {"run": "r", "env_id": "seedcopy", "added_generation": -1})
        store.replace_rows("designs", {"run": "r", "generation": 0}, [
            _design(0, 0, "new", True, [], [{"role": "user", "content": "A"}]),
            _design(0, 1, "seedcopy", True, [], [{"role": "user", "content": "B"}]),
            _design(0, 2, "dup", True, ["duplicate: of new"], [{"role": "user", "content": "C"}]),
            _design(0, 3, None, False, ["parse: x"], [{"role": "user", "content": "D"}])])
        assert ws.accepted_pairs(CFG, store, "r", before=0) == []
        (pair,) = ws.accepted_pairs(CFG, store, "r", before=1)
    assert pair.prompt == [{"role": "user", "content": "A"}]
    assert pair.target == ws.assistant_target(src, PREFILL)


def test_latest_checkpoint_is_a_warm_start_that_ran_after_the_last_generation(tmp_path):
    from spade_tasks.config import RunConfig
    from spade_tasks.runtime import Runtime

    cfg = Config(run=RunConfig(name="r", root=tmp_path))
    with Store(tmp_path / "s.duckdb") as store:
        rt = Runtime(cfg, store)
        assert rt.latest_checkpoint() is None
        rt.mark_stage(0, "warmstart", {"checkpoint": "/cache/ws"}, 1.0)
        assert rt.latest_checkpoint() == "/cache/ws"  # generation 0 designs with it
        rt.finish_generation(0, "/run/gen-0", {}, None)
        assert rt.latest_checkpoint() == "/run/gen-0"
        rt.mark_stage(1, "warmstart", {"warmstart_skipped": "no accepted design yet"}, 0.0)
        assert rt.latest_checkpoint() == "/run/gen-0"
        rt.mark_stage(2, "warmstart", {"checkpoint": "/run/warmstart-2"}, 1.0)
        rt.finish_generation(1, "/run/gen-1", {}, None)
        assert rt.latest_checkpoint() == "/run/warmstart-2"


def test_warm_start_stage_is_off_for_the_fixed_baseline_and_when_disabled(tmp_path):
    from spade_tasks.config import RunConfig
    from spade_tasks.runtime import Runtime

    with Store(tmp_path / "s.duckdb") as store:
        off = Runtime(Config(run=RunConfig(root=tmp_path)), store)
        assert ws.warmstart_stage(off, 0).dump() == {"warmstart_skipped": "off"}
        fixed = Runtime(CFG.model_copy(update={"designer": DesignerConfig(mode="fixed")}), store)
        assert ws.warmstart_stage(fixed, 0).to_summary() == {"warmstart_skipped": "off"}
        later = Runtime(CFG.model_copy(update={"run": RunConfig(name="r", root=tmp_path),
                                               "warmstart": WarmstartConfig(
                                                   enabled=True, accepted_steps=2)}), store)
        later.finish_generation(0, "/run/gen-0", {}, None)
        assert ws.warmstart_stage(later, 1).warmstart_skipped == "no accepted design yet"


@pytest.mark.slow
def test_spade_warmstart_trains_then_reuses_its_cached_checkpoint(tmp_path):
    """One real supervised step through the command, then the same command again: the
    second finds the checkpoint by content and trains nothing."""
    import os
    import subprocess
    import sys

    import yaml

    from tests.test_flow import REPO

    cfg = yaml.safe_load((REPO / "configs/cpu-tiny.yaml").read_text())
    cfg["run"].update(root=str(tmp_path / "runs"))
    cfg["corpus"] = {"max_words": 20}
    # Only the shortest seed programs fit 760 tokens (number_guess, code_breaker): one step.
    cfg["designer"].update(max_new_tokens=760)
    cfg["designer"].pop("seed_pool", None)  # a path relative to configs/
    cfg["warmstart"] = {"enabled": True, "steps": 1, "docs_per_program": 1}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, SPADE_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "spade_tasks.cli", "warmstart", "--config", str(path), "--json"]
    first = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    one = json.loads(first.stdout.strip().splitlines()[-1])
    assert one["warmstart_steps"] == 1 and not one["warmstart_cached"]
    assert one["warmstart_pairs"] >= 1 and one["warmstart_loss_first"] > 0
    ckpt = Path(one["checkpoint"])
    assert (ckpt / "config.json").is_file() and ckpt.parent == tmp_path / "cache" / "warmstart"
    second = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    two = json.loads(second.stdout.strip().splitlines()[-1])
    assert two["warmstart_cached"] and two["checkpoint"] == one["checkpoint"]
    assert two["warmstart_losses"] == one["warmstart_losses"]


def test_spade_warmstart_fills_the_cache_entry_the_flow_reads(tmp_path, monkeypatch):
    """`spade warmstart` keys its checkpoint by the seed the flow's warm-start stage uses
    (Runtime.seed(0, salt=7)), or a run would miss the cache it filled."""
    from spade_tasks.runtime import Runtime

    seen = []

    def fake_first(cfg, engine_fn, seed, log=print):
        seen.append(seed)
        return ws.WarmstartResult(0, 0, 0, [], 0.0)

    monkeypatch.setattr(ws, "first_warmstart", fake_first)
    ws.run_warmstart(CFG)
    with Store(tmp_path / "db.duckdb") as store:
        assert seen == [Runtime(CFG, store).seed(0, salt=7)]


class _RecordingEngine:
    """An engine that records the supervised batches it is given (no model): which
    programs and documents a later generation's warm start rehearses."""

    def __init__(self):
        self.tokenizer = _ByteTokenizer()
        self.batches = []

    def sft_step(self, batch, lr):
        from types import SimpleNamespace

        self.batches.append(batch)
        return SimpleNamespace(loss=1.0, tokens=sum(len(s.target_ids) for s in batch))

    def save_checkpoint(self, path):
        Path(path).mkdir(parents=True)


def test_later_generations_rehearse_the_seed_pool_under_fresh_documents(tmp_path, monkeypatch):
    from spade_tasks.config import RunConfig
    from spade_tasks.runtime import Runtime

    small = STORE / "seeds_small"
    cfg = CFG.model_copy(update={
        "run": RunConfig(name="r", root=tmp_path),
        "warmstart": WarmstartConfig(enabled=True, sources=[small], docs_per_program=1,
                                     max_similarity=1.0, replay_steps=3,
                                     max_tokens=100_000)})  # byte tokens
    with Store(tmp_path / "s.duckdb") as store:
        rt = Runtime(cfg, store)
        engine = _RecordingEngine()
        monkeypatch.setattr(rt, "trainer", lambda: engine)
        rt.finish_generation(0, "/run/gen-0", {}, None)
        one = ws.warmstart_stage(rt, 1)
        assert one.warmstart_skipped is None  # no accepted design, and still trained
        assert one.warmstart_steps == 3 and len(engine.batches) == 3
        assert one.warmstart_programs == len(ws.programs_in([small]))
        assert Path(one.checkpoint).name == "warmstart-0001" and Path(one.checkpoint).is_dir()
        first = [s.prompt_ids for b in engine.batches for s in b]
        engine.batches.clear()
        two = ws.warmstart_stage(rt, 2)
        assert two.warmstart_steps == 3
        # Generation 2 draws its own documents: its prompts are not generation 1's.
        assert not set(map(tuple, first)) & {tuple(s.prompt_ids) for b in engine.batches
                                              for s in b}
        off = Runtime(cfg.model_copy(update={"warmstart": WarmstartConfig(enabled=True)}), store)
        assert ws.warmstart_stage(off, 3).warmstart_skipped == (
            "accepted_steps and replay_steps are 0")

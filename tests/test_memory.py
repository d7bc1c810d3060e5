"""The environment memory: seeds, statistics, examples, dedup, capacity, pool."""

import ast
import re
import shutil
from pathlib import Path

import pytest

from spade_tasks import memory
from spade_tasks.config import MemoryConfig, ValidationConfig
from spade_tasks.environments import EnvRecord, env_id_of, save_record
from spade_tasks.memory import EnvStats
from spade_tasks.store import Store

SEEDS = Path(__file__).resolve().parent.parent / "environments_store" / "seeds"
CFG = MemoryConfig(capacity=200, win_band=(0.15, 0.85), too_easy=0.9, too_hard=0.1,
                   dedup_threshold=0.8)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "run.duckdb") as s:
        yield s


def rec(source: str, origin: str = "designed", generation: int | None = 1) -> EnvRecord:
    """A record read statically (tests only: real records come from the validator)."""
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    doc = ast.get_docstring(cls) or ""
    return EnvRecord(env_id_of(source), source, cls.name, doc.splitlines()[0], doc, 8, True,
                     True, origin, "", None if origin == "seed" else "r", generation)


def seed_source(name: str) -> str:
    return (SEEDS / f"{name}.py").read_text()


def put_seeds(store, names, run="r"):
    """Seeds in the memory without validation (the cached-meta path)."""
    out = []
    for n in names:
        r = rec(seed_source(n), "seed", None)
        save_record(store, r)
        store.upsert("memory", memory._new_row(run, r.env_id, memory.SEED_GENERATION))
        out.append(r)
    return out


def stats(wr, regret=0.2, episodes=4):
    return EnvStats(episodes, regret, wr, min(1.0, wr + regret))


ALL = ["arithmetic_word_problem", "code_breaker", "grid_navigation", "logic_seating",
       "number_guess", "sequence_rule", "string_transform", "water_jugs"]


def test_init_memory_validates_each_seed_once(store, tmp_path, sandbox, monkeypatch):
    folder = tmp_path / "seeds"
    folder.mkdir()
    shutil.copy(SEEDS / "number_guess.py", folder)
    recs = memory.init_memory(store, "r", sandbox, ValidationConfig(seeds=[0]), folder)
    assert [r.class_name for r in recs] == ["HigherLowerEnv"]
    assert recs[0].origin == "seed" and recs[0].has_oracle and recs[0].max_turns == 8

    import spade_tasks.validation as validation

    def no_validation(*a, **k):
        raise AssertionError("a cached seed was validated again")

    monkeypatch.setattr(validation, "validate_source", no_validation)
    again = memory.init_memory(store, "r2", sandbox, ValidationConfig(seeds=[0]), folder)
    assert again == recs
    assert store.count("memory", run="r2") == 1


def test_broken_seed_is_an_error(store, tmp_path, sandbox):
    folder = tmp_path / "seeds"
    folder.mkdir()
    (folder / "bad.py").write_text("import os\nclass BadEnv:\n    def reset(self): pass\n"
                                   "    def step(self, a): pass\n")
    with pytest.raises(memory.SeedRejected, match="imports"):
        memory.init_memory(store, "r", sandbox, ValidationConfig(seeds=[0]), folder)


def test_positive_examples_rank_in_band_by_regret_and_fill_with_seeds(store):
    recs = put_seeds(store, ALL)
    ids = [r.env_id for r in recs]
    memory.update_stats(store, "r", 1, {
        ids[0]: stats(0.5, regret=0.1), ids[1]: stats(0.5, regret=0.6),
        ids[2]: stats(0.95, regret=0.9), ids[3]: stats(0.05, regret=0.9)}, CFG)
    top = memory.positive_examples(store, "r", 2, CFG)
    assert [e.env_id for e in top] == [ids[1], ids[0]]
    more = memory.positive_examples(store, "r", 5, CFG, seed=3)
    assert [e.env_id for e in more[:2]] == [ids[1], ids[0]]
    # shortfall filled by never-played entries, never by too easy / too hard ones
    assert {e.env_id for e in more[2:]} <= set(ids[4:])
    assert all(not e.played for e in more[2:])
    assert more == memory.positive_examples(store, "r", 5, CFG, seed=3)


def test_negative_examples_are_too_easy_or_too_hard(store):
    ids = [r.env_id for r in put_seeds(store, ALL[:4])]
    memory.update_stats(store, "r", 1, {ids[0]: stats(0.95), ids[1]: stats(0.0),
                                        ids[2]: stats(0.5)}, CFG)
    neg = {e.env_id: label for e, label in memory.negative_examples(store, "r", 5, CFG)}
    assert neg == {ids[0]: "too easy", ids[1]: "too hard"}


def test_stats_move_by_moving_average_and_rerun_is_safe(store):
    (r,) = put_seeds(store, ["number_guess"])
    memory.update_stats(store, "r", 1, {r.env_id: stats(0.2, regret=0.4)}, CFG)
    memory.update_stats(store, "r", 2, {r.env_id: stats(0.6, regret=0.0)}, CFG)
    memory.update_stats(store, "r", 2, {r.env_id: stats(0.6, regret=0.0)}, CFG)  # rerun
    (e,) = memory.entries(store, "r")
    assert e.plays == 8 and e.last_generation == 2
    assert e.win_rate_no_hint == pytest.approx(0.4) and e.regret == pytest.approx(0.2)


def test_regret_rows_are_accepted_as_stats(store):
    (r,) = put_seeds(store, ["number_guess"])
    row = {"episodes": 2, "regret": 0.5, "win_rate_no_hint": 0.5, "win_rate_hint": 1.0}
    memory.update_stats(store, "r", 1, {r.env_id: row}, CFG)
    assert memory.entries(store, "r")[0].regret == 0.5


def test_add_refuses_exact_and_near_duplicates(store):
    put_seeds(store, ALL)
    src = seed_source("number_guess")
    assert memory.add(store, "r", rec(src), 1, CFG).reason.startswith("duplicate")
    copy = (src.replace("HigherLowerEnv", "GuessTheNumberEnv").replace("127", "200")
            .replace("Invalid guess", "Bad guess"))
    copy = re.sub(r"\bhigh\b", "upper", copy)
    res = memory.add(store, "r", rec(copy), 1, CFG)
    assert not res.added and res.reason.startswith("near_duplicate")
    assert res.similar_to == env_id_of(src) and res.similarity >= CFG.dedup_threshold
    fresh = memory.add(store, "r", rec(seed_source("tower_of_hanoi")), 1, CFG)
    assert fresh.added and fresh.similarity < 0.5
    assert store.count("memory", run="r") == len(ALL) + 1


def test_capacity_evicts_designed_entries_before_seeds(store):
    seeds = put_seeds(store, ALL[:3])
    cfg = MemoryConfig(capacity=4, dedup_threshold=0.99)
    a = rec(seed_source("tower_of_hanoi"))
    b = rec(seed_source("calendar_booking"))
    assert memory.add(store, "r", a, 1, cfg).added
    memory.update_stats(store, "r", 1, {a.env_id: stats(0.99)}, cfg)  # too easy: low value
    res = memory.add(store, "r", b, 2, cfg)
    assert res.added and res.evicted == (a.env_id,)
    active = {e.env_id for e in memory.entries(store, "r")}
    assert active == {r.env_id for r in seeds} | {b.env_id}
    # an evicted program does not come back, and still counts as a negative example
    assert memory.add(store, "r", a, 3, cfg).reason.startswith("duplicate")
    assert [e.env_id for e, _ in memory.negative_examples(store, "r", 5, cfg)] == [a.env_id]


def test_pool_sample_is_deterministic(store):
    ids = {r.env_id for r in put_seeds(store, ALL)}
    one = memory.pool_sample(store, "r", 3, seed=5)
    assert len(one) == 3 and {r.env_id for r in one} <= ids
    assert one == memory.pool_sample(store, "r", 3, seed=5)
    assert [r.env_id for r in memory.pool_sample(store, "r", 3, seed=6)] != [r.env_id for r in one]
    left = memory.pool_sample(store, "r", 50, seed=5, exclude={one[0].env_id})
    assert len(left) == len(ALL) - 1 and one[0].env_id not in {r.env_id for r in left}


def test_titles_and_diversity(store):
    assert memory.diversity(store, "r") == 0.0
    put_seeds(store, ALL)
    titles = memory.existing_titles(store, "r")
    assert len(titles) == len(ALL) and all(titles)
    d = memory.diversity(store, "r")
    assert 0.6 < d <= 1.0


def test_disabled_memory_shows_nothing(store):
    put_seeds(store, ALL)
    ex = memory.prompt_examples(store, "r", 2, MemoryConfig(enabled=False))
    assert ex.positives == [] and ex.negatives == [] and ex.titles == []
    ex = memory.prompt_examples(store, "r", 2, CFG)
    assert len(ex.positives) == 2 and len(ex.titles) == len(ALL)


# -- integrity: rows never overwritten, flagged environments leave -----------------------


def test_save_record_never_overwrites_another_row(store):
    (seed,) = put_seeds(store, ["number_guess"])
    copy = rec(seed.source, "designed", 3)  # the same text, so the same env_id
    assert not save_record(store, copy)
    row = store.rows("SELECT origin, generation FROM environments WHERE env_id = ?",
                     [seed.env_id])[0]
    assert (row["origin"], row["generation"]) == ("seed", None)


def test_flagged_environment_is_refused_and_dropped(store, tmp_path):
    from spade_tasks.environments import flag_environment, load_record

    kept, bad = put_seeds(store, ["number_guess", "water_jugs"])
    flag_environment(store, bad.env_id, "reward_overflow: paid 2.1")
    assert memory.drop_flagged(store, "r") == [bad.env_id]
    assert [e.env_id for e in memory.entries(store, "r")] == [kept.env_id]
    res = memory.add(store, "other-run", load_record(store, bad.env_id), 1, CFG)
    assert not res.added and res.reason.startswith("reward_overflow: ")
    folder = tmp_path / "seeds"
    folder.mkdir()
    shutil.copy(SEEDS / "water_jugs.py", folder)
    memory.init_memory(store, "new-run", None, ValidationConfig(), folder)  # recorded: no sandbox
    assert store.count("memory", run="new-run") == 0


def test_fixed_pool_without_oracle_is_recorded_unverified(store, tmp_path, sandbox):
    from tests.test_validation import GOOD

    folder = tmp_path / "pool"
    folder.mkdir()
    (folder / "pick.py").write_text(GOOD.split("    def oracle(self):")[0])
    with pytest.raises(memory.SeedRejected, match="oracle_missing: "):
        memory.seed_records(store, sandbox, ValidationConfig(), folder)
    (r,) = memory.seed_records(store, sandbox, ValidationConfig(), folder, allow_unverified=True)
    assert r.feasibility_verified is False
    assert store.rows("SELECT feasibility_verified FROM environments")[0] == {
        "feasibility_verified": False}


def test_without_data_empties_literal_tables_only():
    from spade_tasks.memory import without_data

    src = ('WORDS = ["é", "b"]\nPAIRS = {"a": 1}\nLIVE = [x for x in range(3)]\n'
           'class E:\n    TABLE: tuple = (1, 2)\n    def f(self):\n        return ["kept", 1]\n')
    out = without_data(src)
    assert out.splitlines()[:3] == ["WORDS = []", "PAIRS = {}", "LIVE = [x for x in range(3)]"]
    assert "TABLE: tuple = ()" in out and 'return ["kept", 1]' in out
    assert without_data("def (:\n") == "def (:\n"  # unparsable: left for the crude split


def _episodes(store, env_id, generation, returns, with_hint=False):
    for k, ret in enumerate(returns):
        store.upsert("episodes", {
            "run": "r", "generation": generation, "episode_id": f"{env_id}-{with_hint}-{k}",
            "env_id": env_id, "seed": k, "with_hint": with_hint, "hint": None, "return": ret,
            "turns": 1, "terminated": True, "truncated": False, "end_reason": "terminated",
            "final_observation": None, "error": None})


def test_spread_priority_draws_games_never_won_least(store):
    seeds = put_seeds(store, ALL[:3])
    lost, won, unplayed = (r.env_id for r in seeds)
    _episodes(store, lost, 0, [0.0] * 24)  # 24 losses: p = 1/26
    _episodes(store, won, 0, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # 2 of 8
    _episodes(store, won, 0, [1.0] * 8, with_hint=True)  # hinted wins do not count
    _episodes(store, lost, 1, [1.0] * 8)  # nor the generation being drawn for, or later
    first = {}
    for seed in range(300):
        got = memory.pool_sample(store, "r", 1, seed, priority="spread", generation=1, group=8)
        first[got[0].env_id] = first.get(got[0].env_id, 0) + 1
    assert first[lost] < first[won] < first[unplayed]
    assert first[lost] < 0.2 * 300
    # deterministic, without replacement, and the exclusions hold
    two = memory.pool_sample(store, "r", 2, 7, priority="spread", generation=1, group=8)
    assert two == memory.pool_sample(store, "r", 2, 7, priority="spread", generation=1, group=8)
    assert len({r.env_id for r in two}) == 2
    rest = memory.pool_sample(store, "r", 5, 7, exclude={unplayed}, priority="spread",
                              generation=1, group=8)
    assert {r.env_id for r in rest} == {lost, won}
    with pytest.raises(ValueError, match="pool priority"):
        memory.pool_sample(store, "r", 1, 0, priority="hardest")
    # groups of one episode never differ: every game alike, as uniform draws them
    assert memory.pool_sample(store, "r", 2, 7, priority="spread", generation=1,
                              group=1) == memory.pool_sample(store, "r", 2, 7)


def test_spread_chance_favours_games_sometimes_won_and_games_not_yet_played():
    from spade_tasks.memory import spread_chance

    # Never played: a coin flip, so a group of 8 nearly always holds a win and a loss.
    assert spread_chance(0, 0, 8) == pytest.approx(1 - 2 * 0.5 ** 8)
    # 0 wins of 8: p = 1/10.
    assert spread_chance(0, 8, 8) == pytest.approx(1 - 0.1 ** 8 - 0.9 ** 8)
    assert spread_chance(1, 8, 8) > spread_chance(0, 8, 8) > spread_chance(0, 40, 8) > 0
    assert spread_chance(8, 8, 8) == pytest.approx(spread_chance(0, 8, 8))  # symmetric
    assert spread_chance(3, 5, 1) == 0.0  # one episode never differs from itself
    for bad in ((3, 2, 8), (-1, 2, 8), (0, 2, 0)):
        with pytest.raises(ValueError, match="spread_chance"):
            spread_chance(*bad)

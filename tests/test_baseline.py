"""The fixed-environment baseline (Reasoning Gym programs, ``designer.mode: fixed``), the
ablation switches' config checks, and in-loop evaluation."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spade_tasks.config import Config, ValidationConfig, load_config
from spade_tasks.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
RG_DIR = REPO / "environments_store" / "reasoning_gym"
SEEDS = REPO / "environments_store" / "seeds"


def fixed_cfg(root: Path, pool: list[Path], **sections) -> Config:
    raw = {"run": {"name": "fixed", "root": str(root)},
           "designer": {"mode": "fixed", "training": False, "fixed_pool": [str(p) for p in pool]},
           "validation": {"seeds": [0]}, **sections}
    return Config.model_validate(raw)


@pytest.fixture
def runtime():
    from spade_tasks.runtime import close_all

    yield
    close_all()


# -- the programs ----------------------------------------------------------------------


@pytest.mark.slow  # about half a minute per program: reasoning_gym's import is ~1 s per worker
def test_reasoning_gym_programs_validate(tmp_path, sandbox):
    from spade_tasks.memory import seed_records
    from spade_tasks.store import Store

    paths = sorted(RG_DIR.glob("*.py"))
    assert len(paths) >= 8
    with Store(tmp_path / "s.duckdb") as store:
        # Raises SeedRejected naming the program and reasons when one is rejected.
        recs = seed_records(store, sandbox, ValidationConfig(seeds=[0, 1]), RG_DIR)
    assert [Path(r.path).name for r in recs] == [p.name for p in paths]
    for r in recs:
        assert r.has_hint and r.has_oracle and r.max_turns == 1 and r.title, r.path


# -- fixed mode's stages -----------------------------------------------------------------


def test_fixed_mode_designs_nothing_and_pools_the_fixed_programs(tmp_path, runtime):
    from spade_tasks import corpus, designer, memory
    from spade_tasks.runtime import open_runtime

    # Two folders, as the default pool (seeds + reasoning_gym), one program each.
    seeds, rg = tmp_path / "seeds", tmp_path / "rg"
    seeds.mkdir()
    rg.mkdir()
    shutil.copy(SEEDS / "number_guess.py", seeds)
    shutil.copy(RG_DIR / "gcd.py", rg)
    rt = open_runtime(fixed_cfg(tmp_path / "runs", [seeds, rg]))
    docs = corpus.sample_stage(rt, 0)
    assert docs.doc_ids == ()
    assert designer.design_stage(rt, 0, docs).design_ids == ()
    assert rt.store.count("designs", run="fixed") == 0
    entries = memory.entries(rt.store, "fixed")
    assert {e.record.class_name: Path(e.record.path).parent for e in entries} == {
        "HigherLowerEnv": seeds, "GcdEnv": rg}
    drawn = memory.pool_sample(rt.store, "fixed", 2, seed=0)
    assert {r.class_name for r in drawn} == {"HigherLowerEnv", "GcdEnv"}


def test_baseline_config_pools_what_spade_starts_from():
    cfg = load_config(REPO / "configs" / "cpu-tiny-fixed.yaml")
    assert cfg.designer.mode == "fixed" and not cfg.designer.training
    spade = load_config(REPO / "configs" / "cpu-tiny.yaml")
    # The agent's fixed games are the ones SPADE's memory starts from: the two runs
    # differ in the designer alone, not in how winnable their first games are.
    assert [p.resolve() for p in cfg.designer.fixed_pool] == [
        p.resolve() for p in spade.designer.seed_pool]
    assert cfg.run.name != spade.run.name
    # The benchmark compares the two on the designer alone: the agent plays and learns
    # the same way in both.
    assert cfg.rollout == spade.rollout and cfg.training == spade.training
    assert cfg.model == spade.model


# -- ablation switches --------------------------------------------------------------------


@pytest.mark.parametrize("text, needle", [
    ("designer:\n  reward: regrett\n", "designer.reward"),
    ("designer:\n  mode: paired\n", "designer.mode"),
    ("designer:\n  rejected_reward: 0.5\n", "designer.rejected_reward"),
    ("eval:\n  every: -1\n", "eval.every"),
    ("eval:\n  every: 2\n  suites: [nope]\n", "eval: .*unknown evaluation suite 'nope'"),
])
def test_bad_switch_is_a_config_error(tmp_path, text, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_config(p)


@pytest.mark.parametrize("name", ["regret", "blend", "solve_rate", "learning_potential"])
def test_every_designer_reward_loads(tmp_path, name):
    p = tmp_path / "c.yaml"
    p.write_text(f"designer:\n  reward: {name}\n")
    assert load_config(p).designer.reward == name


# -- in-loop evaluation -------------------------------------------------------------------


def test_eval_due_every_kth_generation():
    from spade_tasks.evaluation import eval_due

    assert [g for g in range(7) if eval_due(3, g)] == [2, 5]
    assert [g for g in range(3) if eval_due(1, g)] == [0, 1, 2]
    assert not any(eval_due(0, g) for g in range(5))


def test_eval_stage_scores_the_just_trained_checkpoint(tmp_path, runtime):
    from spade_tasks.evaluation import eval_stage
    from spade_tasks.llm.scripted import ScriptedBackend
    from spade_tasks.records import TrainReport
    from spade_tasks.runtime import open_runtime
    from spade_tasks.tracking import generation_metrics

    cfg = fixed_cfg(tmp_path / "runs", [], eval={"every": 2, "suites": ["reasoning-gym"],
                                                 "limit": 3})
    rt = open_runtime(cfg)
    backend = ScriptedBackend(["<answer>1</answer>"])
    rt._backend = backend  # what backend() would have loaded, without a model
    trained = TrainReport(trained_from="base", train_samples=1, train_samples_designer=0,
                          train_samples_agent=1, train_world_size=1,
                          checkpoint=str(tmp_path / "gen-0001"))
    assert eval_stage(rt, 0, trained).to_summary() == {}  # not due: generation 1 is
    out = eval_stage(rt, 1, trained).to_summary()  # the first due one
    assert backend.loaded == [tmp_path / "gen-0001"]
    assert out["eval.reasoning-gym.n"] == 3 and 0.0 <= out["eval.reasoning-gym"] <= 1.0
    rows = rt.store.rows("SELECT run, checkpoint FROM evaluations")
    assert len(rows) == 3 and rows[0]["run"] == "fixed-gen-0001"
    assert rows[0]["checkpoint"] == str(tmp_path / "gen-0001")
    m = generation_metrics(rt, 1, {**out, "eval.bogus": math.nan})
    assert m["eval.reasoning-gym"] == out["eval.reasoning-gym"] and "eval.bogus" not in m


def test_eval_flow_runs_each_suite_as_a_task(tmp_path, monkeypatch, runtime):
    from prefect.testing.utilities import prefect_test_harness

    import flows.evaluation as ev
    from spade_tasks.llm.scripted import ScriptedBackend

    cfg = {"run": {"name": "ev", "root": str(tmp_path / "runs")},
           "tracking": {"mlflow_uri": f"sqlite:///{tmp_path}/mlflow.db"}}
    path = tmp_path / "ev.yaml"
    path.write_text(yaml.safe_dump(cfg))
    loads = []
    monkeypatch.setattr(ev, "make_backend", lambda model_cfg: loads.append(model_cfg.name)
                        or ScriptedBackend(["<answer>1</answer>"]))
    with prefect_test_harness():
        scores = ev.spade_eval(str(path), ["reasoning-gym"], limit=2)
    assert set(scores) == {"reasoning-gym"} and 0.0 <= scores["reasoning-gym"] <= 1.0
    assert loads == ["embedded:smollm2-135m"]  # one model load for the flow run


# -- end to end ------------------------------------------------------------------------------


@pytest.mark.slow
def test_one_fixed_generation_end_to_end(tmp_path):
    """The real flow and model on the baseline config (a two-program pool, so the pool's
    validation stays short), with an in-loop evaluation after the generation."""
    pool = tmp_path / "pool"
    pool.mkdir()
    for name in ("gcd.py", "chain_sum.py"):
        shutil.copy(RG_DIR / name, pool)
    cfg = yaml.safe_load((REPO / "configs/cpu-tiny-fixed.yaml").read_text())
    cfg["run"].update(name="fixed", root=str(tmp_path / "runs"))
    cfg["model"].update(max_new_tokens=48)
    cfg["designer"]["fixed_pool"] = [str(pool)]
    cfg["rollout"] = {"episodes_per_env": 2, "pool_sample": 2, "max_new_tokens": 24,
                      "max_turns": 2}
    cfg["validation"] = {"seeds": [0]}
    cfg["tracking"] = {"mlflow_uri": f"sqlite:///{tmp_path}/mlflow.db", "transcripts": 2}
    cfg["eval"] = {"every": 1, "suites": ["reasoning-gym"], "limit": 2}
    path = tmp_path / "fixed.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, PYTHONUNBUFFERED="1", PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, "-m", "spade_tasks.cli", "run", "--config", str(path)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]

    import duckdb

    con = duckdb.connect(str(tmp_path / "runs/fixed/spade.duckdb"), read_only=True)
    try:
        status, metrics = con.execute(
            "SELECT status, metrics FROM generations WHERE generation = 0").fetchone()
        designs = con.execute("SELECT count(*) FROM designs").fetchone()[0]
        played = {r[0] for r in con.execute(
            "SELECT DISTINCT e.class_name FROM episodes p JOIN environments e USING (env_id)"
        ).fetchall()}
        evals = con.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    finally:
        con.close()
    assert status == "done" and designs == 0
    assert played == {"GcdEnv", "ChainSumEnv"}
    assert evals == 2 and "eval.reasoning-gym" in json.loads(metrics)

"""End to end with the real embedded model: the Prefect flow, sandbox, DuckDB, DeepSpeed
step and MLflow, one generation after another, and exact resume after kill -9."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

TABLES = ["runs", "generations", "documents", "designs", "validations", "environments",
          "episodes", "turns", "regrets", "train_steps", "memory", "stages"]
REPO = Path(__file__).resolve().parent.parent


def tiny_config(tmp_path: Path, name: str, **sections) -> Path:
    """The embedded default, shrunk so a generation takes about a minute here."""
    cfg = yaml.safe_load((REPO / "configs/cpu-tiny.yaml").read_text())
    cfg["run"].update(name=name, root=str(tmp_path / "runs"))
    cfg["model"].update(max_new_tokens=48)
    # One revision round (cpu-tiny keeps it off; learn-s26 measured it): a 160-token
    # design seldom parses, so the real model rewrites drafts through the flow's
    # revision stages.
    cfg["designer"] = {"designs_per_generation": 2, "max_new_tokens": 160, "revisions": 1}
    cfg["rollout"] = {"episodes_per_env": 2, "pool_sample": 2, "max_new_tokens": 24,
                      "max_turns": 2}
    cfg["validation"] = {"seeds": [0, 1]}
    # The warm start as configured, at the smallest size: one real supervised step on
    # the word-step seeds, which fit 160-token designs (tests/test_warmstart.py runs
    # `spade warmstart` itself).
    cfg["warmstart"] = {**cfg.get("warmstart", {}), "steps": 1, "docs_per_program": 1,
                        "accepted_steps": 1}
    # Paths of the copied config, resolved where the original lives.
    cfg["warmstart"]["sources"] = [str((REPO / "configs" / p).resolve())
                                   for p in cfg["warmstart"].get("sources", [])]
    cfg["tracking"] = {"mlflow_uri": f"sqlite:///{tmp_path}/mlflow.db", "transcripts": 2}
    cfg.update(sections)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def spade_run(config: Path, cwd: Path, *args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PREFECT_HOME=str(cwd / "prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, "-m", "spade_tasks.cli", "run", "--config",
                             str(config), *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kw)


def counts(db: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def run_to_end(config: Path, cwd: Path, *args: str) -> str:
    p = spade_run(config, cwd, *args)
    out, _ = p.communicate(timeout=1500)
    assert p.returncode == 0, out[-4000:]
    return out


def kill_when(config: Path, cwd: Path, *, marker: str | None = None, delay: float = 0.0,
              path: Path | None = None) -> str:
    """Start a generation and SIGKILL its process group ``delay`` seconds after ``marker``
    is printed, or as soon as ``path`` exists. Fails if the run ends by itself first: a
    kill that comes too late would make the resume test pass without testing a resume."""
    p = spade_run(config, cwd, start_new_session=True)
    seen: list[str] = []
    marked = threading.Event()

    def read() -> None:
        for line in p.stdout:
            seen.append(line)
            if marker and marker in line:
                marked.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline, fire_at = time.time() + 1500, None
    while p.poll() is None:
        assert time.time() < deadline, "kill point never reached"
        if fire_at is None and marked.is_set():
            fire_at = time.time() + delay
        if (fire_at is not None and time.time() >= fire_at) or (path and path.exists()):
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    p.wait(timeout=60)
    reader.join(timeout=60)
    text = "".join(seen)
    assert p.returncode == -signal.SIGKILL, f"the run ended before its kill point:\n{text[-3000:]}"
    return text


@pytest.fixture(scope="module")
def first_generation(tmp_path_factory):
    """Generation 0 of a run, uninterrupted: the end-to-end test goes on from it and the
    resume test compares against it (one real generation fewer to wait for)."""
    tmp_path = tmp_path_factory.mktemp("e2e")
    config = tiny_config(tmp_path, "e2e")
    out = run_to_end(config, tmp_path)
    db = tmp_path / "runs/e2e/spade.duckdb"
    return config, tmp_path, out, counts(db), _took_step(db)


def test_two_generations_end_to_end(first_generation):
    config, tmp_path, out, c, _ = first_generation
    assert "generation 0 of run e2e" in out, out[-3000:]
    db = tmp_path / "runs/e2e/spade.duckdb"
    for table in TABLES:
        assert c[table] > 0, (table, c)

    import duckdb
    from mlflow import MlflowClient

    con = duckdb.connect(str(db), read_only=True)
    ckpt, parent_id, child_id = con.execute(
        "SELECT g.checkpoint, r.mlflow_run_id, g.mlflow_run_id FROM generations g"
        " JOIN runs r USING (run) WHERE g.generation = 0").fetchone()
    step0 = json.loads(con.execute("SELECT metrics FROM train_steps").fetchone()[0])
    stages = {r[0] for r in con.execute("SELECT stage FROM stages WHERE generation = 0").fetchall()}
    drafts = con.execute("SELECT design_idx, reasons, revises FROM designs WHERE generation = 0"
                         " ORDER BY design_idx").fetchall()
    con.close()
    # The revision round ran as stages of its own; each draft whose program failed to run
    # (and only those) was rewritten once, as a design numbered after the drafts.
    assert {"revise_environments", "validate_revisions"} <= stages
    from spade_tasks.designer import failure_of

    failed = [i for i, reasons, revises in drafts if revises is None and failure_of(reasons)]
    assert [r for _, _, r in drafts if r is not None] == failed
    if step0["train_samples"]:
        # cpu-tiny's updates a generation, each a real DeepSpeed step.
        want = yaml.safe_load((REPO / "configs/cpu-tiny.yaml").read_text())["training"]
        assert step0["train_updates"] == want["updates_per_generation"] > 1
        assert (Path(ckpt) / "config.json").is_file()
        assert (Path(ckpt) / "deepspeed" / "latest").is_file()  # the DeepSpeed engine's state
    else:  # no optimizer step, no checkpoint written
        assert ckpt is None and not (tmp_path / "runs/e2e/checkpoints").exists()

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    child = client.get_run(child_id)
    assert child.data.tags["mlflow.parentRunId"] == parent_id
    metrics = child.data.metrics
    assert {"validity_rate", "agent_reward", "regret", "time.rollout", "time.train_step"} <= set(metrics)
    # A step is taken whenever some advantage is non-zero; the tiny model often gives
    # every design the same rejection and every episode the same return.
    con = duckdb.connect(str(db), read_only=True)
    step = json.loads(con.execute("SELECT metrics FROM train_steps").fetchone()[0])
    con.close()
    assert ("loss" in metrics and math.isfinite(metrics["loss"])) or step["train_samples"] == 0
    assert metrics.get("train_updates", 0) == step.get("train_updates", 0)

    arts = {a.path for a in client.list_artifacts(child_id)}
    assert {"summary.json", "plots", "transcripts"} <= arts, arts
    assert client.get_run(parent_id).data.params["model.name"] == "embedded:smollm2-135m"

    # The next generation starts from generation 0's checkpoint.
    out = run_to_end(config, tmp_path)
    assert "generation 1 of run e2e" in out
    con = duckdb.connect(str(db), read_only=True)
    gens = con.execute("SELECT generation, status, checkpoint FROM generations ORDER BY 1").fetchall()
    loaded = con.execute("SELECT result FROM stages WHERE generation = 1 AND stage = 'train_step'"
                         ).fetchone()[0]
    warm = json.loads(con.execute("SELECT result FROM stages WHERE generation = 0 AND "
                                  "stage = 'warmstart'").fetchone()[0]).get("checkpoint")
    con.close()
    assert [g[:2] for g in gens] == [(0, "done"), (1, "done")]
    # generation 1 trained from generation 0's weights (the warm start's when generation
    # 0 took no step, the base model's when there was neither)
    assert (ckpt or warm or "embedded:smollm2-135m") in loaded


def test_generation_with_ray_task_runner(tmp_path):
    """Validation tasks fan out to a local Ray instance, reporting to our Prefect API."""
    pytest.importorskip("prefect_ray")
    config = tiny_config(tmp_path, "ray", orchestration={"task_runner": "ray", "max_workers": 2})
    out = run_to_end(config, tmp_path)
    assert "Creating a local Ray instance" in out
    assert "(validate_program pid=" in out  # the task ran in a Ray worker process
    assert "Starting temporary server" not in out.split("Creating a local Ray instance")[1]
    c = counts(tmp_path / "runs/ray/spade.duckdb")
    assert c["validations"] == c["designs"] == 2 and c["episodes"] > 0


def test_resume_after_kill_matches_uninterrupted_run(tmp_path, first_generation):
    # The reference: the same config's generation 0 run without a kill (the fixture's
    # counts were taken before the end-to-end test ran its generation 1).
    _, _, _, reference, reference_took_step = first_generation

    cfg = tiny_config(tmp_path, "resumed")
    # Mid-rollout: the stage takes about 10 s here (sandbox workers and decoding).
    out = kill_when(cfg, tmp_path, marker="rollout: started", delay=2)
    assert not re.search(r"Task run 'rollout-\w+' - Finished", out), "killed after the rollout"
    # Mid-training: while the checkpoint is being written, the riskiest moment for a
    # half-written file. The tiny model often gives every sample a zero advantage, and
    # then no step is taken and nothing written: kill as the stage starts instead.
    if reference["train_steps"] and reference_took_step:
        out = kill_when(cfg, tmp_path, path=tmp_path / "runs/resumed/checkpoints/gen-0000.tmp")
    else:
        out = kill_when(cfg, tmp_path, marker="train_step: started")
    assert "train_step: started" in out
    run_to_end(cfg, tmp_path)
    resumed = counts(tmp_path / "runs/resumed/spade.duckdb")
    assert resumed == reference
    leftovers = list((tmp_path / "runs/resumed/checkpoints").glob("*.tmp"))
    assert not leftovers


def _took_step(db: Path) -> bool:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT checkpoint FROM train_steps").fetchone()[0] is not None
    finally:
        con.close()


def test_served_deployment_runs_a_generation(tmp_path):
    """README's deployment commands: `prefect server start`, `spade serve`, then
    `prefect deployment run spade/generation` runs the next generation to completion."""
    from spade_tasks.training import _free_port

    port = _free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_API_URL=f"http://127.0.0.1:{port}/api", HF_HUB_OFFLINE="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
    bin_dir = Path(sys.executable).parent
    config = tiny_config(tmp_path, "served")
    procs = []
    try:
        server = subprocess.Popen([str(bin_dir / "prefect"), "server", "start", "--host",
                                   "127.0.0.1", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        procs.append(server)
        health = subprocess.run(
            [sys.executable, "-c", "import sys, time, urllib.request\n"
             f"url = 'http://127.0.0.1:{port}/api/health'\n"
             "for _ in range(240):\n"
             "    try:\n        urllib.request.urlopen(url, timeout=1); sys.exit(0)\n"
             "    except OSError:\n        time.sleep(0.5)\n"
             "sys.exit(1)"], timeout=180)
        assert health.returncode == 0, "prefect server did not come up"
        serve_log = open(tmp_path / "serve.log", "w")
        procs.append(subprocess.Popen([str(bin_dir / "spade"), "serve", "--config", str(config)],
                                      cwd=REPO, env=env, stdout=serve_log, stderr=subprocess.STDOUT))
        # The deployment exists once serve has registered it.
        for _ in range(120):
            ls = subprocess.run([str(bin_dir / "prefect"), "deployment", "ls"], env=env,
                                capture_output=True, text=True)
            if "spade/generation" in ls.stdout:
                break
            time.sleep(1)
        else:
            pytest.fail("deployment spade/generation never appeared: "
                        + (tmp_path / "serve.log").read_text()[-2000:])
        run = subprocess.run([str(bin_dir / "prefect"), "deployment", "run", "spade/generation",
                              "--watch", "--watch-timeout", "1500"], env=env, capture_output=True,
                             text=True, timeout=1600)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert "Completed" in run.stdout, run.stdout[-2000:]
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    c = counts(tmp_path / "runs/served/spade.duckdb")
    assert c["generations"] == 1 and c["episodes"] > 0 and c["train_steps"] == 1


def test_temporary_prefect_server_gets_time_for_its_first_start(monkeypatch):
    """A plain `spade run` in a new home timed out after Prefect's 20 s default while
    the server migrated its database (learn-s11's first try, 2 busy cores); the wait is
    at least SERVER_STARTUP_S, or the user's larger setting."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
                                  temporary_settings)

    from spade_tasks import orchestration

    waits = []
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(SubprocessASGIServer, "start",
                        lambda self, timeout=None: waits.append(timeout))
    monkeypatch.setattr(SubprocessASGIServer, "stop", lambda self: None)
    monkeypatch.setattr(orchestration, "_drain_prefect_workers", lambda: None)
    with orchestration.prefect_api() as url:
        assert url.startswith("http://127.0.0.1:")
    with temporary_settings({PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 600}):
        with orchestration.prefect_api():
            pass
    assert waits == [orchestration.SERVER_STARTUP_S, 600]


def test_a_prefect_server_that_never_answers_is_one_line_naming_the_way_out(monkeypatch):
    """A server starved of CPU (a niced `spade run` beside a busy one) timed out with
    Prefect's traceback and the server's whole output; it is one line now."""
    from prefect.server.api.server import SubprocessASGIServer

    from spade_tasks import orchestration
    from spade_tasks.errors import PrefectUnavailable

    def never_answers(self, timeout=None):
        raise RuntimeError("Timed out while attempting to connect to ephemeral Prefect API "
                           "server. stdout: migrating\nstill migrating")

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(SubprocessASGIServer, "start", never_answers)
    with pytest.raises(PrefectUnavailable) as err:
        with orchestration.prefect_api():
            pytest.fail("no API, yet the body ran")
    text = str(err.value)
    assert "\n" not in text and "PREFECT_API_URL" in text and "180 s" in text, text

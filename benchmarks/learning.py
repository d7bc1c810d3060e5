"""Does self-play learn? SPADE against the fixed-environment baseline, N generations each.

Runs ``spade run`` on the SPADE config and on the fixed baseline (each in its own run
folder, in a subprocess, as a user would), prints each run's per-generation curve from
``spade report`` (designs accepted as new, the designer's reward, the samples each role
trained on, win rates and regret), then evaluates both final checkpoints on a held-out
suite with the ``spade eval`` machinery and prints the two scores side by side.

    .venv/bin/python benchmarks/learning.py [--generations 8] [--suite word-games]
        [--limit 128] [--config configs/cpu-tiny.yaml]
        [--baseline configs/cpu-tiny-fixed.yaml] [--root DIR] [--spade-run NAME]

``--spade-run NAME`` takes the SPADE side from an existing run of ``--config`` (as
``spade run --config C --run-name NAME`` left it under the config's ``run.root``; it is
continued up to N generations if it has fewer), so a learning run already measured is
not run again; the baseline still runs here.

Not a test: it takes hours on the embedded default with 2 CPU cores. A run folder that
already holds generations is continued, so an interrupted benchmark resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


# Keys naming folders or files relative to the config's own folder (spade_tasks/config.py).
_PATH_KEYS = {"designer": ("fixed_pool", "seed_pool"), "warmstart": ("sources",),
              "training": ("deepspeed_config",)}


def _config(src: str, root: Path, name: str) -> Path:
    """A copy of config ``src`` in ``root``, its relative paths still pointing where
    the original's did."""
    cfg = yaml.safe_load(Path(src).read_text())
    here = Path(src).resolve().parent
    for section, keys in _PATH_KEYS.items():
        for key in keys:
            value = cfg.get(section, {}).get(key)
            if isinstance(value, list):
                cfg[section][key] = [str((here / v).resolve()) for v in value]
            elif isinstance(value, str):
                cfg[section][key] = str((here / value).resolve())
    cfg.setdefault("run", {}).update(name=name, root=str(root / "runs"))
    cfg["tracking"] = {**cfg.get("tracking", {}), "mlflow_uri": f"sqlite:///{root}/mlflow.db"}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _load(config: Path, run: str | None = None):
    from spade_tasks.config import load_config

    cfg = load_config(config)
    if run:
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"name": run})})
    return cfg


def _done(config: Path, run: str | None = None) -> int:
    from spade_tasks import report

    cfg = _load(config, run)
    db = cfg.run.root / cfg.run.name / "spade.duckdb"
    if not db.is_file():
        return 0
    obj, _ = report.report(cfg, mlflow=False)
    return sum(1 for g in obj["generations"] if g["designer_samples_trained"] is not None
               or g["agent_samples_trained"] is not None)


def _run(config: Path, generations: int, run: str | None = None) -> float:
    todo = generations - _done(config, run)
    if todo <= 0:
        return 0.0
    env = dict(os.environ, PYTHONUNBUFFERED="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               HF_HUB_OFFLINE="1")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spade_tasks.cli", "run", "--config", str(config),
                    "--generations", str(todo)] + (["--run-name", run] if run else []),
                   cwd=REPO, env=env, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO / "configs/cpu-tiny.yaml"))
    ap.add_argument("--baseline", default=str(REPO / "configs/cpu-tiny-fixed.yaml"))
    ap.add_argument("--generations", type=int, default=8)
    # word-games: the held-out suite a 135M agent scores on (reasoning-gym scored it 0).
    ap.add_argument("--suite", default="word-games")
    ap.add_argument("--limit", type=int, default=128)
    ap.add_argument("--root", default=str(REPO / "runs" / "bench-learning"))
    ap.add_argument("--spade-run", default=None,
                    help="an existing run of --config to take the SPADE side from")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)

    from spade_tasks import evaluation, report

    runs = {"spade": (Path(args.config), args.spade_run) if args.spade_run
            else (_config(args.config, root, "learning-spade"), None),
            "fixed": (_config(args.baseline, root, "learning-fixed"), None)}
    walls = {name: _run(path, args.generations, run) for name, (path, run) in runs.items()}
    scores = {}
    for name, (path, run) in runs.items():
        cfg = _load(path, run)
        obj, png = report.report(cfg)
        print(f"\n== {name} ({cfg.run.name}, {walls[name]:.0f} s this invocation; curves: {png})")
        print(report.table(obj["generations"]))
        ckpt = _last_checkpoint(cfg)
        res = evaluation.run_eval(cfg, args.suite, args.limit, ckpt)
        scores[name] = (res.score, res.n, ckpt)
    print(f"\n== held-out {args.suite}, {args.limit} items, greedy")
    base = scores["fixed"][0]
    for name, (score, n, ckpt) in scores.items():
        print(f"{name:6} {score:.3f} over {n} items ({score - base:+.3f} vs fixed)  {ckpt}")
    print(json.dumps({name: {"score": s, "n": n} for name, (s, n, _) in scores.items()}))


def _last_checkpoint(cfg) -> str | None:
    from spade_tasks.store import Store, latest_done_checkpoint

    with Store(cfg.run.root / cfg.run.name / "spade.duckdb") as store:
        row = latest_done_checkpoint(store, cfg.run.name)
    return row["checkpoint"] if row else None


if __name__ == "__main__":
    main()

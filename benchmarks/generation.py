"""Wall time of one self-play generation with a per-stage breakdown.

Runs the real flow (Prefect, sandbox, model, DeepSpeed, DuckDB, MLflow) on a config in
a fresh run folder, then prints each stage's share of the wall time. Goal: >= 80% in
model compute (design, rollout and training stages), Prefect and bookkeeping <= 5%.

    .venv/bin/python benchmarks/generation.py [--config configs/cpu-tiny.yaml]

Like `spade run`, the process first starts Prefect's temporary server, once for all
its generations (timed on its own line, outside the generations' wall time). On a
machine that has not validated the seeds before, the first generation also validates
them once (part of design_environments; later runs reuse the cached verdicts). Pass
--generations 2 to see a steady-state generation too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MODEL_STAGES = ("design_environments", "rollout", "train_step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(REPO / "configs/cpu-tiny.yaml"))
    ap.add_argument("--generations", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the run folder (checkpoints: ~1 GB)")
    args = ap.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    tmp = Path(tempfile.mkdtemp(prefix="spade-bench-"))
    cfg = yaml.safe_load(Path(args.config).read_text())
    cfg.setdefault("run", {}).update(name="bench", root=str(tmp / "runs"))
    cfg["tracking"] = {**cfg.get("tracking", {}), "mlflow_uri": f"sqlite:///{tmp}/mlflow.db"}
    config = tmp / "bench.yaml"
    config.write_text(yaml.safe_dump(cfg))

    from flows.generation import spade
    from spade_tasks.orchestration import flow_for, prefect_api
    from spade_tasks.config import load_config

    try:
        # As `spade run` does: one temporary Prefect server for all generations of the
        # process, started before the first (its start is reported on its own line).
        t0 = time.perf_counter()
        with prefect_api() as api_url:
            print(f"Prefect temporary server started in {time.perf_counter() - t0:.1f} s "
                  f"(once per process, before the first generation)")
            _run(flow_for(spade, load_config(config), api_url), config, args.generations)
    finally:
        if args.keep:
            print(f"run folder kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(spade, config: Path, generations: int) -> None:
    for _ in range(generations):
        t0 = time.perf_counter()
        summary = spade(config=str(config))
        wall = time.perf_counter() - t0  # includes Prefect's flow/task bookkeeping
        stages = summary["timings"]
        in_stages = sum(stages.values())
        model = sum(stages.get(s, 0.0) for s in MODEL_STAGES)
        print(f"\ngeneration {summary['generation']}: wall {wall:.1f} s")
        print(f"{'stage':24} {'seconds':>9} {'share':>7}")
        for name, sec in stages.items():
            print(f"{name:24} {sec:9.1f} {sec / wall:7.1%}")
        log = wall - in_stages
        print(f"{'flow, tasks, logging':24} {log:9.1f} {log / wall:7.1%}")
        print(f"model compute (design + rollout + train): {model / wall:.1%} (goal >= 80%); "
              f"Prefect and bookkeeping: {log / wall:.1%} (goal <= 5%)")
        if "rollout_tokens_per_s" in summary:
            train = (f"{summary['train_tokens_per_s']:.1f} tok/s" if "train_tokens_per_s" in summary
                     else "no update (every advantage was zero)")
            print(f"rollout {summary['rollout_tokens_per_s']:.1f} tok/s; train {train}")


if __name__ == "__main__":
    main()

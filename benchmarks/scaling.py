"""Train-step time at 1 and 2 DeepSpeed ranks (Ray actors), and the scaling efficiency.

Each rank is a Ray actor with one CPU (so one torch thread), the batch is the same
random-token batch as ``benchmarks/train_step.py``; the 2-rank step trains each rank on
half the micro-batches and all-reduces gradients (gloo). Efficiency = speed-up / ranks.
Rollout engines are not Ray actors yet (README, "Limits"), so there is no rollout row.

    .venv/bin/python benchmarks/scaling.py [--ranks 1 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_step import MODEL, make_batch  # noqa: E402

from spade_tasks.config import TrainingConfig  # noqa: E402
from spade_tasks.llm.loading import load_tokenizer, resolve_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--completion", type=int, default=192)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--deepspeed-config", default=str(TrainingConfig().deepspeed_config))
    a = ap.parse_args()

    import ray

    from spade_tasks.train_ranks import RankedTrainer

    ray.init(num_cpus=max(a.ranks), include_dashboard=False, log_to_driver=False)
    tok = load_tokenizer(resolve_model(MODEL))
    samples = make_batch(a.samples, a.prompt, a.completion, len(tok), 0)
    tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    cfg = TrainingConfig(lr=1e-6, micro_batch_size=a.micro_batch,
                         deepspeed_config=a.deepspeed_config)
    print(f"batch: {a.samples} x ({a.prompt} + {a.completion}) = {tokens} tokens, "
          f"micro-batch {a.micro_batch}, {Path(a.deepspeed_config).name}, one CPU per rank")
    times = {}
    for world in a.ranks:
        t0 = time.perf_counter()
        trainer = RankedTrainer(MODEL, cfg, world)
        start = time.perf_counter() - t0
        trainer.step(samples)  # warm-up
        secs = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            trainer.step(samples)
            secs.append(time.perf_counter() - t0)
        trainer.close()
        times[world] = statistics.median(secs)
        print(f"  {world} rank(s): start {start:.1f}s, steps {', '.join(f'{s:.1f}' for s in secs)}s",
              flush=True)
    base = times[a.ranks[0]]
    print(f"{'ranks':>5s} {'s/step':>8s} {'tok/s':>8s} {'speed-up':>9s} {'efficiency':>10s}")
    for world, s in times.items():
        up = base / s
        print(f"{world:5d} {s:8.2f} {tokens / s:8.1f} {up:8.2f}x {up / (world / a.ranks[0]):10.0%}")
    ray.shutdown()


if __name__ == "__main__":
    main()

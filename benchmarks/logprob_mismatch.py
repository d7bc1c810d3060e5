"""How far the trainer's log-probs are from the rollout's, at each precision.

The policy-gradient step's importance ratio is exp(trainer log-prob - rollout log-prob);
on-policy it should be 1. This samples completions with the inference backend (the
rollout's code path, ``model.dtype`` = the precision), then recomputes the same tokens'
log-probs with the DeepSpeed training engine at the same precision (``bf16.enabled``),
and prints the gap per token. ``auto`` is what a run picks on this machine.

    .venv/bin/python benchmarks/logprob_mismatch.py [--precision auto float32 bfloat16]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from spade_tasks.config import ModelConfig, TrainingConfig  # noqa: E402
from spade_tasks.llm.base import SamplingParams, make_backend  # noqa: E402
from spade_tasks.llm.loading import resolve_dtype  # noqa: E402
from spade_tasks.training import TrainEngine, TrainSample  # noqa: E402

PROMPTS = [
    "Explain in two sentences why the sky is blue.",
    "Write a short Python function that reverses a string.",
    "You are in a maze. The exit is north. What is your next move?",
    "List three prime numbers greater than 50 and say why they are prime.",
    "Summarise the rules of tic-tac-toe.",
    "What is 17 times 23? Show your working.",
    "Describe a rainy morning in a city.",
    "Give one tip for debugging a crashing program.",
]


def measure(precision: str, n_prompts: int, new_tokens: int, seed: int) -> dict:
    dtype = resolve_dtype(precision)
    backend = make_backend(ModelConfig(dtype=precision, max_new_tokens=new_tokens,
                                       max_batch=n_prompts))
    params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, seed=seed)
    convs = [[{"role": "user", "content": p}] for p in PROMPTS[:n_prompts]]
    comps = [c for c in backend.generate(convs, params) if c.token_ids]
    backend.close()

    ds = json.loads(TrainingConfig().deepspeed_config.read_text())
    ds["bf16"] = {"enabled": dtype == "bfloat16"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(ds, f)
    cfg = TrainingConfig(deepspeed_config=f.name, micro_batch_size=4)
    engine = TrainEngine.from_model_name("embedded:smollm2-135m", cfg)
    os.unlink(f.name)
    samples = [TrainSample("agent", c.prompt_token_ids, c.token_ids, c.logprobs, 0.0)
               for c in comps]
    trained = engine.logprobs(samples)
    diffs = [t - r for c, lp in zip(comps, trained) for t, r in zip(lp, c.logprobs)]
    ratios = [math.exp(d) for d in diffs]
    return {
        "precision": f"{precision} ({dtype})",
        "tokens": len(diffs),
        "mean_abs": statistics.fmean(abs(d) for d in diffs),
        "p99_abs": sorted(abs(d) for d in diffs)[int(0.99 * (len(diffs) - 1))],
        "max_abs": max(abs(d) for d in diffs),
        "mean_ratio": statistics.fmean(ratios),
        # Tokens the PPO clip (0.8, 1.28) would treat as off-policy with no update at all.
        "outside_clip": sum(not 0.8 <= r <= 1.28 for r in ratios) / len(ratios),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", nargs="+", default=["auto"],
                    choices=["auto", "float32", "bfloat16"])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = [measure(p, a.prompts, a.new_tokens, a.seed) for p in a.precision]
    print(f"{'precision':22s} {'tokens':>6s} {'mean|d|':>9s} {'p99|d|':>9s} {'max|d|':>9s}"
          f" {'mean ratio':>10s} {'outside clip':>12s}")
    for r in rows:
        print(f"{r['precision']:22s} {r['tokens']:6d} {r['mean_abs']:9.2e} {r['p99_abs']:9.2e}"
              f" {r['max_abs']:9.2e} {r['mean_ratio']:10.5f} {r['outside_clip']:12.1%}")


if __name__ == "__main__":
    main()

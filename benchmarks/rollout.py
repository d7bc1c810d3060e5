"""Rollout throughput: agent tokens/s of a whole rollout phase (sandbox workers, chat
history, context checks, lockstep turns) against raw batched ``backend.generate`` over
the very same per-turn batches of conversations, replayed in the same process. Prints
medians and the ratio; goal: rollout >= 0.9x raw.

    .venv/bin/python benchmarks/rollout.py [--envs 8] [--episodes 2] [--turns 3] [--tokens 16]

The replay reuses each turn's sampling parameters, so it generates (nearly) the same
tokens; what it leaves out is exactly the rollout's own overhead. On a shared machine
the two sides' generate times drift apart by tens of percent; the share of rollout time
spent outside ``generate`` is the noise-free measure of that overhead. ``--one-call`` also
times every prompt of the phase in a single generate call: an upper bound no multi-turn
rollout can reach (later turns depend on earlier ones), shown for scale.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from spade_tasks.config import ModelConfig, RolloutConfig, SandboxConfig  # noqa: E402
from spade_tasks.environments import record_from_meta, seed_paths  # noqa: E402
from spade_tasks.llm.base import Backend, SamplingParams, make_backend  # noqa: E402
from spade_tasks.rollout import rollout  # noqa: E402
from spade_tasks.sandbox import Sandbox  # noqa: E402
from spade_tasks.validation import env_class_name  # noqa: E402


class Recording(Backend):
    """Passes calls through to a backend, keeping each call's inputs and its time."""

    name = "recording"

    def __init__(self, inner: Backend):
        self.inner = inner
        self.calls: list[tuple[list[list[dict]], object]] = []
        self.seconds = 0.0

    @property
    def tokenizer(self):
        return self.inner.tokenizer

    def generate(self, conversations, params, tools=None):
        t = time.perf_counter()
        out = self.inner.generate(conversations, params, tools)
        self.seconds += time.perf_counter() - t
        self.calls.append(([list(c) for c in conversations], params))
        return out

    def load_weights(self, checkpoint_dir):
        self.inner.load_weights(checkpoint_dir)


def seed_records(sandbox: Sandbox, n: int):
    recs = []
    for path in seed_paths()[:n]:
        source = path.read_text(encoding="utf-8")
        with sandbox.open(source, env_class_name(source)) as ep:
            recs.append(record_from_meta(source, ep.meta, "seed", str(path)))
    return recs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=8)
    ap.add_argument("--episodes", type=int, default=2, help="G per arm")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=16, help="max new tokens per turn")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tier", default="bwrap", choices=["bwrap", "process"])
    ap.add_argument("--one-call", action="store_true")
    args = ap.parse_args()

    t = time.perf_counter()
    backend = make_backend(ModelConfig(max_new_tokens=args.tokens, max_batch=args.max_batch))
    sandbox = Sandbox(SandboxConfig(tier=args.tier))
    envs = seed_records(sandbox, args.envs)
    hints = {r.env_id: "Read the instructions again and act step by step." for r in envs
             if not r.has_hint}
    cfg = RolloutConfig(episodes_per_env=args.episodes, max_turns=args.turns,
                        max_new_tokens=args.tokens)
    print(f"set-up {time.perf_counter() - t:.1f}s; {len(envs)} environments x {args.episodes} "
          f"episodes x 2 arms, <= {args.turns} turns x {args.tokens} tokens, "
          f"max_batch {args.max_batch}")
    backend.generate([[{"role": "user", "content": "Hello"}]] * 2,
                     SamplingParams(max_new_tokens=4))  # warm-up: first-call allocations

    rows = []
    for rep in range(args.repeats):
        rec = Recording(backend)
        t = time.perf_counter()
        results = rollout(rec, sandbox, envs, cfg, seed=rep, hints=hints)
        wall = time.perf_counter() - t
        tokens = sum(len(turn.token_ids) for r in results for turn in r.turns)

        t = time.perf_counter()
        raw_tokens = sum(len(c.token_ids) for convs, params in rec.calls
                         for c in backend.generate(convs, params))
        raw = time.perf_counter() - t
        ratio = (tokens / wall) / (raw_tokens / raw)
        rows.append((wall, tokens, rec.seconds, raw, raw_tokens, ratio))
        print(f"[{rep}] rollout {tokens} tok in {wall:.2f}s ({tokens / wall:.1f} tok/s; "
              f"{rec.seconds:.2f}s in generate, {wall - rec.seconds:.2f}s outside, "
              f"{len(rec.calls)} calls of "
              f"{[len(c) for c, _ in rec.calls]}) | raw replay {raw_tokens} tok in {raw:.2f}s "
              f"({raw_tokens / raw:.1f} tok/s) | ratio {ratio:.3f}")
        if args.one_call and rep == 0:
            allc = [c for convs, _ in rec.calls for c in convs]
            t = time.perf_counter()
            n = sum(len(c.token_ids) for c in backend.generate(allc, rec.calls[0][1]))
            one = time.perf_counter() - t
            print(f"    one call over all {len(allc)} prompts: {n} tok in {one:.2f}s "
                  f"({n / one:.1f} tok/s; upper bound)")

    ratio = statistics.median(r[5] for r in rows)
    overhead = statistics.median((r[0] - r[2]) / r[0] for r in rows)
    print(f"median ratio rollout/raw tokens/s: {ratio:.3f} (goal >= 0.9); "
          f"median share of rollout time outside generate: {overhead:.1%}")


if __name__ == "__main__":
    main()

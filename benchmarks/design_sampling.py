"""Designs accepted as new under different sampling settings, at one set of weights.

Runs ``spade design`` (the flow's own design, validation and recording stages) for a
few rounds under each nucleus mass, each setting in its own run, so each setting's
memory fills only with its own accepted designs; documents and seeds are the same for
every setting, since they follow the run seed and the generation. Without checkpoints of
their own the runs design on the config's first warm start (cached by content), as a
run's first generation does. Prints accepted designs and rejections by check per setting,
and each setting's accepted count as a ratio of the first (the baseline).

    python benchmarks/design_sampling.py [--config C] [--top-p 1.0 0.8] [--rounds 4]
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from spade_tasks.config import load_config
from spade_tasks.design_command import run_design


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=str(Path(__file__).parents[1] / "configs/cpu-tiny.yaml"))
    ap.add_argument("--top-p", type=float, nargs="+", default=[1.0, 0.8],
                    help="designer.top_p values; the first is the baseline")
    ap.add_argument("--rounds", type=int, default=4, help="design steps per setting")
    ap.add_argument("--root", default=None, help="where the runs go (default: a temp folder)")
    args = ap.parse_args()
    base = load_config(args.config)
    root = Path(args.root or tempfile.mkdtemp(prefix="spade-design-sampling-"))
    results = []
    for top_p in args.top_p:
        cfg = base.model_copy(update={
            "run": base.run.model_copy(update={"name": f"top-p-{top_p}", "root": root}),
            "designer": base.designer.model_copy(update={"top_p": top_p})})
        designs, accepted, reasons = 0, 0, Counter()
        for i in range(args.rounds):
            s = run_design(cfg)
            designs, accepted = designs + s.designs, accepted + s.accepted
            reasons.update(s.reasons)
            print(f"top_p {top_p}: round {i}: {s.accepted}/{s.designs} accepted as new "
                  f"({s.seconds:.0f} s)", flush=True)
        results.append((f"top_p {top_p:4}", designs, accepted, reasons))
    print(f"\nruns in {root}")
    print_comparison(results, "the baseline")


def print_comparison(results: list[tuple[str, int, int, Counter]], baseline: str) -> None:
    """One line per setting (label, designs, accepted as new, rejections by check): its
    accepted count as a ratio of the first setting's, named ``baseline``."""
    first = max(results[0][2], 1)
    for label, designs, accepted, reasons in results:
        listed = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        print(f"{label}: {accepted:3}/{designs} accepted as new "
              f"(x{accepted / first:.2f} of {baseline}); rejected: {listed}")


if __name__ == "__main__":
    main()

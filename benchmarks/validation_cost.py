"""Wall time of validating every seed environment, uncached, check by check.

The flow validates every design, so what the checker costs per program matters. Prints
seconds per seed and per check, summed over the seeds, and the total; run it before and
after a change to the checker to see what the change adds. Also prints each seed's best
uninformed return (floor_gap: what FLOOR_MARGIN is chosen against) and its slowest call
and peak memory (resource_bounds).

    python benchmarks/validation_cost.py [--all]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from spade_tasks.config import SandboxConfig, ValidationConfig
from spade_tasks.environments import seed_paths
from spade_tasks.sandbox import Sandbox
from spade_tasks.validation import validate_source


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="run every check (spade validate --all)")
    args = ap.parse_args()
    sandbox, cfg = Sandbox(SandboxConfig()), ValidationConfig()
    per_check: dict[str, float] = defaultdict(float)
    total = 0.0
    for path in seed_paths():
        t0 = time.perf_counter()
        report = validate_source(path.read_text(), sandbox, cfg, str(path), run_all=args.all)
        dt = time.perf_counter() - t0
        total += dt
        for c in getattr(report, "checks", []):
            per_check[c.name] += c.seconds
        print(f"{path.stem:28} {dt:6.2f} s  {'accepted' if report.accepted else report.reasons}")
        for c in report.checks:
            if c.name in ("floor_gap", "resource_bounds"):
                print(f"    {c.name}: {c.detail}")
    print(f"{'all seeds':28} {total:6.2f} s")
    for name, s in per_check.items():
        print(f"  {name:24} {s:6.2f} s ({s / total:5.1%})")


if __name__ == "__main__":
    main()

"""Has the designer learned? Designs accepted as new at a run's checkpoints against the
warm start, each on the same documents and a fresh memory.

A run's own curve mixes two things: the designer's weights, and the memory its accepted
designs grew, against which every later design is judged a duplicate. This probe holds
the second still: each set of weights designs ``--n`` programs as generation 0 of a run
of its own (``spade design``: the flow's design, validation and recording stages), so
documents, variant programs and memory are the same for all of them and only the weights
differ. The first line is the config's warm start (cached by content), the baseline; each
checkpoint's accepted count is printed as a ratio of it.

    python benchmarks/designer_probe.py --checkpoint runs/R/checkpoints/gen-0007 [--n 32]
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from design_sampling import print_comparison  # this folder: scripts run as benchmarks/NAME.py
from spade_tasks.config import Config, load_config
from spade_tasks.design_command import run_design


def probe_config(base: Config, name: str, root: Path, checkpoint: Path | None) -> Config:
    """``base`` as a run of its own; with a checkpoint, designing on its weights as they
    are (no warm start on top)."""
    update = {"run": base.run.model_copy(update={"name": name, "root": root})}
    if checkpoint is not None:
        update["model"] = base.model.model_copy(update={"name": str(checkpoint.resolve())})
        update["warmstart"] = base.warmstart.model_copy(update={"enabled": False})
    return base.model_copy(update=update)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=str(Path(__file__).parents[1] / "configs/cpu-tiny.yaml"))
    ap.add_argument("--checkpoint", type=Path, nargs="+", required=True,
                    help="checkpoint folders of a run (runs/R/checkpoints/gen-NNNN)")
    ap.add_argument("--n", type=int, default=32, help="designs per set of weights")
    ap.add_argument("--root", default=None, help="where the probe runs go (default: a temp folder)")
    args = ap.parse_args()
    for path in args.checkpoint:
        if not (path / "config.json").is_file():
            raise SystemExit(f"designer_probe: {path}: not a checkpoint folder (no config.json)")
    base = load_config(args.config)
    root = Path(args.root or tempfile.mkdtemp(prefix="spade-designer-probe-"))
    weights: list[tuple[str, Path | None]] = [("warm start", None)]
    weights += [(str(p), p) for p in args.checkpoint]
    results = []
    for i, (label, checkpoint) in enumerate(weights):
        summary = run_design(probe_config(base, f"probe-{i}", root, checkpoint), n=args.n)
        print(f"{label}: {summary.accepted}/{summary.designs} accepted as new "
              f"({summary.seconds:.0f} s)", flush=True)
        results.append((label, summary.designs, summary.accepted, Counter(summary.reasons)))
    print(f"\nprobe runs in {root}; documents and memory the same for every line")
    print_comparison(results, "the warm start")


if __name__ == "__main__":
    main()

"""``spade design``: one designer step outside the flow, through the flow's own stage
functions on the runtime the flow uses, so its designs are recorded exactly as a flow
generation records them:

    corpus.sample_stage -> designer.design_stage -> designer.validate_program (each
    design) -> designer.apply_reports

It lives apart from ``designer`` because it builds a ``Runtime``, whose training engine
imports the designer (``stage_runtime.py`` says why that would be an import loop).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from spade_tasks import corpus, designer
from spade_tasks.config import Config
from spade_tasks.llm.base import Backend
from spade_tasks.runtime import Runtime
from spade_tasks.sandbox import Sandbox
from spade_tasks.store import Store, queries
from spade_tasks.warmstart import first_weights


@dataclass(frozen=True)
class DesignSummary:
    """What ``run_design`` did, for the CLI's output."""

    run: str
    generation: int
    designs: int
    accepted: int
    env_ids: list[str]
    reasons: dict[str, int]
    """Rejections counted by check name (the part of a reason before the colon), of each
    design's last draft."""
    seconds: float
    revisions: int = 0
    """Drafts rewritten in revision rounds (``designer.revisions``, ``designer.revise_on``)."""

    def to_json(self) -> dict:
        return {"run": self.run, "generation": self.generation, "designs": self.designs,
                "accepted": self.accepted, "env_ids": self.env_ids, "reasons": self.reasons,
                "seconds": round(self.seconds, 1), "revisions": self.revisions}


def next_generation(store: Store, run: str) -> int:
    """One past the highest generation with recorded designs (0 for a new run)."""
    last = queries.last_design_generation(store, run)
    return 0 if last is None else last + 1


def summarize(run: str, generation: int, rows: list[dict], seconds: float) -> DesignSummary:
    """The summary of one generation's recorded ``designs`` rows: a design is its first
    draft and its revisions, and counts as its last draft did."""
    revised = {r.get("revises") for r in rows} - {None}
    last = [r for r in rows if r["design_idx"] not in revised]
    reasons = Counter(r["reasons"][0].split(":", 1)[0] for r in last
                      if not r["accepted"] and r["reasons"])
    return DesignSummary(run, generation, sum(r.get("revises") is None for r in rows),
                         sum(bool(r["accepted"]) for r in rows),
                         [r["env_id"] for r in rows if r["env_id"]], dict(reasons), seconds,
                         revisions=sum(r.get("revises") is not None for r in rows))


def run_design(cfg: Config, n: int | None = None, store_path: str | Path | None = None,
               generation: int | None = None, backend: Backend | None = None,
               sandbox: Sandbox | None = None) -> DesignSummary:
    """Sample documents, design, validate and record ``n`` environments for one generation
    of ``cfg.run.name`` (default: the next generation; ``n`` overrides the config's
    ``designs_per_generation``; the store defaults to ``<run.root>/<run.name>/spade.duckdb``;
    the backend to the run's latest weights, as the flow's, and for a run with none yet to
    the first warm start's when the config has one, as the flow's first generation
    designs; a given backend is used as it is and left open).

    The stages run without ``orchestration.staged``: no stage records, so no resume. A
    stage record would make the next ``spade run`` of this run skip its own design stages
    and train on these designs, which skipped the warm start that precedes design in the
    flow and may number ``n``, not ``designs_per_generation``; and this generation is one
    past the last designed, not one the flow began (``Runtime.begin_generation``). As in
    the flow, ``design_stage`` records the designs before they are validated, so a command
    stopped during validation leaves them unvalidated, and the next ``spade design``
    designs the generation after them."""
    t0 = time.perf_counter()
    if n:
        cfg = cfg.model_copy(update={"designer": cfg.designer.model_copy(
            update={"designs_per_generation": n})})
    store = Store(store_path or cfg.run.root / cfg.run.name / "spade.duckdb")
    rt = Runtime(cfg, store, _backend=backend, _sandbox=sandbox)
    if backend is not None:
        rt._backend_checkpoint = rt.latest_checkpoint()  # so backend() never reloads it
    try:
        gen = next_generation(store, rt.run) if generation is None else generation
        if backend is None and rt.latest_checkpoint() is None:
            # A run with no weights of its own: the flow's first generation designs after
            # its warm start, so these designs do too.
            rt.fallback_weights = first_weights(
                cfg, log=lambda msg: print(msg, file=sys.stderr, flush=True))
        documents = corpus.sample_stage(rt, gen)
        drafts = designer.design_stage(rt, gen, documents)
        for r in range(-1, cfg.designer.revisions):
            if r >= 0:  # as the flow: each round rewrites the last round's crashed drafts
                drafts = designer.revise_stage(rt, gen, drafts, r)
            recorded = designer.recorded_designs(store, rt.run, gen, drafts)
            # The flow fans validate_program out as Prefect tasks on its task runner;
            # here a thread pool of the thread runner's size runs the same function.
            with ThreadPoolExecutor(max_workers=cfg.orchestration.max_workers) as pool:
                reports = list(pool.map(lambda d: designer.validate_program(
                    d.source, rt.sandbox.cfg, cfg.validation), recorded))
            designer.apply_reports(rt, gen, recorded, reports)
        return summarize(rt.run, gen, queries.designs_of(store, rt.run, gen),
                         time.perf_counter() - t0)
    finally:
        if backend is None:
            rt.close()  # the backend it built, and the store
        else:
            store.close()


__all__ = ["DesignSummary", "next_generation", "summarize", "run_design"]

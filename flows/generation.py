"""One SPADE generation as a Prefect flow: flow ``spade``, deployment ``generation``.

    sample_documents -> warmstart -> design_environments -> validate_environments
    -> [revise_environments -> validate_revisions] x designer.revisions
    -> rollout (no hint, hint) -> score_regret -> train_step -> update_memory
    -> evaluate_generation -> log_generation

``warmstart`` fine-tunes the designer role (``warmstart.enabled``; off: it does nothing).
``designer.mode: fixed`` (the fixed-environment baseline) runs the same flow with the
first four stages empty, so the agent trains on the fixed pool alone;
``evaluate_generation`` runs held-out suites every ``eval.every`` generations.

Each stage is a task wrapping a plain function of ``spade_tasks``; it takes the typed
records (``spade_tasks/records.py``) of the stages it depends on and returns its own, so
the data edges below are Prefect's graph. Its rows go to the run's DuckDB in one
transaction and the stage is then marked finished there, with its record. A rerun of
the flow after a crash (kill -9 included) skips finished stages (their records are
loaded back) and redoes the interrupted one, whose rows replace any partial ones: no
duplicates, nothing lost.
Retries are only on the stages whose failures can be transient (model serving); a
deterministic failure is not retried.
"""

from __future__ import annotations

import time

from prefect import flow, task, unmapped
from prefect.cache_policies import NO_CACHE

from spade_tasks import corpus, designer, regret, tracking
from spade_tasks import memory as memory_stage
from spade_tasks import rollout as rollout_stage
from spade_tasks.config import Config, SandboxConfig, ValidationConfig, load_config
from spade_tasks.evaluation import eval_stage
from spade_tasks.orchestration import finished, staged, transient
from spade_tasks.records import (Designs, Documents, EvalReport, MemoryReport, Played, Scores,
                                 TrainReport, Verdicts, WarmstartReport)
from spade_tasks.runtime import open_runtime


@task(name="sample_documents", cache_policy=NO_CACHE)
def sample_documents(cfg: Config, generation: int) -> Documents:
    rt = open_runtime(cfg)
    return staged(rt, generation, "sample_documents", Documents,
                  lambda: corpus.sample_stage(rt, generation))


@task(name="warmstart", cache_policy=NO_CACHE)
def warmstart(cfg: Config, generation: int) -> WarmstartReport:
    from spade_tasks import warmstart as warm

    rt = open_runtime(cfg)
    return staged(rt, generation, "warmstart", WarmstartReport,
                  lambda: warm.warmstart_stage(rt, generation))


@task(name="design_environments", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: transient(state))
def design_environments(cfg: Config, generation: int, documents: Documents) -> Designs:
    rt = open_runtime(cfg)
    return staged(rt, generation, "design_environments", Designs,
                  lambda: designer.design_stage(rt, generation, documents))


@task(name="revise_environments", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: transient(state))
def revise_environments(cfg: Config, generation: int, designs: Designs, round_: int) -> Designs:
    rt = open_runtime(cfg)
    return staged(rt, generation, _round_stage("revise_environments", round_), Designs,
                  lambda: designer.revise_stage(rt, generation, designs, round_))


def _round_stage(name: str, round_: int) -> str:
    """A revision round's stage name: ``name`` for round 0, then ``name_2``, ... (each
    round is finished, and resumed, on its own)."""
    return name if round_ == 0 else f"{name}_{round_ + 1}"


@task(name="validate_program", cache_policy=NO_CACHE)
def validate_program(source: str | None, sandbox_cfg: SandboxConfig,
                     validation_cfg: ValidationConfig) -> dict:
    return designer.validate_program(source, sandbox_cfg, validation_cfg)


@task(name="record_validations", cache_policy=NO_CACHE)
def record_validations(cfg: Config, generation: int, designs: Designs,
                       reports: list[dict], stage: str = "validate_environments") -> Verdicts:
    rt = open_runtime(cfg)
    recorded = designer.recorded_designs(rt.store, rt.run, generation, designs)
    return staged(rt, generation, stage, Verdicts,
                  lambda: designer.apply_reports(rt, generation, recorded, reports))


def validate_environments(cfg: Config, generation: int, designs: Designs,
                          stage: str = "validate_environments") -> Verdicts:
    """Validate every design as its own task (fanned out on the task runner: threads,
    or Ray workers), then record the verdicts in one transaction (as ``stage``: a
    revision round validates under its own name)."""
    rt = open_runtime(cfg)
    done = finished(rt, generation, stage, Verdicts)
    if done is not None:
        return done
    t0 = time.perf_counter()
    recorded = designer.recorded_designs(rt.store, rt.run, generation, designs)
    futures = validate_program.map([d.source for d in recorded], unmapped(cfg.sandbox),
                                   unmapped(cfg.validation))
    reports = [f.result() for f in futures]
    verdicts = record_validations(cfg, generation, designs, reports, stage)
    rt.timings[stage] = time.perf_counter() - t0
    return verdicts


@task(name="rollout", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: transient(state))
def rollout(cfg: Config, generation: int, verdicts: Verdicts) -> Played:
    rt = open_runtime(cfg)
    return staged(rt, generation, "rollout", Played,
                  lambda: rollout_stage.rollout_stage(rt, generation, verdicts))


@task(name="score_regret", cache_policy=NO_CACHE)
def score_regret(cfg: Config, generation: int, played: Played) -> Scores:
    rt = open_runtime(cfg)
    return staged(rt, generation, "score_regret", Scores,
                  lambda: regret.score_stage(rt, generation, played))


@task(name="train_step", cache_policy=NO_CACHE)
def train_step(cfg: Config, generation: int, scores: Scores, played: Played) -> TrainReport:
    # torch loads with the training module (3 s): only when a step is due, not at flow import.
    from spade_tasks import training

    rt = open_runtime(cfg)
    return staged(rt, generation, "train_step", TrainReport,
                  lambda: training.train_stage(rt, generation, scores, played))


@task(name="update_memory", cache_policy=NO_CACHE)
def update_memory(cfg: Config, generation: int, verdicts: Verdicts,
                  scores: Scores) -> MemoryReport:
    rt = open_runtime(cfg)
    return staged(rt, generation, "update_memory", MemoryReport,
                  lambda: memory_stage.update_stage(rt, generation, verdicts, scores))


@task(name="evaluate_generation", cache_policy=NO_CACHE)
def evaluate_generation(cfg: Config, generation: int, trained: TrainReport) -> EvalReport:
    rt = open_runtime(cfg)
    return staged(rt, generation, "evaluate_generation", EvalReport,
                  lambda: eval_stage(rt, generation, trained))


@task(name="log_generation", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def log_generation(cfg: Config, generation: int, summary: dict) -> dict:
    rt = open_runtime(cfg)
    return tracking.log_stage(rt, generation, summary)


@flow(name="spade")
def spade(config: str = "configs/cpu-tiny.yaml", run_name: str | None = None) -> dict:
    """Run the next generation of a self-play run (or finish an interrupted one)."""
    cfg = load_config(config)
    if run_name:
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"name": run_name})})
    rt = open_runtime(cfg)
    g = rt.current_generation()
    rt.begin_generation(g)
    rt.timings.clear()
    t0 = time.perf_counter()

    docs = sample_documents(cfg, g)
    warm = warmstart(cfg, g)
    designs = design_environments(cfg, g, docs)
    verdicts = validate_environments(cfg, g, designs)
    drafts, revisions = designs, 0
    for r in range(cfg.designer.revisions):
        drafts = revise_environments(cfg, g, drafts, r)
        revisions += len(drafts.design_ids)
        verdicts = verdicts.joined(validate_environments(
            cfg, g, drafts, _round_stage("validate_revisions", r)))
    played = rollout(cfg, g, verdicts)
    scores = score_regret(cfg, g, played)
    trained = train_step(cfg, g, scores, played)
    memory = update_memory(cfg, g, verdicts, scores)
    evals = evaluate_generation(cfg, g, trained)

    summary = {"generation": g, **docs.to_summary(), **designs.to_summary(),
               "revisions": revisions,
               **verdicts.to_summary(), **played.to_summary(), **scores.to_summary(),
               **trained.to_summary(), **memory.to_summary(), **evals.to_summary(),
               **warm.to_summary(), "wall_s": time.perf_counter() - t0,
               "timings": dict(rt.timings)}
    return log_generation(cfg, g, summary)

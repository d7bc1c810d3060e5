"""One SPADE generation as a Prefect flow: flow ``spade``, deployment ``generation``.

    sample_documents -> warmstart -> design_environments -> validate_environments
    -> rollout (no hint, hint) -> score_regret -> train_step -> update_memory
    -> evaluate_generation -> log_generation

``warmstart`` fine-tunes the designer role (``warmstart.enabled``; off: it does nothing).
``designer.mode: fixed`` (the fixed-environment baseline) runs the same flow with the
first four stages empty, so the agent trains on the fixed pool alone;
``evaluate_generation`` runs held-out suites every ``eval.every`` generations.

Each stage is a task wrapping a plain function of ``spade_tasks``; its rows go to the
run's DuckDB in one transaction and the stage is then marked finished there. A rerun of
the flow after a crash (kill -9 included) skips finished stages and redoes the
interrupted one, whose rows replace any partial ones: no duplicates, nothing lost.
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
from spade_tasks.orchestration import staged, transient
from spade_tasks.runtime import open_runtime


@task(name="sample_documents", cache_policy=NO_CACHE)
def sample_documents(cfg: Config, generation: int) -> list[str]:
    rt = open_runtime(cfg)
    return staged(rt, generation, "sample_documents",
                  lambda: corpus.sample_stage(rt, generation))


@task(name="warmstart", cache_policy=NO_CACHE)
def warmstart(cfg: Config, generation: int) -> dict:
    from spade_tasks import warmstart as warm

    rt = open_runtime(cfg)
    return staged(rt, generation, "warmstart", lambda: warm.warmstart_stage(rt, generation))


@task(name="design_environments", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: transient(state))
def design_environments(cfg: Config, generation: int, doc_ids: list[str]) -> list[int]:
    rt = open_runtime(cfg)
    return staged(rt, generation, "design_environments",
                  lambda: designer.design_stage(rt, generation, doc_ids))


@task(name="validate_program", cache_policy=NO_CACHE)
def validate_program(source: str | None, sandbox_cfg: SandboxConfig,
                     validation_cfg: ValidationConfig) -> dict:
    return designer.validate_program(source, sandbox_cfg, validation_cfg)


@task(name="record_validations", cache_policy=NO_CACHE)
def record_validations(cfg: Config, generation: int, design_ids: list[int],
                       reports: list[dict]) -> list[str]:
    rt = open_runtime(cfg)
    designs = [d for d in designer.load_designs(rt.store, rt.run, generation)
               if d.design_idx in set(design_ids)]
    return staged(rt, generation, "validate_environments",
                  lambda: designer.apply_reports(rt, generation, designs, reports))


def validate_environments(cfg: Config, generation: int, design_ids: list[int]) -> list[str]:
    """Validate every design as its own task (fanned out on the task runner: threads,
    or Ray workers), then record the verdicts in one transaction."""
    rt = open_runtime(cfg)
    done = rt.stage_result(generation, "validate_environments")
    if done is not None:
        return done
    t0 = time.perf_counter()
    designs = [d for d in designer.load_designs(rt.store, rt.run, generation)
               if d.design_idx in set(design_ids)]
    futures = validate_program.map([d.source for d in designs], unmapped(cfg.sandbox),
                                   unmapped(cfg.validation))
    reports = [f.result() for f in futures]
    accepted = record_validations(cfg, generation, design_ids, reports)
    rt.timings["validate_environments"] = time.perf_counter() - t0
    return accepted


@task(name="rollout", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: transient(state))
def rollout(cfg: Config, generation: int, new_env_ids: list[str]) -> dict:
    rt = open_runtime(cfg)
    return staged(rt, generation, "rollout",
                  lambda: rollout_stage.rollout_stage(rt, generation, new_env_ids))


@task(name="score_regret", cache_policy=NO_CACHE)
def score_regret(cfg: Config, generation: int) -> dict:
    rt = open_runtime(cfg)
    return staged(rt, generation, "score_regret", lambda: regret.score_stage(rt, generation))


@task(name="train_step", cache_policy=NO_CACHE)
def train_step(cfg: Config, generation: int) -> dict:
    # torch loads with the training module (3 s): only when a step is due, not at flow import.
    from spade_tasks import training

    rt = open_runtime(cfg)
    return staged(rt, generation, "train_step", lambda: training.train_stage(rt, generation))


@task(name="update_memory", cache_policy=NO_CACHE)
def update_memory(cfg: Config, generation: int) -> dict:
    rt = open_runtime(cfg)
    return staged(rt, generation, "update_memory",
                  lambda: memory_stage.update_stage(rt, generation))


@task(name="evaluate_generation", cache_policy=NO_CACHE)
def evaluate_generation(cfg: Config, generation: int) -> dict:
    rt = open_runtime(cfg)
    return staged(rt, generation, "evaluate_generation", lambda: eval_stage(rt, generation))


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
    generation = rt.current_generation()
    rt.begin_generation(generation)
    rt.timings.clear()
    t0 = time.perf_counter()

    doc_ids = sample_documents(cfg, generation)
    warm = warmstart(cfg, generation)
    design_ids = design_environments(cfg, generation, doc_ids)
    new_env_ids = validate_environments(cfg, generation, design_ids)
    played = rollout(cfg, generation, new_env_ids)
    scores = score_regret(cfg, generation)
    trained = train_step(cfg, generation)
    memory = update_memory(cfg, generation)
    evals = evaluate_generation(cfg, generation)

    summary = {"generation": generation, "documents": len(doc_ids),
               "designs": len(design_ids), "accepted": len(new_env_ids),
               **played, **scores, **trained, **memory, **evals,
               **{k: v for k, v in warm.items() if k != "checkpoint"},
               "wall_s": time.perf_counter() - t0,
               "timings": dict(rt.timings)}
    return log_generation(cfg, generation, summary)

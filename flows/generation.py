"""One SPADE generation as a Prefect flow: flow ``spade``, deployment ``generation``.

    sample_documents -> design_environments -> validate_environments -> rollout (no hint,
    hint) -> score_regret -> train_step -> update_memory -> log_generation

Each stage is a task wrapping a plain function of ``spade_tasks``; its rows go to the
run's DuckDB in one transaction and the stage is then marked finished there. A rerun of
the flow after a crash (kill -9 included) skips finished stages and redoes the
interrupted one, whose rows replace any partial ones: no duplicates, nothing lost.
Retries are only on the stages whose failures can be transient (model serving); a
deterministic failure is not retried.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from spade_tasks.config import Config, load_config
from spade_tasks.runtime import Runtime, open_runtime


def staged(rt: Runtime, generation: int, name: str, fn):
    """Run ``fn`` unless the stage already finished in this generation (resume)."""
    done = rt.stage_result(generation, name)
    if done is not None:
        get_run_logger().info("%s: finished earlier, skipped", name)
        rt.timings.setdefault(name, 0.0)
        return done
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    rt.timings[name] = seconds
    rt.mark_stage(generation, name, result, seconds)
    return result


@task(name="sample_documents", cache_policy=NO_CACHE)
def sample_documents(cfg: Config, generation: int) -> list[str]:
    from spade_tasks import corpus

    rt = open_runtime(cfg)
    return staged(rt, generation, "sample_documents",
                  lambda: corpus.sample_stage(rt, generation))


@task(name="design_environments", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: _transient(state))
def design_environments(cfg: Config, generation: int, doc_ids: list[str]) -> list[int]:
    from spade_tasks import designer

    rt = open_runtime(cfg)
    return staged(rt, generation, "design_environments",
                  lambda: designer.design_stage(rt, generation, doc_ids))


@task(name="validate_environments", cache_policy=NO_CACHE)
def validate_environments(cfg: Config, generation: int, design_ids: list[int]) -> list[str]:
    from spade_tasks import designer

    rt = open_runtime(cfg)
    return staged(rt, generation, "validate_environments",
                  lambda: designer.validate_stage(rt, generation, design_ids))


@task(name="rollout", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5,
      retry_condition_fn=lambda task, run, state: _transient(state))
def rollout(cfg: Config, generation: int, new_env_ids: list[str]) -> dict:
    from spade_tasks import rollout as rollout_stage

    rt = open_runtime(cfg)
    return staged(rt, generation, "rollout",
                  lambda: rollout_stage.rollout_stage(rt, generation, new_env_ids))


@task(name="score_regret", cache_policy=NO_CACHE)
def score_regret(cfg: Config, generation: int) -> dict:
    from spade_tasks import regret

    rt = open_runtime(cfg)
    return staged(rt, generation, "score_regret", lambda: regret.score_stage(rt, generation))


@task(name="train_step", cache_policy=NO_CACHE)
def train_step(cfg: Config, generation: int) -> dict:
    from spade_tasks import training

    rt = open_runtime(cfg)
    return staged(rt, generation, "train_step", lambda: training.train_stage(rt, generation))


@task(name="update_memory", cache_policy=NO_CACHE)
def update_memory(cfg: Config, generation: int) -> dict:
    from spade_tasks import memory

    rt = open_runtime(cfg)
    return staged(rt, generation, "update_memory", lambda: memory.update_stage(rt, generation))


@task(name="log_generation", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def log_generation(cfg: Config, generation: int, summary: dict) -> dict:
    from spade_tasks import tracking

    rt = open_runtime(cfg)
    return tracking.log_stage(rt, generation, summary)


def _transient(state) -> bool:
    """Retry only failures a second try can fix: connection and server errors."""
    try:
        state.result()
    except (ConnectionError, TimeoutError, OSError) as e:
        return not isinstance(e, (FileNotFoundError, PermissionError))
    except Exception:  # noqa: BLE001 - anything else is deterministic: no retry
        return False
    return False


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
    design_ids = design_environments(cfg, generation, doc_ids)
    new_env_ids = validate_environments(cfg, generation, design_ids)
    played = rollout(cfg, generation, new_env_ids)
    scores = score_regret(cfg, generation)
    trained = train_step(cfg, generation)
    memory = update_memory(cfg, generation)

    summary = {"generation": generation, "documents": len(doc_ids),
               "designs": len(design_ids), "accepted": len(new_env_ids),
               **played, **scores, **trained, **memory,
               "wall_s": time.perf_counter() - t0,
               "timings": dict(rt.timings)}
    return log_generation(cfg, generation, summary)


def config_path(path: str) -> str:
    p = Path(path)
    return str(p if p.is_absolute() else p.resolve())

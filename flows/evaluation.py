"""Held-out evaluation as a Prefect flow: flow ``spade-eval``, one task per suite.

The same work as ``spade eval`` (``run_eval`` per suite: rows in the run's DuckDB
``evaluations`` table, a metric per suite in MLflow), but every suite of a comparison
in one flow run, visible in the Prefect UI. The model is loaded once per flow run and
shared by the suites' tasks.
"""

from __future__ import annotations

import threading

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from spade_tasks.config import Config, load_config
from spade_tasks.evaluation import get_suite, run_eval
from spade_tasks.llm.base import make_backend
from spade_tasks.runtime import open_runtime

# The flow's backend, keyed by model name: tasks receive only small values (as in the
# generation flow), so the loaded model is looked up here instead of passed to them.
# Not the runtime's backend (``rt.backend()``): that one follows the run's latest
# checkpoint, while this flow without ``checkpoint`` evaluates the config's base model,
# weights ``load_weights`` cannot go back to (it takes a checkpoint folder only).
_BACKENDS: dict[str, object] = {}
_LOCK = threading.Lock()


def _model_cfg(cfg: Config, checkpoint: str | None):
    if checkpoint is None:
        return cfg.model
    return cfg.model.model_copy(update={"name": str(checkpoint)})


def _backend(cfg: Config, checkpoint: str | None):
    model_cfg = _model_cfg(cfg, checkpoint)
    with _LOCK:
        if model_cfg.name not in _BACKENDS:
            _BACKENDS[model_cfg.name] = make_backend(model_cfg)
        return _BACKENDS[model_cfg.name]


def _close_backends() -> None:
    with _LOCK:
        for backend in _BACKENDS.values():
            backend.close()
        _BACKENDS.clear()


@task(name="evaluate_suite", cache_policy=NO_CACHE)
def evaluate_suite(cfg: Config, suite: str, limit: int | None,
                   checkpoint: str | None) -> dict:
    """Run and record one suite; returns its score, item count and evaluation run id."""
    result = run_eval(cfg, suite, limit, checkpoint, backend=_backend(cfg, checkpoint),
                      store=open_runtime(cfg).store)
    return {"suite": suite, "score": result.score, "n": result.n, "run": result.run}


@flow(name="spade-eval")
def spade_eval(config: str = "configs/cpu-tiny.yaml", suites: list[str] | None = None,
               limit: int | None = None, checkpoint: str | None = None) -> dict[str, float]:
    """Evaluate the config's model (or ``checkpoint``) on ``suites`` (default: the
    config's ``eval.suites``); returns each suite's score."""
    cfg = load_config(config)
    suites = list(suites or cfg.eval.suites)
    for name in suites:  # an unknown or missing suite fails before the model loads
        get_suite(name).check_available()
    try:
        results = [evaluate_suite(cfg, name, limit, checkpoint) for name in suites]
    finally:
        _close_backends()
    return {r["suite"]: r["score"] for r in results}

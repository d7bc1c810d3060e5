"""Checkpoint retention and MLflow models: which generations' weights stay, and where.

A generation that took an optimizer step writes one checkpoint (Hugging Face weights and
tokenizer, plus DeepSpeed's optimizer state under ``deepspeed/``). Once the generation
is finished, ``keep_stage``:

1. logs the new checkpoint to MLflow as a transformers-flavour model of the generation's
   run (``tracking.log_models``), so it is browsable in the UI and loadable with
   ``mlflow.transformers.load_model``;
2. keeps the last ``training.keep_last`` checkpoints and the best one by
   ``training.keep_best_metric``, deleting the others from disk and from MLflow;
3. strips the optimizer state from every kept checkpoint but the newest: a run resumes
   from its newest checkpoint only (``Runtime.latest_checkpoint``), and that state is
   twice the weights again.

The ``checkpoints`` table records each checkpoint's MLflow model and whether it was
deleted, so a retried ``log_generation`` neither logs a model twice nor forgets one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spade_tasks.store import queries

DEEPSPEED_SUBDIR = "deepspeed"  # same as training.DEEPSPEED_SUBDIR (no torch import here)

ROLLOUT_METRICS = ("agent_reward", "regret", "win_rate_no_hint", "win_rate_hint",
                   "designer_reward", "validity_rate")
"""Metrics measured on the weights a generation played with (its start checkpoint)."""

_MLFLOW_URI_LOCK = threading.Lock()


def check_metric_name(name: str) -> str:
    """``name`` if a generation can report it as a metric, else ValueError (config time)."""
    if name in ROLLOUT_METRICS or (name.startswith("eval.") and len(name) > 5
                                   and not name.endswith(".n")):
        return name
    raise ValueError(f"unknown checkpoint metric {name!r} (known: "
                     f"{', '.join(ROLLOUT_METRICS)}, eval.<suite>)")


@dataclass(frozen=True)
class Checkpoint:
    generation: int
    path: str


def scored_path(metric: str, metrics: dict) -> str | None:
    """The checkpoint whose weights a generation's ``metric`` measured: the one it wrote
    (or started from, when it took no step) for ``eval.*``, which runs after training;
    the one it started from for rollout metrics."""
    if metric.startswith("eval."):
        return metrics.get("checkpoint") or metrics.get("trained_from")
    return metrics.get("trained_from")


def checkpoint_scores(metric: str, generations: Iterable[dict]) -> dict[str, float]:
    """Mean of ``metric`` per checkpoint path over ``generations`` (dicts of metrics)."""
    sums: dict[str, list[float]] = {}
    for m in generations:
        v = m.get(metric)
        path = scored_path(metric, m)
        if path and isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
            sums.setdefault(path, []).append(float(v))
    return {p: sum(vs) / len(vs) for p, vs in sums.items()}


def choose_kept(checkpoints: Sequence[Checkpoint], keep_last: int,
                scores: dict[str, float] | None = None, mode: str = "max") -> set[str]:
    """Paths to keep: the ``keep_last`` newest, plus the best-scoring (ties: the newer)."""
    ordered = sorted(checkpoints, key=lambda c: c.generation)
    kept = {c.path for c in ordered[-keep_last:]}
    scored = [c for c in ordered if scores and c.path in scores]
    if scored:
        sign = 1.0 if mode == "max" else -1.0
        best = max(scored, key=lambda c: (sign * scores[c.path], c.generation))
        kept.add(best.path)
    return kept


# ---------------------------------------------------------------- MLflow models


@contextmanager
def _fluent_uri(uri: str):
    """MLflow's model logging reads the process-wide tracking URI; set it for one call."""
    import mlflow

    with _MLFLOW_URI_LOCK:
        before = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(uri)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(before)


@contextmanager
def _weights_only(path: Path):
    """``path`` without its optimizer state, as a folder of hard links (MLflow copies
    the whole folder it is given)."""
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}-model-") as tmp:
        for f in path.iterdir():
            if f.is_file():
                os.link(f, Path(tmp) / f.name)
        yield tmp


def log_model(tracker, run_id: str, generation: int, path: str) -> tuple[str, str]:
    """Log checkpoint ``path`` as a transformers model of MLflow run ``run_id``;
    returns (model id, ``models:/`` URI)."""
    import mlflow
    from huggingface_hub import ModelCard

    name = f"checkpoint-gen-{generation:04d}"
    # Created here rather than by log_model, which would file it under the process's
    # active experiment instead of the run's.
    model = tracker.client.create_logged_model(
        tracker.experiment_id, name=name, source_run_id=run_id,
        tags={"spade.run": tracker.cfg.run.name, "spade.generation": str(generation),
              "spade.checkpoint": str(Path(path).resolve())})
    card = ModelCard(f"# {tracker.cfg.run.name}, generation {generation}\n\n"
                     f"SPADE checkpoint trained from `{tracker.cfg.model.name}`; "
                     f"written to `{Path(path).resolve()}`.\n")
    import torch
    import transformers

    with _fluent_uri(tracker.cfg.tracking.mlflow_uri), _weights_only(Path(path)) as folder:
        info = mlflow.transformers.log_model(
            folder, name=name, task="text-generation", model_id=model.model_id,
            run_id=run_id, model_card=card,
            # Given, so MLflow neither loads the model to infer them nor asks the hub.
            pip_requirements=[f"transformers=={transformers.__version__}",
                              f"torch=={torch.__version__.split('+')[0]}"])
    return info.model_id, info.model_uri


def delete_model(tracker, model_id: str) -> None:
    """Delete an MLflow model and its artifacts (the copy of the weights)."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    model = tracker.client.get_logged_model(model_id)
    repo = get_artifact_repository(model.artifact_location)
    try:
        repo.delete_artifacts()
    except NotImplementedError:  # a remote store without deletes keeps its copy
        pass
    tracker.client.delete_logged_model(model_id)


# ---------------------------------------------------------------- the stage


def _record(rt, generation: int, path: str) -> dict:
    row = queries.checkpoint_record(rt.store, rt.run, generation)
    if row and row["path"] == path:
        return row
    row = {"run": rt.run, "generation": generation, "path": path, "mlflow_model_id": None,
           "model_uri": None, "optimizer_state": True, "deleted_at": None}
    rt.store.upsert("checkpoints", row)
    return row


def keep_stage(rt, generation: int, mlflow_run_id: str | None) -> dict:
    """Log this generation's checkpoint to MLflow, then apply retention (module doc).
    Call after the generation is marked done, so its metrics count."""
    import datetime

    cfg = rt.cfg
    gen = queries.generation_record(rt.store, rt.run, generation)
    path = gen["checkpoint"] if gen else None
    out: dict = {}
    if path:
        row = _record(rt, generation, path)
        if cfg.tracking.log_models and mlflow_run_id and not row["mlflow_model_id"]:
            model_id, uri = log_model(rt.tracker, mlflow_run_id, generation, path)
            rt.store.upsert("checkpoints", {**row, "mlflow_model_id": model_id,
                                            "model_uri": uri})
            out["checkpoint_model_uri"] = uri

    live = queries.live_checkpoints(rt.store, rt.run)
    if not live:
        return out
    metric = cfg.training.keep_best_metric
    scores = None
    if metric:
        done = queries.generation_metrics_rows(rt.store, rt.run, done_only=True)
        scores = checkpoint_scores(metric, [r["metrics"] for r in done])
    kept = choose_kept([Checkpoint(r["generation"], r["path"]) for r in live],
                       cfg.training.keep_last, scores, cfg.training.keep_best_mode)
    newest = live[-1]["path"]
    deleted = []
    for r in live:
        if r["path"] in kept:
            if r["path"] != newest and r["optimizer_state"]:
                shutil.rmtree(Path(r["path"]) / DEEPSPEED_SUBDIR, ignore_errors=True)
                rt.store.upsert("checkpoints", {**r, "optimizer_state": False})
            continue
        # MLflow first: a crash between the two leaves a folder the next pass deletes,
        # never a model pointing at deleted weights' record.
        if r["mlflow_model_id"]:
            delete_model(rt.tracker, r["mlflow_model_id"])
        shutil.rmtree(r["path"], ignore_errors=True)
        rt.store.upsert("checkpoints", {**r, "deleted_at": datetime.datetime.now()})
        deleted.append(r["path"])
    out["checkpoints_kept"] = sorted(kept)
    out["checkpoints_deleted"] = deleted
    return out


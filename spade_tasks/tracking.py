"""MLflow tracking: a parent run per self-play run, a nested run per generation.

Uses ``MlflowClient`` with explicit run ids everywhere: the fluent API's active run is
per thread, and Prefect runs tasks in worker threads. Run ids are kept in DuckDB so a
retried or resumed generation logs into the same MLflow runs instead of new ones.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_tasks.config import Config
from spade_tasks.store import Store, queries
from spade_tasks.transcripts import format_transcript

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime


def _client(uri: str):
    # The default sqlite store lives under runs/; make its folder before MLflow opens it.
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def artifact_root(cfg: Config) -> Path:
    """Where MLflow artifacts of experiments this config creates are stored: next to the
    runs' own state under ``run.root``, not in ``./mlruns`` of whatever directory the
    command started in."""
    return (cfg.run.root / "mlartifacts").resolve()


def experiment_id(client, cfg: Config) -> str:
    """The config's MLflow experiment, created with its artifacts under ``run.root``.

    An experiment that exists already keeps the artifact location it was created with
    (MLflow cannot move one)."""
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    if exp is not None:
        return exp.experiment_id
    return client.create_experiment(cfg.tracking.experiment,
                                    artifact_location=artifact_root(cfg).as_uri())


def flatten(d: dict, prefix: str = "") -> dict[str, str]:
    """A nested config as MLflow params: ``section.key -> value``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = str(v)[:500]
    return out


class Tracker:
    """Logs one self-play run; every method takes or returns explicit run ids."""

    def __init__(self, cfg: Config, store: Store):
        self.cfg, self.store = cfg, store
        self.client = _client(cfg.tracking.mlflow_uri)
        self.experiment_id = experiment_id(self.client, cfg)

    def parent_run(self) -> str:
        """The MLflow run of this self-play run, created once and reused."""
        run = self.cfg.run.name
        known = queries.run_mlflow_id(self.store, run)
        if known:
            return known
        r = self.client.create_run(self.experiment_id, run_name=run,
                                   tags={"spade.run": run})
        params = flatten(self.cfg.model_dump(mode="json"))
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(r.info.run_id, params=items[i:i + 100])
        self.store.upsert("runs", {"run": run, "config": self.cfg.model_dump(mode="json"),
                                   "mlflow_run_id": r.info.run_id})
        return r.info.run_id

    def generation_run(self, parent_id: str, generation: int) -> str:
        """The nested run of one generation, reused when the generation is retried."""
        row = queries.generation_record(self.store, self.cfg.run.name, generation)
        if row and row["mlflow_run_id"]:
            return row["mlflow_run_id"]
        r = self.client.create_run(
            self.experiment_id, run_name=f"{self.cfg.run.name}/gen-{generation}",
            tags={"mlflow.parentRunId": parent_id, "spade.generation": str(generation)})
        return r.info.run_id

    def metrics(self, run_id: str, metrics: dict[str, Any], step: int) -> None:
        from mlflow.entities import Metric
        import time

        ts = int(time.time() * 1000)
        items = [Metric(k, float(v), ts, step) for k, v in metrics.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)
                 and math.isfinite(float(v))]
        if items:
            self.client.log_batch(run_id, metrics=items)

    def text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    def json(self, run_id: str, obj: Any, artifact_file: str) -> None:
        self.client.log_text(run_id, json.dumps(obj, indent=2, default=str), artifact_file)

    def artifact(self, run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
        p = Path(path)
        if p.is_dir():
            self.client.log_artifacts(run_id, str(p), artifact_path)
        elif p.is_file():
            self.client.log_artifact(run_id, str(p), artifact_path)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status)

    def plots(self, run_id: str) -> list[str]:
        """PNG plots of the run's history across generations, logged as artifacts."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        run = self.cfg.run.name
        hist = queries.regret_history(self.store, run)
        valid = queries.validity_history(self.store, run)
        div = queries.diversity_history(self.store, run)
        logged = []
        with tempfile.TemporaryDirectory() as tmp:
            series = [
                ("regret.png", "regret (mean over environments)", hist, ["regret"]),
                ("win_rates.png", "win rate", hist, ["win_no_hint", "win_hint"]),
                ("validity.png", "design validity rate", valid, ["validity"]),
                ("diversity.png", "memory diversity", div, ["diversity"]),
            ]
            for name, ylabel, rows, keys in series:
                fig, ax = plt.subplots(figsize=(5, 3.2))
                for key in keys:
                    xs = [r["generation"] for r in rows if r.get(key) is not None]
                    ys = [r[key] for r in rows if r.get(key) is not None]
                    ax.plot(xs, ys, marker="o", label=key)
                ax.set_xlabel("generation")
                ax.set_ylabel(ylabel)
                if len(keys) > 1:
                    ax.legend()
                fig.tight_layout()
                path = Path(tmp) / name
                fig.savefig(path, dpi=90)
                plt.close(fig)
                self.client.log_artifact(run_id, str(path), "plots")
                logged.append(f"plots/{name}")
        return logged


def generation_metrics(rt: StageRuntime, generation: int, summary: dict) -> dict[str, float]:
    """The numbers of one generation, read back from DuckDB (the source of truth)."""
    run = rt.run
    m: dict[str, float] = {}
    d = queries.design_summary(rt.store, run, generation)
    m["designs"] = d["n"] or 0
    m["validity_rate"] = (d["ok"] or 0) / d["n"] if d["n"] else 0.0
    if d["reward"] is not None:
        m["designer_reward"] = d["reward"]
    for r in queries.rejection_counts(rt.store, run, generation):
        m[f"rejected.{r['check_name']}"] = r["n"]
    g = queries.regret_summary(rt.store, run, generation)
    if g["envs"]:
        m.update(regret=g["regret"], win_rate_no_hint=g["w"], win_rate_hint=g["wh"],
                 environments_played=g["envs"])
    a = queries.no_hint_return_summary(rt.store, run, generation)
    if a["n"]:
        m["agent_reward"] = a["r"]
        m["episodes"] = a["n"]
    for key in ("warmstart_steps", "warmstart_pairs", "warmstart_loss_first",
                "warmstart_loss_last", "warmstart_s", "train_samples_designer",
                "train_samples_agent", "train_updates"):
        v = summary.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            m[key] = v
    for key in ("loss", "approx_kl", "kl_ref", "clip_fraction", "grad_norm", "train_tokens_per_s",
                "rollout_tokens_per_s", "design_tokens_per_s", "memory_diversity", "memory_size"):
        v = summary.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            m[key] = v
    for key, v in summary.items():  # in-loop evaluation scores, one per suite
        if (key.startswith("eval.") and isinstance(v, (int, float)) and not isinstance(v, bool)
                and math.isfinite(v)):
            m[key] = v
    for stage, seconds in summary.get("timings", {}).items():
        m[f"time.{stage}"] = seconds
    if "wall_s" in summary:
        m["time.generation"] = summary["wall_s"]
    return m


def log_stage(rt: StageRuntime, generation: int, summary: dict) -> dict:
    """Log one generation to MLflow (nested under the run) and mark it finished."""
    tr: Tracker = rt.tracker
    parent = tr.parent_run()
    child = tr.generation_run(parent, generation)
    rt.set_generation_mlflow(generation, child)
    metrics = generation_metrics(rt, generation, summary)
    tr.metrics(child, metrics, step=generation)
    tr.metrics(parent, metrics, step=generation)
    for step, loss in enumerate(summary.get("warmstart_losses") or []):
        tr.metrics(child, {"warmstart.loss": loss}, step=step)
    tr.json(child, summary, "summary.json")
    for env in queries.designed_environments(rt.store, rt.run, generation):
        tr.text(child, env["source"], f"environments/{env['env_id']}.py")
    rejected = queries.rejected_designs(rt.store, rt.run, generation)
    if rejected:
        tr.json(child, {r["design_idx"]: r["reasons"] for r in rejected}, "rejections.json")
    for r in rejected:
        # What the designer wrote, headed by why the validator refused it.
        tr.text(child, rejected_design_text(r), f"rejected/design-{r['design_idx']:03d}.md")

    for episode_id in queries.episode_ids(rt.store, rt.run, generation,
                                          rt.cfg.tracking.transcripts):
        tr.text(child, format_transcript(rt.store, episode_id, run=rt.run, generation=generation),
                f"transcripts/{episode_id}.txt")
    checkpoint = summary.get("checkpoint")
    if checkpoint:
        tr.client.set_tag(child, "checkpoint", str(Path(checkpoint).resolve()))
        tr.text(child, str(Path(checkpoint).resolve()) + "\n", "checkpoint.txt")
    rt.finish_generation(generation, checkpoint, {**metrics, **{k: v for k, v in summary.items()
                                                               if k != "timings"}}, child)
    from spade_tasks.checkpoints import keep_stage

    kept = keep_stage(rt, generation, child)
    tr.plots(child)
    tr.plots(parent)
    tr.finish(child)
    return {**summary, **kept, "mlflow_run_id": child, "mlflow_parent_run_id": parent}


def rejected_design_text(design: dict) -> str:
    """A rejected design as Markdown: the validator's reasons, then the completion."""
    reasons = "\n".join(f"- {r}" for r in (design["reasons"] or [])) or "- (no reason recorded)"
    return (f"# Rejected design {design['design_idx']}\n\n"
            f"Grounding document: `{design['doc_id']}`\n\n## Reasons\n\n{reasons}\n\n"
            f"## What the designer wrote\n\n````\n{design['completion'] or ''}\n````\n")

"""The process-level state of a self-play run: config, DuckDB store, sandbox, tracker,
and the (lazily loaded) inference backend and training engine.

Prefect tasks receive only small values (run name, generation); the heavy objects live
here, one per run per process, so a served deployment keeps its model loaded between
generations and no task hashes a model as an input.

A run's durable state is DuckDB (generation counter, finished stages, memory) and the
checkpoint folder; ``Runtime`` only caches what can be rebuilt from them.
"""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_tasks.config import Config
from spade_tasks.llm.base import make_backend
from spade_tasks.sandbox import Sandbox
from spade_tasks.seeds import generation_seed
from spade_tasks.store import Store, queries
from spade_tasks.tracking import Tracker

_RUNTIMES: dict[str, "Runtime"] = {}
_LOCK = threading.Lock()


@dataclass
class Runtime:
    cfg: Config
    store: Store
    _backend: Any = None
    _trainer: Any = None
    _sandbox: Any = None
    _tracker: Any = None
    _backend_checkpoint: str | None = None
    fallback_weights: str | None = None
    """Weights the backend loads while the run has none of its own (``spade design``: the
    first warm start's, as the flow's first generation designs on); None: the base model."""
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def run(self) -> str:
        return self.cfg.run.name

    @property
    def run_dir(self) -> Path:
        return self.cfg.run.root / self.run

    @property
    def sandbox(self):
        if self._sandbox is None:
            self._sandbox = Sandbox(self.cfg.sandbox)
        return self._sandbox

    @property
    def tracker(self):
        if self._tracker is None:
            self._tracker = Tracker(self.cfg, self.store)
        return self._tracker

    def seed(self, generation: int, salt: int = 0) -> int:
        """The seed of one generation's random draws: fixed per rerun, new per generation."""
        return generation_seed(self.cfg.run.seed, generation, salt)

    # -- generations -----------------------------------------------------------------
    def current_generation(self) -> int:
        """The unfinished generation, or the one after the last finished."""
        rows = queries.generation_statuses(self.store, self.run)
        for r in rows:
            if r["status"] != "done":
                return r["generation"]
        return rows[-1]["generation"] + 1 if rows else 0

    def latest_checkpoint(self) -> str | None:
        """The newest weights: a finished generation's checkpoint, or a warm start's that
        ran after it (before the next generation's designs); None: the base model.

        Generations that took no step wrote none; checkpoints that retention deleted
        (spade_tasks/checkpoints.py never deletes the newest) are skipped."""
        done = queries.latest_done_checkpoint(self.store, self.run)
        warm = queries.latest_warmstart_checkpoint(self.store, self.run)
        if warm and (not done or warm["generation"] > done["generation"]):
            return warm["checkpoint"]
        return done["checkpoint"] if done else None

    def begin_generation(self, generation: int) -> None:
        if queries.generation_record(self.store, self.run, generation) is None:
            self.store.upsert("generations", {"run": self.run, "generation": generation,
                                              "status": "running",
                                              "started_at": _now()})

    def finish_generation(self, generation: int, checkpoint: str | None, metrics: dict,
                          mlflow_run_id: str | None) -> None:
        self.store.upsert("generations", {
            "run": self.run, "generation": generation, "status": "done",
            "started_at": self._started(generation), "finished_at": _now(),
            "checkpoint": checkpoint, "mlflow_run_id": mlflow_run_id, "metrics": metrics})

    def set_generation_mlflow(self, generation: int, run_id: str) -> None:
        queries.set_generation_mlflow_id(self.store, self.run, generation, run_id)

    def _started(self, generation: int):
        row = queries.generation_record(self.store, self.run, generation)
        return row["started_at"] if row else _now()

    # -- stages ------------------------------------------------------------------------
    def stage_result(self, generation: int, stage: str) -> Any | None:
        return queries.stage_result(self.store, self.run, generation, stage)

    def mark_stage(self, generation: int, stage: str, result: Any, seconds: float) -> None:
        self.store.upsert("stages", {"run": self.run, "generation": generation, "stage": stage,
                                     "finished_at": _now(), "seconds": seconds,
                                     "result": json.dumps(result)})

    # -- models ------------------------------------------------------------------------
    def backend(self):
        """The inference backend, on the latest checkpoint's weights."""
        ckpt = self.latest_checkpoint() or self.fallback_weights
        if self._backend is not None and not getattr(self._backend, "alive", lambda: True)():
            self._backend = None  # its engine actors are gone: start them again
        if self._backend is None:
            model_cfg = self.cfg.model
            if ckpt:
                model_cfg = model_cfg.model_copy(update={"name": ckpt})
            orch = self.cfg.orchestration
            if model_cfg.replicas > 1 or orch.keep_engines:
                from spade_tasks.engines import EnginePool

                self._backend = EnginePool(
                    model_cfg, model_cfg.replicas, orch.ray_address,
                    keep_as=f"spade-engine-{self.run}" if orch.keep_engines else None)
            else:
                self._backend = make_backend(model_cfg)
            self._backend_checkpoint = ckpt
        elif ckpt != self._backend_checkpoint:
            self._backend.load_weights(ckpt)
            self._backend_checkpoint = ckpt
        return self._backend

    def backend_at(self, checkpoint: str):
        """The inference backend on ``checkpoint``'s weights (the just-trained ones, before
        its generation is finished); ``backend()`` reloads the latest when they differ."""
        backend = self.backend()
        if checkpoint != self._backend_checkpoint:
            backend.load_weights(checkpoint)
            self._backend_checkpoint = checkpoint
        return backend

    def trainer(self):
        """The DeepSpeed engine, resumed from the latest checkpoint when there is one."""
        # torch and DeepSpeed load with the training module: only when a step is due.
        from spade_tasks.training import TrainEngine

        ckpt = self.latest_checkpoint()
        if self._trainer is not None and not getattr(self._trainer, "alive", lambda: True)():
            self._trainer = None  # its rank actors are gone: restart them from the checkpoint
        if self._trainer is None:
            tcfg = self.cfg.training
            if tcfg.world_size > 1:
                from spade_tasks.train_ranks import RankedTrainer

                self._trainer = RankedTrainer(ckpt or self.cfg.model.name, tcfg,
                                              tcfg.world_size, self.cfg.orchestration.ray_address)
            else:
                self._trainer = TrainEngine.from_model_name(ckpt or self.cfg.model.name, tcfg)
            if ckpt and (Path(ckpt) / "deepspeed" / "latest").is_file():
                self._trainer.load(ckpt)
        return self._trainer

    def save_checkpoint(self, generation: int) -> str:
        """Write the trained weights atomically: a temp folder renamed into place."""
        final = self.run_dir / "checkpoints" / f"gen-{generation:04d}"
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.trainer().save_checkpoint(tmp)
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        return str(final)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
        if hasattr(self._trainer, "close"):  # Ray rank actors
            self._trainer.close()
        self.store.close()


def _now():
    import datetime

    return datetime.datetime.now()


def open_runtime(cfg: Config) -> Runtime:
    """The runtime of ``cfg``'s run in this process (created on first use)."""
    key = str((cfg.run.root / cfg.run.name).resolve())
    with _LOCK:
        rt = _RUNTIMES.get(key)
        if rt is None or rt.cfg != cfg:
            if rt is not None:
                rt.close()
            store = Store(cfg.run.root / cfg.run.name / "spade.duckdb")
            rt = _RUNTIMES[key] = Runtime(cfg, store)
        return rt


def close_all() -> None:
    with _LOCK:
        for rt in _RUNTIMES.values():
            rt.close()
        _RUNTIMES.clear()

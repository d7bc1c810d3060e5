"""What a stage function may ask of its run's runtime, as a typed protocol.

``spade_tasks.runtime.Runtime`` is the implementation (tests pass smaller ones). Stages
are annotated with this protocol rather than the class because the runtime builds the
trainer from the training module, which imports the regret and designer stages: a stage
module naming ``Runtime``, even only for type checking, would close an import loop
(tests/test_imports.py counts those imports too).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from spade_tasks.config import Config
    from spade_tasks.llm.base import Backend
    from spade_tasks.sandbox import Sandbox
    from spade_tasks.store import Store


class StageRuntime(Protocol):
    """The run's config, store and (lazily built) sandbox, models and tracker."""

    cfg: Config
    store: Store

    @property
    def run(self) -> str:
        """The run's name (``run.name``)."""

    @property
    def run_dir(self) -> Path:
        """The run's folder: its DuckDB and checkpoints."""

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def tracker(self) -> Any:
        """The MLflow ``tracking.Tracker`` (tracking's own stage is its only user)."""

    def seed(self, generation: int, salt: int = 0) -> int:
        """The seed of one generation's random draws."""

    def latest_checkpoint(self) -> str | None:
        """The newest weights; None: the base model."""

    def backend(self) -> Backend:
        """The inference backend on the latest weights."""

    def backend_at(self, checkpoint: str) -> Backend:
        """The inference backend on ``checkpoint``'s weights."""

    def trainer(self) -> Any:
        """The training engine (``training.TrainEngine`` or its multi-rank wrapper)."""

    def save_checkpoint(self, generation: int) -> str:
        """Write the trained weights; their folder."""

    def stage_result(self, generation: int, stage: str) -> Any | None:
        """The JSON a finished stage stored; None if it has not finished."""

    def set_generation_mlflow(self, generation: int, run_id: str) -> None: ...

    def finish_generation(self, generation: int, checkpoint: str | None, metrics: dict,
                          mlflow_run_id: str | None) -> None: ...


__all__ = ["StageRuntime"]

"""What each stage of a generation hands to the next: one typed, frozen record per stage.

    Documents -> WarmstartReport -> Designs -> Verdicts -> Played -> Scores
    -> TrainReport -> MemoryReport -> EvalReport

The flow (``flows/generation.py``) passes these from task to task, so the flow reads as
the algorithm and Prefect's graph shows which data goes where.

A record carries the *identity* of its stage's data (document ids, design indices,
accepted environment ids, episode ids) and the stage's summary figures; the *bulk* (the
designs' and turns' token arrays, the episodes' returns) stays in the run's DuckDB, and a
stage that needs it reads it through ``spade_tasks.store.queries`` for the run and
generation its record belongs to.

A finished stage's record is also what stage resume stores (``orchestration.staged``):
``dump()`` is the JSON written to the ``stages`` table and ``load()`` rebuilds the record
from it. Field names are the keys those JSON results have always had, so results stored
before the records existed load too (their id lists included) and the SQL that reads a
stored result (the warm start's ``$.checkpoint``) keeps working.

``to_summary()`` is the flat dict the generation summary (and from it MLflow) gets: the
same keys and values the stages returned before they were typed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator


class Record(BaseModel):
    """A stage's result: frozen, JSON round-trippable."""

    # NaN and infinity stay numbers in the JSON, as ``json.dumps`` writes them (a NaN
    # loss is a finding to log, not a null).
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    def dump(self) -> Any:
        """The JSON value stage resume stores."""
        return self.model_dump(mode="json")

    @classmethod
    def load(cls, data: Any) -> Record:
        """The record back from what ``dump`` stored."""
        return cls.model_validate(data)

    def to_summary(self) -> dict:
        return self.model_dump(mode="json")


class _IdList(Record):
    """A record that stored a bare id list before it was typed: the list loads as its
    ``ids_field``."""

    ids_field: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, data: Any) -> Any:
        return {cls.ids_field: data} if isinstance(data, (list, tuple)) else data


class Documents(_IdList):
    """The generation's grounding documents (none in the fixed-pool baseline)."""

    ids_field: ClassVar[str] = "doc_ids"
    doc_ids: tuple[str, ...] = ()

    def to_summary(self) -> dict:
        return {"documents": len(self.doc_ids)}


class WarmstartReport(Record):
    """What the designer's warm start did before the designs: skipped (and why), or its
    pairs, steps, losses and the checkpoint it wrote."""

    warmstart_skipped: str | None = None
    warmstart_pairs: int = 0
    warmstart_programs: int = 0
    warmstart_steps: int = 0
    warmstart_losses: tuple[float, ...] = ()
    warmstart_loss_first: float | None = None
    warmstart_loss_last: float | None = None
    warmstart_s: float = 0.0
    warmstart_cached: bool = False
    checkpoint: str | None = None

    @classmethod
    def skipped(cls, why: str) -> WarmstartReport:
        return cls(warmstart_skipped=why)

    def dump(self) -> dict:
        if self.warmstart_skipped is not None:
            return {"warmstart_skipped": self.warmstart_skipped}
        return self.model_dump(mode="json", exclude={"warmstart_skipped"})

    def to_summary(self) -> dict:
        return {k: v for k, v in self.dump().items() if k != "checkpoint"}


class Designs(_IdList):
    """The generation's designs, by index (recorded unvalidated; the store holds their
    completions and token ids)."""

    ids_field: ClassVar[str] = "design_ids"
    design_ids: tuple[int, ...] = ()

    def to_summary(self) -> dict:
        return {"designs": len(self.design_ids)}


class Verdicts(_IdList):
    """The validator's verdicts on the generation's designs: the environments accepted
    (in design order) and how many designs were refused."""

    ids_field: ClassVar[str] = "accepted_env_ids"
    accepted_env_ids: tuple[str, ...] = ()
    rejected: int = 0

    def joined(self, later: Verdicts) -> Verdicts:
        """These verdicts and a revision round's (``later``), in design order."""
        return Verdicts(accepted_env_ids=self.accepted_env_ids + later.accepted_env_ids,
                        rejected=self.rejected + later.rejected)

    def to_summary(self) -> dict:
        return {"accepted": len(self.accepted_env_ids)}


class Played(Record):
    """The generation's rollout: every episode played (without and with hints), the
    environments they were played in, and the rollout's figures."""

    episode_ids: tuple[str, ...] = ()
    episodes: int
    environments: tuple[str, ...]
    environments_new: int
    environments_pool: int
    hints_model: int
    hints_dropped: int
    hints_env_refused: int
    environments_overflow: tuple[str, ...]
    environments_unhinted: tuple[str, ...]
    flat_rounds: int = 0
    """Extra rounds of pool games played because no group had spread (``rollout.flat_rounds``)."""
    rollout_workers: int
    rollout_tokens: int
    rollout_tokens_per_s: float
    end_reasons: dict[str, int]

    def to_summary(self) -> dict:
        return self.model_dump(mode="json", exclude={"episode_ids"})


class Scores(Record):
    """Regret of every environment measured this generation and the designs' rewards
    summarised (the per-design rewards are on the store's design rows)."""

    regret_by_env: dict[str, float] = {}
    environments_played: int
    regret_mean: float
    win_rate_no_hint: float
    win_rate_hint: float
    designer_reward_mean: float
    baseline_win_rate: float | None

    def to_summary(self) -> dict:
        return self.model_dump(mode="json", exclude={"regret_by_env"})


class TrainReport(Record):
    """One generation's training: the samples it took, its optimizer updates and the
    last update's metrics (none when it was skipped: no sample had a non-zero
    advantage; ``train_step_s`` is all updates' time), and the checkpoint it wrote
    (None: no step)."""

    trained_from: str
    train_samples: int
    train_samples_designer: int
    train_samples_agent: int
    train_world_size: int
    train_updates: int = 1
    loss: float | None = None
    approx_kl: float | None = None
    clip_fraction: float | None = None
    grad_norm: float | None = None
    mean_ratio: float | None = None
    train_tokens: int | None = None
    train_tokens_per_s: float | None = None
    train_step_s: float | None = None
    kl_ref: float | None = None
    skipped: str | None = None
    checkpoint: str | None = None

    STEP: ClassVar[tuple[str, ...]] = (
        "train_updates", "loss", "approx_kl", "clip_fraction", "grad_norm", "mean_ratio",
        "train_tokens", "train_tokens_per_s", "train_step_s", "kl_ref")

    @property
    def weights(self) -> str:
        """The weights this generation ends with: its checkpoint, or (no step taken)
        the ones it started from."""
        return self.checkpoint or self.trained_from

    def dump(self) -> dict:
        # A step's metrics only when a step was taken; the skip reason only when not.
        return self.model_dump(mode="json", exclude={"skipped"} if self.skipped is None
                               else set(self.STEP))

    def to_summary(self) -> dict:
        return self.dump()


class MemoryReport(Record):
    """What the memory update did: environments added, refused as near-duplicates,
    evicted, and the memory's size and diversity after it."""

    memory_added: int
    memory_refused: int
    memory_evicted: int
    memory_size: int
    memory_diversity: float


class EvalReport(Record):
    """The held-out suites' scores of the generation's weights, by suite (empty when
    the generation was not due for evaluation)."""

    scores: dict[str, float] = {}
    items: dict[str, int] = {}

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        # Stored before it was typed: {"eval.<suite>": score, "eval.<suite>.n": n}.
        if isinstance(data, dict) and all(k.startswith("eval.") for k in data):
            scores = {k[5:]: v for k, v in data.items() if not k.endswith(".n")}
            return {"scores": scores, "items": {s: data[f"eval.{s}.n"] for s in scores}}
        return data

    def to_summary(self) -> dict:
        out = {}
        for suite, score in self.scores.items():
            out[f"eval.{suite}"] = score
            out[f"eval.{suite}.n"] = self.items[suite]
        return out


__all__ = ["Record", "Documents", "WarmstartReport", "Designs", "Verdicts", "Played",
           "Scores", "TrainReport", "MemoryReport", "EvalReport"]

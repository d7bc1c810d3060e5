"""Run a suite against a backend, record the results (DuckDB, MLflow), compare two runs."""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_tasks.errors import UserError
from spade_tasks.evaluation.suites import get_suite
from spade_tasks.llm.base import Backend, SamplingParams, make_backend
from spade_tasks.records import EvalReport, TrainReport
from spade_tasks.store import Store, queries
from spade_tasks.tracking import _client, experiment_id

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime


@dataclass
class EvalResult:
    """One suite's evaluation: mean score over ``n`` items, and each item's score."""

    suite: str
    n: int
    score: float
    per_item: dict[str, float]
    responses: dict[str, Any] = field(default_factory=dict, repr=False)
    """Each item's raw response (text, or a transcript for multi-turn suites)."""
    run: str | None = None
    """Evaluation run id under which ``run_eval`` recorded it."""


def evaluate(suite_name: str, backend: Backend, limit: int | None = None, seed: int = 0, *,
             params: SamplingParams | None = None, sandbox=None,
             max_turns: int | None = None) -> EvalResult:
    """Play ``limit`` seeded items of a suite with ``backend`` and score them.

    ``params`` defaults to greedy decoding of 512 tokens; ``sandbox`` is the
    SandboxConfig for suites that run generated code; ``max_turns`` caps the model
    calls of one episode of a multi-turn suite (an episode cut short scores 0).
    """
    suite = get_suite(suite_name)
    items = suite.load(limit, seed)
    params = params or SamplingParams(max_new_tokens=512, temperature=0.0, seed=seed)
    responses = suite.play(items, backend, params, max_turns=max_turns) if items else []
    scores = suite.score_all(items, responses, sandbox=sandbox)
    per_item = {it.id: float(s) for it, s in zip(items, scores)}
    mean = sum(per_item.values()) / len(per_item) if per_item else math.nan
    return EvalResult(suite_name, len(items), mean, per_item,
                      {it.id: r for it, r in zip(items, responses)})


def eval_store_path(cfg) -> Path:
    """The run's DuckDB file, where evaluations are recorded next to the self-play data."""
    return cfg.run.root / cfg.run.name / "spade.duckdb"


def run_eval(cfg, suite: str, limit: int | None = None, checkpoint: str | None = None, *,
             seed: int | None = None, backend: Backend | None = None, store=None,
             max_turns: int | None = None) -> EvalResult:
    """Evaluate the config's model (or ``checkpoint``) on ``suite`` and record the result.

    Rows go to the run's DuckDB ``evaluations`` table and a metric to a new MLflow run
    (one per evaluation, tagged with the suite and checkpoint). ``backend`` and
    ``store`` reuse ones the caller holds (one DuckDB writer per process).
    """
    get_suite(suite).check_available()  # fail before loading a model
    seed = cfg.run.seed if seed is None else seed
    model_cfg = cfg.model if checkpoint is None else cfg.model.model_copy(update={"name": str(checkpoint)})
    params = SamplingParams.from_config(model_cfg, temperature=0.0, seed=seed)
    own_backend = backend is None
    backend = make_backend(model_cfg) if own_backend else backend
    try:
        result = evaluate(suite, backend, limit, seed, params=params, sandbox=cfg.sandbox,
                          max_turns=max_turns)
    finally:
        if own_backend:
            backend.close()
    result.run = f"eval-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    own_store = store is None
    store = Store(eval_store_path(cfg)) if own_store else store
    try:
        record(store, result, model_cfg.name)
    finally:
        if own_store:
            store.close()
    log_mlflow(cfg, result, model_cfg.name, limit, seed)
    return result


def record(store, result: EvalResult, checkpoint: str) -> None:
    """Write one row per item of ``result`` to the ``evaluations`` table (idempotent)."""
    queries.ensure_evaluations_table(store)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    rows = [{"run": result.run, "suite": result.suite, "checkpoint": checkpoint, "item_id": k,
             "score": v, "response": _text(result.responses.get(k)), "created_at": now}
            for k, v in result.per_item.items()]
    store.replace_rows("evaluations", {"run": result.run, "suite": result.suite}, rows)


def log_mlflow(cfg, result: EvalResult, checkpoint: str, limit: int | None, seed: int) -> str:
    """One MLflow run for this evaluation, with the suite's score as a metric; its id."""
    client = _client(cfg.tracking.mlflow_uri)
    exp_id = experiment_id(client, cfg)
    run = client.create_run(exp_id, run_name=result.run, tags={
        "spade.kind": "evaluation", "spade.run": cfg.run.name, "spade.eval_run": result.run,
        "spade.suite": result.suite, "spade.checkpoint": checkpoint})
    rid = run.info.run_id
    client.log_param(rid, "suite", result.suite)
    client.log_param(rid, "checkpoint", checkpoint)
    client.log_param(rid, "limit", "all" if limit is None else limit)
    client.log_param(rid, "seed", seed)
    client.log_metric(rid, f"eval/{result.suite}", 0.0 if math.isnan(result.score) else result.score)
    client.log_metric(rid, f"eval/{result.suite}/n", result.n)
    client.set_terminated(rid, "FINISHED")
    return rid


def compare(store, run_a: str, run_b: str) -> list[dict]:
    """Per suite: score of each run on the items both evaluated, and the difference."""
    queries.ensure_evaluations_table(store)
    for run in (run_a, run_b):
        if not store.count("evaluations", run=run):
            known = queries.evaluation_runs(store)
            raise UserError(f"no evaluation run {run!r} in {store.path} (known: {', '.join(known) or 'none'})")
    return queries.compare_evaluations(store, run_a, run_b)


def scores_of(store, eval_run: str) -> dict[str, dict[str, float]]:
    """``{suite: {item_id: score}}`` recorded under one evaluation run (empty if none)."""
    queries.ensure_evaluations_table(store)
    out: dict[str, dict[str, float]] = {}
    for r in queries.evaluation_scores(store, eval_run):
        out.setdefault(r["suite"], {})[r["item_id"]] = r["score"]
    return out


def latest_scores(store) -> dict[str, tuple[str, dict[str, float]]]:
    """Per suite, the newest evaluation recorded in a self-play run's DuckDB (in-loop or
    ``spade eval``): ``{suite: (evaluation run, {item_id: score})}``, so two runs compare
    checkpoint against checkpoint."""
    queries.ensure_evaluations_table(store)
    newest = queries.newest_evaluation_runs(store)
    return {r["suite"]: (r["run"], scores_of(store, r["run"]).get(r["suite"], {}))
            for r in newest}


def compare_scores(a: dict[str, dict[str, float]],
                   b: dict[str, dict[str, float]]) -> list[dict]:
    """``compare``'s rows from two ``{suite: {item_id: score}}`` maps, on the suites and
    items both have (empty when nothing overlaps)."""
    rows = []
    for suite in sorted(set(a) & set(b)):
        items = sorted(set(a[suite]) & set(b[suite]))
        if not items:
            continue
        sa = [a[suite][i] for i in items]
        sb = [b[suite][i] for i in items]
        rows.append({"suite": suite, "n": len(items), "score_a": sum(sa) / len(items),
                     "score_b": sum(sb) / len(items),
                     "delta": (sum(sb) - sum(sa)) / len(items),
                     "improved": sum(y > x for x, y in zip(sa, sb)),
                     "regressed": sum(y < x for x, y in zip(sa, sb))})
    return rows


def plot_compare(rows: list[dict], run_a: str, run_b: str, path: str | Path) -> Path:
    """A bar chart of ``compare``'s rows (score per suite, one bar per run) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suites = [r["suite"] for r in rows]
    x = range(len(suites))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(suites) + 1), 3.5))
    ax.bar([i - 0.2 for i in x], [r["score_a"] for r in rows], 0.4, label=run_a)
    ax.bar([i + 0.2 for i in x], [r["score_b"] for r in rows], 0.4, label=run_b)
    ax.set_xticks(list(x), [f"{s}\n(n={r['n']})" for s, r in zip(suites, rows)])
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _text(response: Any) -> str | None:
    if response is None or isinstance(response, str):
        return response
    return json.dumps(response)


# -- the flow's stage ------------------------------------------------------------------


def eval_due(every: int, generation: int) -> bool:
    """In-loop evaluation runs after generations every-1, 2*every-1, ... (0: never)."""
    return every > 0 and generation % every == every - 1


def eval_stage(rt: StageRuntime, generation: int, trained: TrainReport) -> EvalReport:
    """Evaluate the weights this generation ``trained`` on the configured suites when
    the generation is due (an empty report when not).

    Items are drawn with the run's seed, so every evaluation of a run scores the same
    items; rows are recorded under the evaluation run ``<run>-gen-<generation>``, so
    ``compare`` works between generations."""
    cfg = rt.cfg
    if not eval_due(cfg.eval.every, generation):
        return EvalReport()
    for suite in cfg.eval.suites:
        get_suite(suite).check_available()  # before any model time is spent
    # A generation that took no step wrote no checkpoint: its weights are its start's.
    checkpoint = trained.weights
    backend = rt.backend_at(trained.checkpoint) if trained.checkpoint else rt.backend()
    seed = cfg.run.seed
    params = SamplingParams.from_config(cfg.model, temperature=0.0, seed=seed)
    scores, items = {}, {}
    for suite in cfg.eval.suites:
        result = evaluate(suite, backend, cfg.eval.limit, seed, params=params,
                          sandbox=cfg.sandbox)
        result.run = f"{rt.run}-gen-{generation:04d}"
        record(rt.store, result, checkpoint)
        scores[suite] = result.score
        items[suite] = result.n
    return EvalReport(scores=scores, items=items)

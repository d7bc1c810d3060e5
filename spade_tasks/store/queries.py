"""Every question the stages ask of the run's DuckDB, as one named function each.

The name says what is asked, the docstring what comes back. Rows come back as dicts keyed
by column name (``Store.rows``); JSON columns that the callers read as dicts come back
decoded. Functions are grouped by the table they read or write, in ``SCHEMA``'s order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from spade_tasks.store.db import Store


def _first(rows: list[dict]) -> dict | None:
    return rows[0] if rows else None


def _metrics(value: Any) -> dict:
    """A JSON metrics column as a dict (DuckDB may hand back the text or the value)."""
    return json.loads(value) if isinstance(value, str) else (value or {})


# -- runs --------------------------------------------------------------------------------


def run_mlflow_id(store: Store, run: str) -> str | None:
    """The MLflow run id recorded for self-play run ``run``; None if none (or no row)."""
    row = _first(store.rows("SELECT mlflow_run_id FROM runs WHERE run = ?", [run]))
    return row["mlflow_run_id"] if row else None


# -- generations -------------------------------------------------------------------------


def generation_statuses(store: Store, run: str) -> list[dict]:
    """``{generation, status}`` of every recorded generation of ``run``, oldest first."""
    return store.rows(
        "SELECT generation, status FROM generations WHERE run = ? ORDER BY generation", [run])


def generation_record(store: Store, run: str, generation: int) -> dict | None:
    """The ``generations`` row of one generation (status, started_at, checkpoint,
    mlflow_run_id, metrics...), or None if it was never begun."""
    return _first(store.rows("SELECT * FROM generations WHERE run = ? AND generation = ?",
                             [run, generation]))


def latest_done_checkpoint(store: Store, run: str) -> dict | None:
    """``{generation, checkpoint}`` of the newest finished generation that wrote a
    checkpoint retention has not deleted; None if there is none."""
    return _first(store.rows(
        "SELECT generation, checkpoint FROM generations g WHERE run = ? AND status = 'done'"
        " AND checkpoint IS NOT NULL AND NOT EXISTS (SELECT 1 FROM checkpoints c"
        " WHERE c.run = g.run AND c.path = g.checkpoint AND c.deleted_at IS NOT NULL)"
        " ORDER BY generation DESC LIMIT 1", [run]))


def set_generation_mlflow_id(store: Store, run: str, generation: int, run_id: str) -> None:
    """Record the MLflow run of one generation on its ``generations`` row."""
    store.cursor().execute(
        "UPDATE generations SET mlflow_run_id = ? WHERE run = ? AND generation = ?",
        [run_id, run, generation])


def generation_metrics_rows(store: Store, run: str, done_only: bool = False) -> list[dict]:
    """``{generation, metrics}`` (metrics decoded to a dict) of the run's generations,
    only the finished ones when ``done_only``; in no particular order."""
    rows = store.rows("SELECT generation, metrics FROM generations WHERE run = ?"
                      + (" AND status = 'done'" if done_only else ""), [run])
    return [{**r, "metrics": _metrics(r["metrics"])} for r in rows]


def regret_history(store: Store, run: str) -> list[dict]:
    """Per generation (oldest first): ``{generation, regret, win_no_hint, win_hint}``,
    the means over its environments (None where none was scored)."""
    return store.rows(
        "SELECT g.generation, avg(r.regret) AS regret, avg(r.win_rate_no_hint) AS win_no_hint,"
        " avg(r.win_rate_hint) AS win_hint FROM generations g LEFT JOIN regrets r"
        " ON r.run = g.run AND r.generation = g.generation WHERE g.run = ?"
        " GROUP BY g.generation ORDER BY g.generation", [run])


def diversity_history(store: Store, run: str) -> list[dict]:
    """Per generation (oldest first): ``{generation, diversity}``, the memory diversity
    recorded in its metrics (None where absent)."""
    return store.rows(
        "SELECT generation, json_extract(metrics, '$.memory_diversity')::DOUBLE AS diversity"
        " FROM generations WHERE run = ? ORDER BY generation", [run])


# -- stages ------------------------------------------------------------------------------


def stage_result(store: Store, run: str, generation: int, stage: str) -> Any | None:
    """The decoded JSON result a finished stage recorded, or None if it has not run."""
    row = _first(store.rows(
        "SELECT result FROM stages WHERE run = ? AND generation = ? AND stage = ?",
        [run, generation, stage]))
    return json.loads(row["result"]) if row else None


def latest_warmstart_checkpoint(store: Store, run: str) -> dict | None:
    """``{generation, checkpoint}`` of the newest warm start that wrote a checkpoint;
    None if none did."""
    return _first(store.rows(
        "SELECT generation, json_extract_string(result, '$.checkpoint') AS checkpoint"
        " FROM stages WHERE run = ? AND stage = 'warmstart' AND"
        " json_extract_string(result, '$.checkpoint') IS NOT NULL"
        " ORDER BY generation DESC LIMIT 1", [run]))


def recorded_generations(store: Store, run: str) -> list[int]:
    """Every generation of ``run`` with a recorded stage or a ``generations`` row, in order."""
    return [r["generation"] for r in store.rows(
        "SELECT DISTINCT generation FROM stages WHERE run = ? UNION SELECT generation FROM"
        " generations WHERE run = ? ORDER BY generation", [run, run])]


def generations_with_stage(store: Store, run: str, stage: str) -> set[int]:
    """The generations of ``run`` that recorded ``stage``."""
    return {r["generation"] for r in store.rows(
        "SELECT DISTINCT generation FROM stages WHERE run = ? AND stage = ?", [run, stage])}


# -- documents ---------------------------------------------------------------------------


def document_use_counts(store: Store, run: str, except_generation: int) -> dict[str, int]:
    """``{doc_id: times sampled}`` over the run's generations other than
    ``except_generation``."""
    rows = store.rows("SELECT doc_id, count(*) AS n FROM documents WHERE run = ? "
                      "AND generation <> ? GROUP BY doc_id", [run, except_generation])
    return {r["doc_id"]: r["n"] for r in rows}


def documents_of(store: Store, run: str, generation: int) -> list[dict]:
    """``{doc_id, source, text}`` of the documents sampled for a generation, in sampling
    order."""
    return store.rows("SELECT doc_id, source, text FROM documents WHERE run = ? AND"
                      " generation = ? ORDER BY doc_idx", [run, generation])


def document(store: Store, run: str, generation: int, doc_id: str) -> dict | None:
    """``{source, text}`` of one document sampled in a generation, or None."""
    return _first(store.rows("SELECT source, text FROM documents WHERE run = ? AND"
                             " generation = ? AND doc_id = ?", [run, generation, doc_id]))


# -- designs -----------------------------------------------------------------------------


def designs_of(store: Store, run: str, generation: int) -> list[dict]:
    """Every ``designs`` row (all columns) of one generation, by design index."""
    return store.rows("SELECT * FROM designs WHERE run = ? AND generation = ?"
                      " ORDER BY design_idx", [run, generation])


def design(store: Store, run: str, generation: int, design_idx: int) -> dict | None:
    """One ``designs`` row (all columns), or None."""
    return _first(store.rows("SELECT * FROM designs WHERE run = ? AND generation = ? AND "
                             "design_idx = ?", [run, generation, design_idx]))


def run_designs(store: Store, run: str, rejected_only: bool = False) -> list[dict]:
    """``{generation, design_idx, accepted, env_id, reasons, reward, parent_env_id,
    revises}`` of every design of the run (only the rejected ones when
    ``rejected_only``), by generation and index."""
    return store.rows(
        "SELECT generation, design_idx, accepted, env_id, reasons, reward, parent_env_id,"
        " revises"
        " FROM designs"
        " WHERE run = ?" + (" AND NOT accepted" if rejected_only else "")
        + " ORDER BY generation, design_idx", [run])


def rejected_design_count(store: Store, run: str) -> int:
    """How many of the run's designs the validator rejected."""
    return store.rows("SELECT count(*) AS n FROM designs WHERE run = ? AND NOT accepted",
                      [run])[0]["n"]


def rejected_designs(store: Store, run: str, generation: int) -> list[dict]:
    """``{design_idx, doc_id, completion, reasons}`` of one generation's rejected designs,
    by index."""
    return store.rows("SELECT design_idx, doc_id, completion, reasons FROM designs"
                      " WHERE run = ? AND generation = ? AND NOT accepted"
                      " ORDER BY design_idx", [run, generation])


def last_design_generation(store: Store, run: str) -> int | None:
    """The highest generation with recorded designs; None for a run without any."""
    return store.rows("SELECT max(generation) AS g FROM designs WHERE run = ?", [run])[0]["g"]


def rewarded_designs(store: Store, run: str, generation: int) -> list[dict]:
    """``{prompt_token_ids, token_ids, logprobs, reward}`` of one generation's designs
    that got a reward, by index (the designer's training samples)."""
    return store.rows("SELECT prompt_token_ids, token_ids, logprobs, reward FROM designs"
                      " WHERE run = ? AND generation = ? AND reward IS NOT NULL"
                      " ORDER BY design_idx", [run, generation])


def design_summary(store: Store, run: str, generation: int) -> dict:
    """``{n, ok, reward}``: one generation's design count, accepted count (None when no
    designs) and mean reward (None when none was rewarded)."""
    return store.rows(
        "SELECT count(*) AS n, sum(CASE WHEN accepted THEN 1 ELSE 0 END) AS ok,"
        " avg(reward) AS reward FROM designs WHERE run = ? AND generation = ?",
        [run, generation])[0]


def rejection_counts(store: Store, run: str, generation: int) -> list[dict]:
    """``{check_name, n}``: how often each check (the reason's text before ':') refused
    a design of one generation."""
    return store.rows(
        "SELECT split_part(unnest(reasons), ':', 1) AS check_name, count(*) AS n FROM designs"
        " WHERE run = ? AND generation = ? GROUP BY 1", [run, generation])


def validity_history(store: Store, run: str) -> list[dict]:
    """Per generation with designs (oldest first): ``{generation, validity}``, the share
    of its designs the validator accepted."""
    return store.rows(
        "SELECT generation, avg(CASE WHEN accepted THEN 1.0 ELSE 0.0 END) AS validity"
        " FROM designs WHERE run = ? GROUP BY generation ORDER BY generation", [run])


def set_design_rewards(store: Store, run: str, generation: int,
                       rewards: Sequence[tuple[int, float | None]]) -> None:
    """Set ``designs.reward`` for each ``(design_idx, reward)`` of one generation, in one
    transaction (None writes NULL)."""
    with store.transaction() as cur:
        for design_idx, reward in rewards:
            cur.execute("UPDATE designs SET reward = ? WHERE run = ? AND generation = ? AND"
                        " design_idx = ?", [reward, run, generation, design_idx])


def designs_taken_into_memory(store: Store, run: str, before: int) -> list[dict]:
    """``{prompt, reasons, source}`` of every accepted design before generation ``before``
    whose environment the memory added in that design's generation, oldest first
    (``prompt`` is the JSON text)."""
    return store.rows(
        "SELECT d.prompt, d.reasons, e.source FROM designs d"
        " JOIN environments e ON e.env_id = d.env_id"
        " JOIN memory m ON m.env_id = d.env_id AND m.run = d.run"
        " AND m.added_generation = d.generation"
        " WHERE d.run = ? AND d.generation < ? AND d.accepted"
        " ORDER BY d.generation, d.design_idx", [run, before])


# -- validations -------------------------------------------------------------------------


def validations_of_env(store: Store, env_id: str) -> list[dict]:
    """``{generation, accepted, reasons, tier}`` of every validation of one environment."""
    return store.rows("SELECT generation, accepted, reasons, tier FROM validations"
                      " WHERE env_id = ?", [env_id])


# -- environments ------------------------------------------------------------------------


def environment(store: Store, env_id: str) -> dict | None:
    """One ``environments`` row (all columns), or None."""
    return _first(store.rows("SELECT * FROM environments WHERE env_id = ?", [env_id]))


def all_environments(store: Store) -> list[dict]:
    """Every ``environments`` row (all columns) of the file, in no particular order."""
    return store.rows("SELECT * FROM environments")


def flag_environment(store: Store, env_id: str, reason: str) -> None:
    """Set an environment's flag to ``reason`` unless it is flagged already."""
    store.cursor().execute("UPDATE environments SET flag = ? WHERE env_id = ? AND flag IS NULL",
                           [reason, env_id])


def flagged_env_ids(store: Store) -> set[str]:
    """The ids of every flagged environment."""
    return {r["env_id"] for r in store.rows(
        "SELECT env_id FROM environments WHERE flag IS NOT NULL")}


def rival_environments(store: Store, run: str, generation: int | None,
                       columns: Sequence[str]) -> list[dict]:
    """``columns`` of the environments a new design of ``run``/``generation`` must differ
    from: the seeds, every environment the run's memory ever held, and the run's
    environments of other generations; by env_id."""
    return store.rows(
        f"SELECT {', '.join(columns)} FROM environments WHERE origin = 'seed'"
        " OR env_id IN (SELECT env_id FROM memory WHERE run = ?)"
        " OR (run = ? AND generation IS DISTINCT FROM ?) ORDER BY env_id",
        [run, run, generation])


def environments_by_id(store: Store, env_ids: Sequence[str],
                       columns: Sequence[str]) -> list[dict]:
    """``columns`` of the environments ``env_ids`` names, by env_id."""
    return store.rows(f"SELECT {', '.join(columns)} FROM environments"
                      " WHERE env_id IN (SELECT UNNEST(?)) ORDER BY env_id", [list(env_ids)])


def designed_environments(store: Store, run: str, generation: int) -> list[dict]:
    """``{env_id, source}`` of the environments designed in one generation."""
    return store.rows("SELECT env_id, source FROM environments WHERE run = ? AND"
                      " generation = ? AND origin = 'designed'", [run, generation])


def environments_with_memory(store: Store, run: str) -> list[dict]:
    """The seeds and the run's environments, each with its memory statistics (plays,
    regret, win rates, active; None when never in the memory), seeds first, then by
    generation and env_id."""
    return store.rows(
        "SELECT e.env_id, e.origin, e.generation, e.title, e.class_name, e.path,"
        " m.plays, m.regret, m.win_rate_no_hint, m.win_rate_hint, m.active"
        " FROM environments e LEFT JOIN memory m ON m.env_id = e.env_id AND m.run = ?"
        " WHERE e.run = ? OR e.origin = 'seed'"
        " ORDER BY e.origin DESC, e.generation, e.env_id", [run, run])


# -- episodes and turns ------------------------------------------------------------------


def replace_episode_tables(store: Store, run: str, generation: int,
                           tables: Mapping[str, pa.Table]) -> None:
    """Replace one generation's rows of each table in ``tables`` (``episodes``, ``turns``)
    with the Arrow table's rows, all in one transaction. Arrow goes in far faster than
    ``replace_rows``' executemany on turns carrying long token-id lists."""
    import uuid

    with store.transaction() as cur:
        for name, table in tables.items():
            cur.execute(f"DELETE FROM {name} WHERE run = ? AND generation = ?", [run, generation])
            if table.num_rows:
                view = f"_rows_{uuid.uuid4().hex}"
                cur.register(view, table)
                try:
                    cur.execute(f"INSERT INTO {name} BY NAME SELECT * FROM {view}")
                finally:
                    cur.unregister(view)


def episode_returns(store: Store, run: str, generation: int) -> list[dict]:
    """``{env_id, with_hint, ret}`` of every episode of one generation, by episode id."""
    return store.rows('SELECT env_id, with_hint, "return" AS ret FROM episodes'
                      " WHERE run = ? AND generation = ? ORDER BY episode_id", [run, generation])


def no_hint_returns(store: Store, run: str, generation: int) -> list[dict]:
    """``{episode_id, env_id, ret}`` of one generation's episodes played without a hint,
    by episode id."""
    return store.rows('SELECT episode_id, env_id, "return" AS ret FROM episodes WHERE run = ?'
                      " AND generation = ? AND NOT with_hint ORDER BY episode_id",
                      [run, generation])


def no_hint_returns_by_env(store: Store, run: str, before: int) -> dict[str, list[float]]:
    """The returns of every episode played without a hint before generation ``before``,
    by environment."""
    out: dict[str, list[float]] = {}
    for r in store.rows('SELECT env_id, "return" AS ret FROM episodes WHERE run = ?'
                        " AND generation < ? AND NOT with_hint ORDER BY episode_id",
                        [run, before]):
        out.setdefault(r["env_id"], []).append(r["ret"])
    return out


def no_hint_return_summary(store: Store, run: str, generation: int) -> dict:
    """``{r, n}``: mean return and count of one generation's no-hint episodes."""
    return store.rows(
        'SELECT avg("return") AS r, count(*) AS n FROM episodes WHERE run = ? AND generation = ?'
        " AND NOT with_hint", [run, generation])[0]


def episode_ids(store: Store, run: str, generation: int, limit: int) -> list[str]:
    """The first ``limit`` episode ids of one generation, in id order."""
    return [r["episode_id"] for r in store.rows(
        "SELECT episode_id FROM episodes WHERE run = ? AND generation = ?"
        " ORDER BY episode_id LIMIT ?", [run, generation, limit])]


def episodes_of_env(store: Store, env_id: str) -> list[dict]:
    """``{episode_id, generation, seed, with_hint, return, turns, end_reason}`` of every
    episode of one environment, by generation and episode id."""
    return store.rows('SELECT episode_id, generation, seed, with_hint, "return", turns,'
                      " end_reason FROM episodes WHERE env_id = ? ORDER BY generation,"
                      " episode_id", [env_id])


def episodes_by_id(store: Store, episode_id: str, run: str | None = None,
                   generation: int | None = None) -> list[dict]:
    """Every ``episodes`` row with this id (in ``run``/``generation`` when given), each
    with its environment's ``title``, newest generation first."""
    where, params = ["e.episode_id = ?"], [episode_id]
    if run is not None:
        where.append("e.run = ?")
        params.append(run)
    if generation is not None:
        where.append("e.generation = ?")
        params.append(generation)
    return store.rows(
        "SELECT e.*, v.title FROM episodes e LEFT JOIN environments v ON v.env_id = e.env_id "
        f"WHERE {' AND '.join(where)} ORDER BY e.generation DESC", params)


def turns_of(store: Store, run: str, generation: int, episode_id: str) -> list[dict]:
    """``{turn, action, observation, reward, n_tokens}`` of one episode's turns, in order."""
    return store.rows(
        "SELECT turn, action, observation, reward, len(token_ids) AS n_tokens FROM turns "
        "WHERE run = ? AND generation = ? AND episode_id = ? ORDER BY turn",
        [run, generation, episode_id])


def turn_samples(store: Store, run: str, generation: int) -> list[dict]:
    """``{episode_id, prompt_token_ids, token_ids, logprobs}`` of every turn of one
    generation, by episode and turn (the agent's training samples)."""
    return store.rows("SELECT episode_id, prompt_token_ids, token_ids, logprobs FROM turns"
                      " WHERE run = ? AND generation = ? ORDER BY episode_id, turn",
                      [run, generation])


# -- regrets -----------------------------------------------------------------------------


def regrets_of(store: Store, run: str, generation: int) -> list[dict]:
    """Every ``regrets`` row (all columns) of one generation."""
    return store.rows("SELECT * FROM regrets WHERE run = ? AND generation = ?",
                      [run, generation])


def regrets_of_env(store: Store, env_id: str) -> list[dict]:
    """Every ``regrets`` row (all columns) of one environment, by generation."""
    return store.rows("SELECT * FROM regrets WHERE env_id = ? ORDER BY generation", [env_id])


def mean_win_rate_no_hint(store: Store, run: str, generation: int) -> float | None:
    """The mean no-hint win rate over one generation's scored environments; None if none."""
    return store.rows("SELECT avg(win_rate_no_hint) AS w FROM regrets WHERE run = ? AND"
                      " generation = ?", [run, generation])[0]["w"]


def regret_summary(store: Store, run: str, generation: int) -> dict:
    """``{regret, w, wh, envs}``: one generation's mean regret, no-hint and hint win
    rates, and how many environments were scored."""
    return store.rows(
        "SELECT avg(regret) AS regret, avg(win_rate_no_hint) AS w, avg(win_rate_hint) AS wh,"
        " count(*) AS envs FROM regrets WHERE run = ? AND generation = ?",
        [run, generation])[0]


def regret_means_by_generation(store: Store, run: str) -> list[dict]:
    """``{generation, w, wh, regret}`` per scored generation: the means over its
    environments."""
    return store.rows(
        "SELECT generation, avg(win_rate_no_hint) AS w, avg(win_rate_hint) AS wh,"
        " avg(regret) AS regret FROM regrets WHERE run = ? GROUP BY generation", [run])


# -- train_steps -------------------------------------------------------------------------


def train_step_metrics(store: Store, run: str) -> list[dict]:
    """``{generation, metrics}`` (decoded) of every training step of the run, in no
    particular order."""
    return [{**r, "metrics": _metrics(r["metrics"])} for r in store.rows(
        "SELECT generation, metrics FROM train_steps WHERE run = ?", [run])]


# -- checkpoints -------------------------------------------------------------------------


def checkpoint_record(store: Store, run: str, generation: int) -> dict | None:
    """One generation's ``checkpoints`` row (all columns), or None."""
    return _first(store.rows("SELECT * FROM checkpoints WHERE run = ? AND generation = ?",
                             [run, generation]))


def live_checkpoints(store: Store, run: str) -> list[dict]:
    """The run's ``checkpoints`` rows retention has not deleted, oldest first."""
    return store.rows("SELECT * FROM checkpoints WHERE run = ? AND deleted_at IS NULL"
                      " ORDER BY generation", [run])


# -- memory ------------------------------------------------------------------------------


def memory_env_ids(store: Store, run: str) -> set[str]:
    """Every environment the run's memory holds, active or evicted."""
    return {r["env_id"] for r in store.rows("SELECT env_id FROM memory WHERE run = ?", [run])}


def in_memory(store: Store, run: str, env_id: str) -> bool:
    """Whether the run's memory holds ``env_id`` (active or evicted)."""
    return bool(store.rows("SELECT 1 FROM memory WHERE run = ? AND env_id = ?", [run, env_id]))


def memory_with_environments(store: Store, run: str, env_columns: Sequence[str],
                             active_only: bool = True) -> list[dict]:
    """Each memory row of the run (only active ones when ``active_only``) joined with its
    environment's ``env_columns``, those prefixed ``e_``; by env_id."""
    cols = ", ".join(f"e.{c} AS e_{c}" for c in env_columns)
    return store.rows(
        f"SELECT m.*, {cols} FROM memory m JOIN environments e USING (env_id) "
        f"WHERE m.run = ? {'AND m.active' if active_only else ''} ORDER BY m.env_id", [run])


def memory_additions(store: Store, run: str) -> list[dict]:
    """``{added_generation, env_id}`` of every environment the run's memory took in."""
    return store.rows("SELECT added_generation, env_id FROM memory WHERE run = ?", [run])


def memory_of_env(store: Store, env_id: str) -> list[dict]:
    """Every ``memory`` row (all columns, any run) of one environment."""
    return store.rows("SELECT * FROM memory WHERE env_id = ?", [env_id])


def active_flagged_memory(store: Store, run: str) -> list[str]:
    """The run's active memory entries whose environment is flagged, by env_id."""
    return [r["env_id"] for r in store.rows(
        "SELECT m.env_id FROM memory m JOIN environments e USING (env_id)"
        " WHERE m.run = ? AND m.active AND e.flag IS NOT NULL ORDER BY m.env_id", [run])]


def deactivate_memory_entry(store: Store, run: str, env_id: str) -> None:
    """Mark one memory entry inactive (its row and statistics stay)."""
    store.cursor().execute("UPDATE memory SET active = false WHERE run = ? AND env_id = ?",
                           [run, env_id])


# -- evaluations (created on first use: only runs that evaluate have the table) -----------

EVALUATIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS evaluations (
    run VARCHAR, suite VARCHAR, checkpoint VARCHAR, item_id VARCHAR, score DOUBLE,
    response VARCHAR, created_at TIMESTAMP, PRIMARY KEY (run, suite, item_id));
"""


def ensure_evaluations_table(store: Store) -> None:
    """Create the ``evaluations`` table if this file does not have it yet."""
    store.con.execute(EVALUATIONS_SCHEMA)


def evaluation_runs(store: Store) -> list[str]:
    """The names of every evaluation run recorded in the file, sorted."""
    return [r["run"] for r in store.rows("SELECT DISTINCT run FROM evaluations ORDER BY run")]


def compare_evaluations(store: Store, run_a: str, run_b: str) -> list[dict]:
    """Per suite (sorted), over the items both evaluation runs scored: ``{suite, n,
    score_a, score_b, delta, improved, regressed}``."""
    return store.rows("""
        SELECT a.suite, count(*) AS n, avg(a.score) AS score_a, avg(b.score) AS score_b,
               avg(b.score) - avg(a.score) AS delta,
               sum(CASE WHEN b.score > a.score THEN 1 ELSE 0 END) AS improved,
               sum(CASE WHEN b.score < a.score THEN 1 ELSE 0 END) AS regressed
        FROM evaluations a JOIN evaluations b ON a.suite = b.suite AND a.item_id = b.item_id
        WHERE a.run = ? AND b.run = ?
        GROUP BY a.suite ORDER BY a.suite""", [run_a, run_b])


def evaluation_scores(store: Store, eval_run: str) -> list[dict]:
    """``{suite, item_id, score}`` of every item one evaluation run scored."""
    return store.rows("SELECT suite, item_id, score FROM evaluations WHERE run = ?", [eval_run])


def newest_evaluation_runs(store: Store) -> list[dict]:
    """``{suite, run}``: per suite, the evaluation run recorded last."""
    return store.rows("""
        SELECT suite, arg_max(run, created_at) AS run FROM evaluations GROUP BY suite""")


__all__ = [name for name, v in list(globals().items())
           if callable(v) and not name.startswith("_") and getattr(v, "__module__", "") == __name__]
__all__ += ["EVALUATIONS_SCHEMA"]

"""The run's DuckDB file: documents, designs, validations, environments, episodes, turns,
regrets, training steps, memory and generation state.

DuckDB allows one writing process per file, so a process holds ONE connection (``Store``)
and threads take ``store.cursor()``. Every row is keyed by (run, generation, item), and
each stage writes its rows with ``replace_rows``: delete the stage's keys for that
generation, insert, commit, all in one transaction. A stage rerun after a crash therefore
leaves exactly one copy of every row, never a half-written set.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run VARCHAR PRIMARY KEY, created_at TIMESTAMP DEFAULT current_timestamp,
    config JSON, mlflow_run_id VARCHAR);
CREATE TABLE IF NOT EXISTS generations (
    run VARCHAR, generation INTEGER, status VARCHAR, started_at TIMESTAMP,
    finished_at TIMESTAMP, checkpoint VARCHAR, mlflow_run_id VARCHAR, metrics JSON,
    PRIMARY KEY (run, generation));
CREATE TABLE IF NOT EXISTS documents (
    run VARCHAR, generation INTEGER, doc_idx INTEGER, doc_id VARCHAR, source VARCHAR,
    text VARCHAR, PRIMARY KEY (run, generation, doc_idx));
CREATE TABLE IF NOT EXISTS designs (
    run VARCHAR, generation INTEGER, design_idx INTEGER, doc_id VARCHAR, setting VARCHAR,
    prompt JSON, completion VARCHAR, prompt_token_ids INTEGER[], token_ids INTEGER[],
    logprobs DOUBLE[], env_id VARCHAR, accepted BOOLEAN, reasons VARCHAR[], reward DOUBLE,
    PRIMARY KEY (run, generation, design_idx));
CREATE TABLE IF NOT EXISTS validations (
    run VARCHAR, generation INTEGER, design_idx INTEGER, env_id VARCHAR, accepted BOOLEAN,
    reasons VARCHAR[], tier VARCHAR, seconds DOUBLE,
    PRIMARY KEY (run, generation, design_idx));
CREATE TABLE IF NOT EXISTS environments (
    env_id VARCHAR PRIMARY KEY, run VARCHAR, generation INTEGER, origin VARCHAR,
    path VARCHAR, class_name VARCHAR, title VARCHAR, doc VARCHAR, source VARCHAR,
    max_turns INTEGER, has_hint BOOLEAN, has_oracle BOOLEAN, doc_id VARCHAR,
    feasibility_verified BOOLEAN, fingerprint VARCHAR, flag VARCHAR);
-- Columns added after the first release: files made before them gain them here.
ALTER TABLE environments ADD COLUMN IF NOT EXISTS feasibility_verified BOOLEAN;
ALTER TABLE environments ADD COLUMN IF NOT EXISTS fingerprint VARCHAR;
ALTER TABLE environments ADD COLUMN IF NOT EXISTS flag VARCHAR;
ALTER TABLE designs ADD COLUMN IF NOT EXISTS parent_env_id VARCHAR;
ALTER TABLE designs ADD COLUMN IF NOT EXISTS revises INTEGER;
CREATE TABLE IF NOT EXISTS episodes (
    run VARCHAR, generation INTEGER, episode_id VARCHAR, env_id VARCHAR, seed BIGINT,
    with_hint BOOLEAN, hint VARCHAR, "return" DOUBLE, turns INTEGER, terminated BOOLEAN,
    truncated BOOLEAN, end_reason VARCHAR, final_observation VARCHAR, error VARCHAR,
    PRIMARY KEY (run, generation, episode_id));
CREATE TABLE IF NOT EXISTS turns (
    run VARCHAR, generation INTEGER, episode_id VARCHAR, turn INTEGER,
    prompt_token_ids INTEGER[], token_ids INTEGER[], logprobs DOUBLE[], action VARCHAR,
    observation VARCHAR, reward DOUBLE, PRIMARY KEY (run, generation, episode_id, turn));
CREATE TABLE IF NOT EXISTS regrets (
    run VARCHAR, generation INTEGER, env_id VARCHAR, episodes INTEGER,
    mean_return_hint DOUBLE, mean_return_no_hint DOUBLE, win_rate_hint DOUBLE,
    win_rate_no_hint DOUBLE, regret DOUBLE, designer_reward DOUBLE,
    PRIMARY KEY (run, generation, env_id));
CREATE TABLE IF NOT EXISTS train_steps (
    run VARCHAR, generation INTEGER, step INTEGER, metrics JSON, checkpoint VARCHAR,
    PRIMARY KEY (run, generation, step));
CREATE TABLE IF NOT EXISTS checkpoints (
    run VARCHAR, generation INTEGER, path VARCHAR, mlflow_model_id VARCHAR,
    model_uri VARCHAR, optimizer_state BOOLEAN, deleted_at TIMESTAMP,
    PRIMARY KEY (run, generation));
CREATE TABLE IF NOT EXISTS stages (
    run VARCHAR, generation INTEGER, stage VARCHAR, finished_at TIMESTAMP, seconds DOUBLE,
    result JSON, PRIMARY KEY (run, generation, stage));
CREATE TABLE IF NOT EXISTS memory (
    run VARCHAR, env_id VARCHAR, added_generation INTEGER, last_generation INTEGER,
    plays INTEGER, regret DOUBLE, win_rate_no_hint DOUBLE, win_rate_hint DOUBLE,
    active BOOLEAN, PRIMARY KEY (run, env_id));
"""


class Store:
    """One DuckDB connection for this process; ``cursor()`` for each thread."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = duckdb.connect(str(self.path))
        self.con.execute(SCHEMA)
        self._lock = threading.Lock()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.con.cursor()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor inside BEGIN ... COMMIT; any exception rolls back and re-raises.
        The one transaction idiom of the store: every multi-statement write goes through it."""
        cur = self.cursor()
        cur.execute("BEGIN TRANSACTION")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        finally:
            cur.close()

    # -- writes ------------------------------------------------------------------------
    def replace_rows(self, table: str, key: dict[str, Any], rows: Sequence[dict],
                     among: tuple[str, Sequence[Any]] | None = None) -> None:
        """Atomically replace every row of ``table`` matching ``key`` with ``rows``;
        ``among=(column, values)`` narrows the rows replaced to those whose ``column`` is
        one of ``values``."""
        where = " AND ".join(f'"{k}" = ?' for k in key)
        params = list(key.values())
        if among is not None:
            column, values = among
            where += f' AND "{column}" IN (SELECT UNNEST(?))'
            params.append(list(values))
        with self._lock, self.transaction() as cur:
            cur.execute(f"DELETE FROM {table} WHERE {where}", params)
            if rows:
                cols = list(rows[0])
                names = ", ".join(f'"{c}"' for c in cols)
                marks = ", ".join("?" for _ in cols)
                cur.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                                [[_encode(r[c]) for c in cols] for r in rows])

    def upsert(self, table: str, row: dict) -> None:
        """Insert or replace one row by its primary key."""
        cols = list(row)
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        with self._lock:
            self.cursor().execute(f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({marks})",
                                  [_encode(row[c]) for c in cols])

    def insert_new(self, table: str, row: dict) -> bool:
        """Insert one row unless its primary key is taken (never replaces); True if new."""
        cols = list(row)
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        with self._lock:
            cur = self.cursor()
            cur.execute(f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks}) RETURNING 1",
                        [_encode(row[c]) for c in cols])
            return bool(cur.fetchall())

    # -- reads ---------------------------------------------------------------------------
    def rows(self, sql: str, params: Iterable = ()) -> list[dict]:
        """The rows of one query as dicts keyed by column name (for the query functions in
        ``spade_tasks.store.queries`` and for tests; stages call those functions)."""
        cur = self.cursor()
        cur.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def count(self, table: str, **where) -> int:
        cond = " AND ".join(f'"{k}" = ?' for k in where) or "TRUE"
        return self.cursor().execute(f"SELECT count(*) FROM {table} WHERE {cond}",
                                     list(where.values())).fetchone()[0]


def _encode(v: Any) -> Any:
    if isinstance(v, dict):
        return json.dumps(v)
    return v

"""The store: SQL lives only in ``spade_tasks/store/``, and its query functions and
transaction idiom behave as the stages rely on."""

import re
from pathlib import Path

import pytest

from spade_tasks.store import Store, queries

ROOT = Path(__file__).resolve().parent.parent
STORE_DIR = ROOT / "spade_tasks" / "store"

# SQL statements, and the store's raw entry points (a query in lower case still needs one).
SQL = re.compile(r"\bSELECT\b|\bINSERT\s+(?:OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+|\bDELETE\s+FROM\b"
                 r"|\bCREATE\s+TABLE\b|\bALTER\s+TABLE\b|\.rows\(|\.execute\(|\.executemany\(")


def sql_outside_store(paths, root: Path = ROOT, store_dir: Path = STORE_DIR) -> list[str]:
    """``file:line: text`` of every line of ``paths`` outside ``store_dir`` that holds
    SQL or calls the store's raw query methods."""
    hits = []
    for path in paths:
        if store_dir in path.parents:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SQL.search(line):
                hits.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    return hits


def test_sql_lives_only_in_the_store_module():
    paths = [p for pkg in ("spade_tasks", "flows") for p in sorted((ROOT / pkg).rglob("*.py"))]
    hits = sql_outside_store(paths)
    assert not hits, "SQL outside spade_tasks/store (add a named query there):\n" + "\n".join(hits)


@pytest.mark.parametrize("line", [
    'rows = store.rows("SELECT * FROM designs WHERE run = ?", [run])',
    'cur.execute("UPDATE memory SET active = false")',
    '"DELETE FROM turns WHERE run = ?"',
    'store.rows("select 1")',
])
def test_the_scan_names_file_and_line_of_stray_sql(tmp_path, line):
    store_dir = tmp_path / "spade_tasks" / "store"
    store_dir.mkdir(parents=True)
    stage, query = tmp_path / "spade_tasks" / "stage.py", store_dir / "queries.py"
    for path in (stage, query):
        path.write_text(f"x = 1\n{line}\n")
    assert sql_outside_store([stage, query], tmp_path, store_dir) == [
        f"spade_tasks/stage.py:2: {line}"]


def _design(run, generation, idx, accepted=True, reward=None):
    return {"run": run, "generation": generation, "design_idx": idx, "accepted": accepted,
            "reasons": [] if accepted else ["parse: bad"], "reward": reward,
            "completion": f"c{idx}", "token_ids": [1, 2]}


def test_set_design_rewards_writes_all_or_nothing(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        for i in range(3):
            store.upsert("designs", _design("r", 0, i))
        queries.set_design_rewards(store, "r", 0, [(0, 1.0), (1, None), (2, -1.0)])
        assert [d["reward"] for d in queries.designs_of(store, "r", 0)] == [1.0, None, -1.0]
        with pytest.raises(Exception):
            queries.set_design_rewards(store, "r", 0, [(0, 0.5), (1, "not a number")])
        assert [d["reward"] for d in queries.designs_of(store, "r", 0)] == [1.0, None, -1.0]


def test_transaction_rolls_back_on_error(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        store.upsert("designs", _design("r", 0, 0))
        with pytest.raises(RuntimeError), store.transaction() as cur:
            cur.execute("DELETE FROM designs")
            raise RuntimeError("crash mid-write")
        assert len(queries.designs_of(store, "r", 0)) == 1


def test_generation_queries(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        assert queries.generation_record(store, "r", 0) is None
        assert queries.last_design_generation(store, "r") is None
        store.upsert("generations", {"run": "r", "generation": 0, "status": "done",
                                     "checkpoint": "/ck/0", "metrics": {"loss": 0.5}})
        store.upsert("generations", {"run": "r", "generation": 1, "status": "running"})
        store.upsert("designs", _design("r", 1, 0, accepted=False))
        assert queries.generation_record(store, "r", 0)["checkpoint"] == "/ck/0"
        assert [r["status"] for r in queries.generation_statuses(store, "r")] == ["done",
                                                                                 "running"]
        done = queries.generation_metrics_rows(store, "r", done_only=True)
        assert done == [{"generation": 0, "metrics": {"loss": 0.5}}]
        assert queries.latest_done_checkpoint(store, "r") == {"generation": 0,
                                                              "checkpoint": "/ck/0"}
        assert queries.last_design_generation(store, "r") == 1
        assert queries.rejected_design_count(store, "r") == 1
        assert [d["design_idx"] for d in queries.run_designs(store, "r", rejected_only=True)] == [0]
        queries.set_generation_mlflow_id(store, "r", 1, "ml-1")
        assert queries.generation_record(store, "r", 1)["mlflow_run_id"] == "ml-1"

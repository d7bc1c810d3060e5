"""spade report: rows computed from hand-made DuckDB rows, the PNG, the command's JSON."""

import json

import pytest

from spade_tasks import report
from spade_tasks.cli import main
from spade_tasks.store import Store


def _design(gen, idx, env_id, accepted, reasons, reward, parent=None, revises=None):
    return {"run": "r", "generation": gen, "design_idx": idx, "doc_id": None,
            "setting": "games", "prompt": "[]", "completion": "", "prompt_token_ids": [],
            "token_ids": [], "logprobs": [], "env_id": env_id, "accepted": accepted,
            "reasons": reasons, "reward": reward, "parent_env_id": parent,
            "revises": revises}


def _fill(store: Store) -> None:
    store.replace_rows("designs", {"run": "r", "generation": 0}, [
        _design(0, 0, None, False, ["parse: no python code block"], -1.0),
        _design(0, 1, None, False, ["parse: line 3: invalid syntax"], -0.9),
        _design(0, 2, "e1", True, [], 0.2, "seed"),        # new: the memory took it
        _design(0, 3, "seed", True, [], 0.0, "seed"),      # a seed's copy: not new
    ])
    store.replace_rows("designs", {"run": "r", "generation": 1}, [
        _design(1, 0, "e2", False, ["duplicate: same behaviour as e1"], -1.0),
        _design(1, 1, "e3", True, [], 0.5),                # refused by the memory
    ])
    for env, gen in (("seed", -1), ("e1", 0)):
        store.upsert("memory", {"run": "r", "env_id": env, "added_generation": gen,
                                "active": True})
    store.replace_rows("regrets", {"run": "r", "generation": 0}, [
        {"run": "r", "generation": 0, "env_id": e, "episodes": 2, "win_rate_no_hint": w,
         "win_rate_hint": wh, "regret": rg} for e, w, wh, rg in
        (("e1", 0.0, 0.5, 0.4), ("seed", 0.5, 0.5, 0.0))])
    store.replace_rows("train_steps", {"run": "r", "generation": 0}, [
        {"run": "r", "generation": 0, "step": 0, "checkpoint": "c",
         "metrics": {"train_samples_designer": 4, "train_samples_agent": 12}}])
    for g in (0, 1):
        for stage in ("design_environments", "update_memory"):
            store.upsert("stages", {"run": "r", "generation": g, "stage": stage,
                                    "result": "[]"})
    store.upsert("generations", {"run": "r", "generation": 0, "status": "done",
                                 "metrics": {"train_world_size": 1}})


def test_rows_count_only_new_accepted_designs(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        _fill(store)
        g0, g1 = report.generation_rows(store, "r")
    assert (g0["designs"], g0["accepted"], g0["validity_rate"]) == (4, 1, 0.25)
    assert g0["rejections"] == {"duplicate": 1, "no_code": 1, "parse": 1}
    assert g0["designer_reward_mean"] == pytest.approx((-1.0 - 0.9 + 0.2 + 0.0) / 4)
    assert (g0["designer_samples_trained"], g0["agent_samples_trained"]) == (4, 12)
    assert g0["win_rate_no_hint"] == pytest.approx(0.25)
    assert g0["win_rate_hint"] == pytest.approx(0.5)
    assert g0["regret_mean"] == pytest.approx(0.2)
    assert g0["train_world_size"] == 1 and g0["rollout_workers"] is None
    assert (g0["variants"], g0["variants_accepted"]) == (2, 1)
    assert (g1["designs"], g1["accepted"]) == (2, 0)
    assert g1["rejections"] == {"duplicate": 2}
    assert g1["designer_samples_trained"] is None and g1["regret_mean"] is None
    assert (g1["variants"], g1["variants_accepted"]) == (0, 0)
    assert list(g0) == list(report.FIELDS)


def test_a_generation_before_its_memory_update_has_unjudged_designs_not_duplicates(tmp_path):
    """The memory takes a generation's designs in at its last stage: until then (a run
    still in its train step, or stopped there) a design the validator accepted is
    neither new nor a copy. Counting it a duplicate misreported a stopped generation
    (learn-s37's generation 2: 'duplicate 2', then 2 accepted as new once resumed)."""
    with Store(tmp_path / "s.duckdb") as store:
        _fill(store)
        store.replace_rows("designs", {"run": "r", "generation": 2}, [
            _design(2, 0, "e4", True, [], 0.1),
            _design(2, 1, "e5", False, ["duplicate: same behaviour as e1"], -1.0),
            _design(2, 2, None, False, ["parse: line 3: invalid syntax"], -0.9),
        ])
        store.upsert("stages", {"run": "r", "generation": 2, "stage": "train_step",
                                "result": "[]"})
        g2 = report.generation_rows(store, "r")[2]
        assert (g2["accepted"], g2["unjudged"]) == (0, 1)
        assert g2["rejections"] == {"duplicate": 1, "parse": 1}
        assert "1 awaiting the memory update" in report.table([g2])
        store.upsert("memory", {"run": "r", "env_id": "e4", "added_generation": 2,
                                "active": True})
        store.upsert("stages", {"run": "r", "generation": 2, "stage": "update_memory",
                                "result": "[]"})
        g2 = report.generation_rows(store, "r")[2]
    assert (g2["accepted"], g2["unjudged"]) == (1, 0)
    assert g2["rejections"] == {"duplicate": 1, "parse": 1}


def test_report_command_json_and_png(tmp_path, capsys):
    root = tmp_path / "runs"
    with Store(root / "r" / "spade.duckdb") as store:
        _fill(store)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"run:\n  name: r\n  root: {root}\ntracking:\n"
                   f"  mlflow_uri: sqlite:///{tmp_path}/m.db\n")
    assert main(["report", "--config", str(cfg), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"run", "generations"} and out["run"] == "r"
    assert [g["accepted"] for g in out["generations"]] == [1, 0]
    png = root / "r" / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["report", "--config", str(cfg)]) == 0
    text = capsys.readouterr().out
    assert "no_code 1" in text and "duplicate 2" in text


def test_report_of_a_run_whose_mlflow_store_is_elsewhere_still_prints(tmp_path, capsys):
    root = tmp_path / "runs"
    with Store(root / "r" / "spade.duckdb") as store:
        _fill(store)
        # Its MLflow run lives in a store this config does not name (a copied run folder).
        store.upsert("runs", {"run": "r", "mlflow_run_id": "0" * 32})
    cfg = tmp_path / "c.yaml"
    uri = f"sqlite:///{tmp_path}/m.db"
    cfg.write_text(f"run:\n  name: r\n  root: {root}\ntracking:\n  mlflow_uri: {uri}\n")
    assert main(["report", "--config", str(cfg), "--json"]) == 0
    out, err = capsys.readouterr()
    assert [g["accepted"] for g in json.loads(out)["generations"]] == [1, 0]
    said = [ln for ln in err.splitlines() if "0" * 32 in ln]
    assert len(said) == 1 and uri in said[0] and "Traceback" not in err


def test_report_of_a_missing_run_is_one_line_error(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"run:\n  root: {tmp_path}\n")
    assert main(["report", "--config", str(cfg), "--run", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err


def test_a_revised_design_counts_once_with_its_last_drafts_outcome(tmp_path):
    """designer.revisions: a design is its first draft and its rewrites; ``designs``
    counts first drafts, ``accepted`` a design accepted at any draft, and the rejection
    shown is the last draft's."""
    revised = [
        _design(0, 0, None, False, ["step_return: exception: NameError (line 3): x"], -0.5),
        _design(0, 1, None, False, ["parse: line 2: invalid syntax"], -0.9),
        _design(0, 2, "e1", True, [], 0.2, revises=0),        # rewrite of 0: accepted
        _design(0, 3, None, False, ["answer_given: always shown"], -0.3, revises=1),
    ]
    with Store(tmp_path / "s.duckdb") as store:
        store.replace_rows("designs", {"run": "r", "generation": 0}, revised)
        store.upsert("memory", {"run": "r", "env_id": "e1", "added_generation": 0,
                                "active": True})
        for stage in ("design_environments", "update_memory"):
            store.upsert("stages", {"run": "r", "generation": 0, "stage": stage,
                                    "result": "[]"})
        (row,) = report.generation_rows(store, "r")
    assert (row["designs"], row["accepted"], row["validity_rate"]) == (2, 1, 0.5)
    assert (row["revisions"], row["revisions_accepted"]) == (2, 1)
    assert row["rejections"] == {"answer_given": 1}
    assert row["designer_reward_mean"] == pytest.approx((-0.5 - 0.9 + 0.2 - 0.3) / 4)
    assert "revised 2, 1 accepted" in report.table([row])


def test_recheck_counts_a_runs_new_designs_under_todays_checks(tmp_path, capsys):
    """A design accepted as new before a check existed (here ``answer_asked``) is
    counted again under it: ``accepted_now`` and ``refused_now`` by the refusing check.
    So is one that computes what a program of the pool computes (``sort_three.py``'s
    game: the duplicate rule's ``same_answers_reason``)."""
    from tests.test_asked import SORTED_QUIZ

    root = tmp_path / "runs"
    backwards = SORTED_QUIZ.replace("sorted(shown)", "sorted(shown, reverse=True)").replace(
        "in alphabetical order", "in reverse alphabetical order")
    firsts = SORTED_QUIZ.replace("sorted(shown)", "[w[0] for w in shown]")
    with Store(root / "r" / "spade.duckdb") as store:
        _fill(store)
        store.replace_rows("designs", {"run": "r", "generation": 1}, [
            _design(1, 0, "e4", True, [], 0.5), _design(1, 1, "e5", True, [], 0.5)])
        for env_id in ("e4", "e5"):
            store.upsert("memory", {"run": "r", "env_id": env_id, "added_generation": 1,
                                    "active": True})
        for env_id, gen, source in (("e1", 0, backwards), ("e4", 1, firsts),
                                    ("e5", 1, SORTED_QUIZ)):
            store.upsert("environments", {"env_id": env_id, "run": "r", "generation": gen,
                                          "origin": "designed", "source": source})
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"run:\n  name: r\n  root: {root}\ntracking:\n"
                   f"  mlflow_uri: sqlite:///{tmp_path}/m.db\n")
    assert main(["report", "--config", str(cfg), "--recheck", "--json"]) == 0
    g0, g1 = json.loads(capsys.readouterr().out)["generations"]
    assert (g0["accepted"], g0["accepted_now"], g0["refused_now"]) == (1, 1, {})
    assert (g1["accepted"], g1["accepted_now"], g1["refused_now"]) == (
        2, 0, {"answer_asked": 1, "duplicate": 1})
    assert main(["report", "--config", str(cfg), "--recheck"]) == 0
    assert "0 accepted under today's checks, answer_asked 1, duplicate 1" in \
        capsys.readouterr().out

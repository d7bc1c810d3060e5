"""The command line as users and scripts run it: a subprocess per call."""

import json
import os
import random
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.test_validation import GOOD

SPADE = [sys.executable, "-m", "spade_tasks.cli"]


def spade(*args, cwd=None):
    return subprocess.run([*SPADE, *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_validate_json_fields_and_exit_codes(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n" + GOOD)
    r = spade("validate", good, "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout.strip())
    assert obj["path"] == str(good) and obj["accepted"] is True and obj["reasons"] == []
    r = spade("validate", good, bad, "--json")
    assert r.returncode == 1
    lines = [json.loads(x) for x in r.stdout.strip().splitlines()]
    assert [x["accepted"] for x in lines] == [True, False]
    assert lines[1]["reasons"][0].startswith("imports:")


def test_play_oracle_json(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    r = spade("play", good, "--policy", "oracle", "--seed", "4", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    design_keys = {"path": str(good), "seed": 4, "return": 1.0, "turns": obj["turns"],
                   "terminated": True}
    assert {k: obj[k] for k in design_keys} == design_keys
    assert 1 <= obj["turns"] <= 6
    # The transcript: one reward and one observation after each action.
    assert obj["truncated"] is False and obj["end_reason"] == "terminated"
    assert obj["policy"] == "oracle" and obj["class_name"] == "PickEnv"
    assert len(obj["actions"]) == len(obj["rewards"]) == obj["turns"]
    assert len(obj["observations"]) == obj["turns"] + 1
    assert obj["observations"][0].startswith("Guess a number") and obj["observations"][-1] == "Correct!"
    assert obj["rewards"][-1] == 1.0 and obj["actions"][-1] == str(random.Random(4).randint(1, 9))


def test_play_transcript_shows_hint(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    r = spade("play", good, "--hint")
    assert r.returncode == 0, r.stderr
    assert "[hint]\nHalve the interval" in r.stdout and "== return 1" in r.stdout


def test_user_errors_are_one_line_exit_2(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("sandbox:\n  tmpfs_mb: lots\n")
    cases = [
        (["validate", tmp_path / "missing.py"], "missing.py: no such file"),
        (["validate", good, "--config", bad_cfg], "sandbox.tmpfs_mb"),
        (["validate", good, "--config", tmp_path / "none.yaml"], "config file not found"),
        (["play", tmp_path / "missing.py"], "no such file"),
        (["play", good, "--policy", "telepathy"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
    ]
    for args, needle in cases:
        r = spade(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


# -- bad input: one line naming the file, key or value; non-zero exit; nothing left -----


def _one_line_error(r, needle: str, code: int = 2) -> None:
    assert r.returncode == code, (r.returncode, r.stderr)
    assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_non_utf8_and_oversized_programs_are_refused_before_any_run(tmp_path):
    binary = tmp_path / "binary.py"
    binary.write_bytes(bytes(range(256)) * 4)
    latin1 = tmp_path / "latin1.py"
    latin1.write_bytes(GOOD.replace("Pick the hidden number", "Devinez le nombre caché")
                       .encode("latin-1"))
    huge = tmp_path / "huge.py"
    huge.write_text(GOOD + "#" * 300_000 + "\n")
    for path, needle in [(binary, "binary.py: not UTF-8 text (byte 0x80 at offset 128)"),
                         (latin1, "latin1.py: not UTF-8 text (byte 0xe9"),
                         (huge, f"huge.py: {huge.stat().st_size} bytes, over the 262144-byte "
                                "limit of an environment program")]:
        for command in ("validate", "play"):
            t0 = time.perf_counter()
            r = spade(command, path)
            _one_line_error(r, needle)
            # No sandbox worker ran: far below the seconds a 5 MB parse took.
            assert time.perf_counter() - t0 < 30


def test_a_folder_stands_for_its_programs(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "notes.txt").write_text("not a program")
    r = spade("validate", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["path"] for x in r.stdout.splitlines()] == [str(tmp_path / "good.py")]
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(spade("validate", empty), f"{empty}: a folder with no .py files")
    _one_line_error(spade("play", tmp_path), f"{tmp_path}: is a folder, not a program file")


def test_counts_below_one_are_usage_errors():
    for args, needle in [(["run", "--generations", "-1"], "argument --generations: must be 1 or more (got -1)"),
                         (["run", "--generations", "0"], "must be 1 or more (got 0)"),
                         (["design", "--n", "0"], "argument --n: must be 1 or more (got 0)"),
                         (["eval", "--limit", "x"], "argument --limit: not an integer: 'x'")]:
        _one_line_error(spade(*args), needle)


def test_play_names_the_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\n" + GOOD)
    _one_line_error(spade("play", bad), "bad.py: imports: not allowed: subprocess")


def test_play_checkpoint_only_with_the_model_policy(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    _one_line_error(spade("play", good, "--checkpoint", tmp_path),
                    "only --policy model plays a checkpoint")
    _one_line_error(spade("play", good, "--policy", "model", "--checkpoint", tmp_path / "nope"),
                    "nope: no such checkpoint")


def test_missing_corpus_file_leaves_no_database(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("run: {name: nocorpus}\ncorpus: {source: docs/missing.jsonl}\n")
    for command in ("design", "run"):
        r = spade(command, "--config", cfg, "--root", tmp_path / "base")
        _one_line_error(r, f"cfg.yaml: corpus.source: {tmp_path / 'docs' / 'missing.jsonl'}: "
                        "no such file or folder")
    assert not list(tmp_path.rglob("*.duckdb")) and not (tmp_path / "base").exists()


# -- a run's data, from any directory ------------------------------------------------------


def _fake_run(root: Path, name: str, suites: dict[str, dict[str, float]]) -> None:
    """A run's DuckDB holding a seed, a rejected design and evaluation rows, as the flow
    writes them (no model needed)."""
    from datetime import datetime

    from spade_tasks.environments import SEEDS_DIR, env_id_of
    from spade_tasks.store import Store, queries

    seed = SEEDS_DIR / "water_jugs.py"
    src = seed.read_text()
    with Store(root / name / "spade.duckdb") as store:
        store.upsert("environments", {
            "env_id": env_id_of(src), "run": None, "generation": None, "origin": "seed",
            "path": str(seed), "class_name": "WaterJugsEnv", "title": "Water jugs",
            "doc": "Water jugs", "source": src, "max_turns": 12, "has_hint": True,
            "has_oracle": True, "doc_id": None})
        for idx, (accepted, reasons) in enumerate([(False, ["parse: line 3: invalid syntax"]),
                                                   (False, ["imports: not allowed: os"])]):
            store.upsert("designs", {"run": name, "generation": 0, "design_idx": idx,
                                     "completion": f"design {idx} text", "accepted": accepted,
                                     "reasons": reasons, "reward": -1.0, "token_ids": [1, 2]})
        queries.ensure_evaluations_table(store)
        for suite, items in suites.items():
            for item, score in items.items():
                store.upsert("evaluations", {"run": f"{name}-gen-0000", "suite": suite,
                                             "checkpoint": "ck", "item_id": item, "score": score,
                                             "created_at": datetime(2026, 11, 30)})


def test_browsing_from_another_directory_by_name_and_id(tmp_path):
    from spade_tasks.environments import SEEDS_DIR, env_id_of

    base, elsewhere = tmp_path / "base", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _fake_run(base / "runs", "r1", {})
    env_id = env_id_of((SEEDS_DIR / "water_jugs.py").read_text())
    r = spade("envs", "list", "--root", base, cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    assert f"{env_id} water_jugs" in r.stdout and "2 rejected designs" in r.stdout
    for key in ("water_jugs", "WaterJugsEnv", env_id[:6]):
        r = spade("envs", "show", key, "--root", base, cwd=elsewhere)
        assert r.returncode == 0, (key, r.stderr)
        assert r.stdout.startswith(f"== {env_id} water_jugs WaterJugsEnv (seed, run r1")
    _one_line_error(spade("envs", "show", "no_such_env", "--root", base, cwd=elsewhere),
                    f"no_such_env: no environment with this id or name under {base / 'runs'}")
    r = spade("designs", "list", "--rejected", "--root", base, cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    assert "0-0     rejected" in r.stdout and "parse: line 3: invalid syntax" in r.stdout
    assert "0-1     rejected" in r.stdout and "imports: not allowed: os" in r.stdout
    r = spade("designs", "show", "0-1", "--run", "r1", "--root", base, cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    assert "rejected" in r.stdout and "  - imports: not allowed: os" in r.stdout
    assert "design 1 text" in r.stdout
    _one_line_error(spade("designs", "show", "zero", "--root", base, cwd=elsewhere),
                    "zero: a design id is GENERATION-INDEX")
    _one_line_error(spade("designs", "list", "--run", "nope", "--root", base, cwd=elsewhere),
                    "--run nope: no such run")
    # Before any run, seeds are shown by name too; the SPADE_ROOT variable is the same rule.
    empty = tmp_path / "empty"
    r = subprocess.run([*SPADE, "envs", "show", "water_jugs"], capture_output=True, text=True,
                       cwd=elsewhere, env={**os.environ, "SPADE_ROOT": str(empty)}, timeout=300)
    assert r.returncode == 0 and "(seed, not played in any run yet)" in r.stdout, r.stderr


def test_eval_compare_self_play_runs(tmp_path):
    base = tmp_path / "base"
    _fake_run(base / "runs", "a", {"humaneval": {"1": 0.0, "2": 1.0}, "arena": {"x": 1.0}})
    _fake_run(base / "runs", "b", {"humaneval": {"1": 1.0, "2": 1.0, "3": 0.0}})
    _fake_run(base / "runs", "c", {"reasoning-gym": {"1": 1.0}})
    r = spade("eval", "--compare", "a", "b", "--root", base, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["humaneval", "2", "0.500", "1.000", "+0.500"]
    assert len(lines) == 3 and (base / "runs" / "compare-a-b.png").is_file()
    r = spade("eval", "--compare", "a", "c", "--root", base, cwd=tmp_path)
    _one_line_error(r, "--compare a c: no suite and item evaluated in both "
                    "(a: arena, humaneval; c: reasoning-gym)")
    _one_line_error(spade("eval", "--compare", "a", "zz", "--root", base, cwd=tmp_path),
                    "zz: neither a self-play run under")


# -- help -------------------------------------------------------------------------------------


def _parsers(parser, path=("spade",)):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_option_has_help_a_default_and_every_command_an_example():
    import argparse

    from spade_tasks.cli import build_parser

    for path, parser in _parsers(build_parser()):
        assert parser.epilog and "spade " in parser.epilog, path
        help_text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, (path, action.dest)
            takes_value = action.nargs != 0 and not isinstance(action, argparse._VersionAction)
            if action.option_strings and takes_value:
                # Shown by the formatter, or said in words when it is None.
                assert "default" in action.help or action.default is not None, (path, action.dest)
        assert "(default: oracle)" in help_text if path[-1] == "play" else True


def test_no_command_prints_the_full_usage_and_version():
    r = spade()
    assert r.returncode == 2
    for command in ("run", "validate", "play", "envs", "designs", "eval", "serve"):
        assert f"    {command}" in r.stderr
    r = spade("envs")
    assert r.returncode == 2 and "list" in r.stderr and "show" in r.stderr
    r = spade("--version")
    assert r.returncode == 0 and r.stdout.startswith("spade 0.")


# -- human play through a terminal -----------------------------------------------------------


def _read_until(fd: int, needle: str, timeout: float = 60.0) -> str:
    out, end = "", time.monotonic() + timeout
    while needle not in out:
        left = end - time.monotonic()
        assert left > 0, f"no {needle!r} in {out!r}"
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk.decode(errors="replace")
    assert needle in out, out
    return out


def _human(path: Path, *args: str):
    master, slave = os.openpty()
    proc = subprocess.Popen([*SPADE, "play", str(path), "--policy", "human", *args],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    return proc, master


def test_human_play_in_a_terminal(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    n = random.Random(4).randint(1, 9)
    proc, fd = _human(good, "--seed", "4", "--hint")
    try:
        screen = _read_until(fd, "[turn 1] action> ")
        assert "Guess a number from 1 to 9" in screen and "[hint]\r\nHalve the interval" in screen
        os.write(fd, b"banana\n")
        screen = _read_until(fd, "[turn 2] action> ")
        assert "[turn 1] reward 0 (return so far 0); observation:\r\nReply with a number." in screen
        os.write(fd, f"{n}\n".encode())
        screen = _read_until(fd, "== return 1 in 2 turns (terminated)")
        assert "[turn 2] reward 1 (return so far 1); observation:\r\nCorrect!" in screen
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        os.close(fd)


def test_human_play_ends_on_ctrl_d(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    proc, fd = _human(good)
    try:
        _read_until(fd, "[turn 1] action> ")
        os.write(fd, b"\x04")  # the terminal's end of input
        _read_until(fd, "== return 0 in 0 turns (quit)")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        os.close(fd)


def test_missing_model_folder_and_unreadable_corpus_leave_no_database(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("run: {name: nomodel}\nmodel: {name: ./weights}\n")
    _one_line_error(spade("run", "--config", cfg, "--root", tmp_path / "base"),
                    f"cfg.yaml: model.name: {tmp_path / 'weights'}: no such file or folder")
    # A corpus that exists but has no text field fails only once the run is open: the
    # run's database, made for nothing, goes again.
    (tmp_path / "docs.jsonl").write_text('{"body": "no text field here"}\n')
    cfg.write_text("run: {name: badcorpus}\ncorpus: {source: docs.jsonl}\n"
                   "memory: {enabled: false}\n")
    r = spade("design", "--config", cfg, "--root", tmp_path / "base")
    # (datasets' own progress bar may precede the error on stderr)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"spade: error: corpus {tmp_path / 'docs.jsonl'}: no field 'text' (fields: body); "
        "set corpus.text_field")
    assert not list(tmp_path.rglob("*.duckdb*")) and not (tmp_path / "base" / "runs" / "badcorpus").exists()


@pytest.mark.slow
def test_play_model_with_the_embedded_model(tmp_path):
    """The real default model plays a seed through the backend and rollout code (two
    short turns at most, to keep CI's time)."""
    from spade_tasks.environments import SEEDS_DIR

    cfg = tmp_path / "short.yaml"
    cfg.write_text("rollout: {max_turns: 2, max_new_tokens: 24}\n")
    r = spade("play", SEEDS_DIR / "number_guess.py", "--policy", "model", "--seed", "1",
              "--json", "--config", cfg)
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["policy"] == "model" and obj["seed"] == 1 and 1 <= obj["turns"] <= 2
    assert len(obj["actions"]) == len(obj["rewards"]) == obj["turns"]
    assert obj["end_reason"] in ("terminated", "truncated", "max_turns", "context")
    assert obj["observations"][0] and -1.0 <= obj["return"] <= 1.0


def test_play_replays_an_actions_file(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    n = random.Random(2).randint(1, 9)
    wrong = 1 if n != 1 else 2
    moves = tmp_path / "moves.txt"
    moves.write_text(f"banana\n{wrong}\n{n}\n99\n")
    r = spade("play", good, "--actions-file", moves, "--seed", "2", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["policy"] == "actions" and obj["actions"] == ["banana", str(wrong), str(n)]
    assert obj["rewards"] == [0.0, 0.0, 1.0] and obj["end_reason"] == "terminated"
    moves.write_text("banana\n")  # runs out before the end: stops there
    obj = json.loads(spade("play", good, "--actions-file", moves, "--json").stdout)
    assert obj["turns"] == 1 and obj["end_reason"] == "max_turns" and obj["return"] == 0.0
    _one_line_error(spade("play", good, "--actions-file", tmp_path / "none.txt"),
                    "none.txt: no such file")
def test_a_checker_that_cannot_run_exits_3_not_1(tmp_path):
    """No sandbox (bwrap not on PATH) is the checker's failure, not a rejection."""
    import os

    good = tmp_path / "good.py"
    good.write_text(GOOD)
    r = subprocess.run([*SPADE, "validate", str(good)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PATH="/nonexistent"))
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "bwrap" in r.stderr and "Traceback" not in r.stderr
    assert "3 internal error" in spade("validate", "--help").stdout


def test_validate_all_json_reports_every_check(tmp_path):
    from spade_tasks.validation import check_names

    good = tmp_path / "good.py"
    good.write_text(GOOD)
    bad = tmp_path / "bad.py"
    bad.write_text(GOOD.replace('return "Halve the interval each turn."', 'return ""'))
    r = spade("validate", good, bad, "--all", "--json")
    assert r.returncode == 1, r.stderr
    rows = [json.loads(x) for x in r.stdout.strip().splitlines()]
    for row in rows:
        assert [c["name"] for c in row["checks"]] == check_names()
        assert all(set(c) == {"name", "status", "detail", "seconds"} for c in row["checks"])
    statuses = {c["name"]: c["status"] for c in rows[0]["checks"]}
    # a hidden number, found by feedback: the first task text decides nothing
    assert statuses.pop("answer_determined") == "skip"
    assert statuses.pop("answer_given") == "skip"
    assert statuses.pop("answer_constant") == "skip"
    assert statuses.pop("answer_asked") == "skip"  # not a word quiz
    assert statuses.pop("answer_unshown") == "skip"
    assert statuses.pop("answer_fits") == "skip"
    assert statuses.pop("answer_repeated") == "skip"
    assert statuses.pop("answer_counts") == "skip"
    assert statuses.pop("chain_padded") == "skip"
    assert statuses.pop("words_ignored") == "skip"
    assert set(statuses.values()) == {"pass"}
    assert [c["name"] for c in rows[1]["checks"] if c["status"] == "fail"] == ["hint"]
    # without --all the report stops at the failure
    r = spade("validate", bad, "--json")
    assert json.loads(r.stdout)["checks"][-1]["name"] == "hint"


def test_play_actions_file_replays_one_action_per_line(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    actions = tmp_path / "actions.txt"
    actions.write_text("hello\n\n9\n")
    r = spade("play", good, "--actions-file", actions, "--seed", "1", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["turns"] == 3 and obj["seed"] == 1 and obj["return"] in (0.0, 1.0)


@pytest.mark.parametrize("name, actions, expected", [
    ("GreedyEnv", ["a", "b", "c"], 1.0),    # pays 2.1: capped at 1.0
    ("PenaltyEnv", ["a", "b", "c"], -1.0),  # pays -2.1: floored at -1.0
    ("SlowEnv", ["a", "b"], 0.0),           # stopped before it pays
])
def test_rollout_validator_and_play_report_the_same_capped_return(sandbox, tmp_path, name,
                                                                   actions, expected):
    from spade_tasks.config import RolloutConfig
    from spade_tasks.rollout import episode_seed, rollout
    from spade_tasks.validation import play
    from tests.test_rollout import PROGRAMS, ScriptedBackend, record

    rec = record(name)
    cfg = RolloutConfig(episodes_per_env=1, max_turns=len(actions), max_new_tokens=16)
    backend = ScriptedBackend(lambda conv: actions[(len(conv) - 2) // 2])
    in_rollout = next(r for r in rollout(backend, sandbox, [rec], cfg, seed=3)
                      if not r.with_hint)
    seed = episode_seed(3, rec.env_id, 0)
    replay = iter(actions)
    in_validator = play(sandbox, rec.source, name, seed, lambda ep, obs: next(replay, None),
                        len(actions))
    program, lines = tmp_path / "env.py", tmp_path / "actions.txt"
    program.write_text(textwrap.dedent(PROGRAMS[name]))
    lines.write_text("\n".join(actions) + "\n")
    r = spade("play", program, "--actions-file", lines, "--seed", seed, "--json")
    assert r.returncode == 0, r.stderr
    assert in_rollout.ret == in_validator.ret == json.loads(r.stdout)["return"] == expected

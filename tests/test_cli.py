"""The command line as users and scripts run it: a subprocess per call."""

import json
import subprocess
import sys
import textwrap
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
    assert obj == {"path": str(good), "seed": 4, "return": 1.0, "turns": obj["turns"],
                   "terminated": True}
    assert 1 <= obj["turns"] <= 6


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
    assert {c["status"] for c in rows[0]["checks"]} == {"pass"}
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

"""`spade import`: programs in the reference code's and GEM's formats are converted,
validated, written, and solved by their oracle."""

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spade_tasks.config import ValidationConfig
from spade_tasks.interop import ImportFormatError, convert_file, convert_reference
from spade_tasks.validation import oracle_policy, play, validate_source

HERE = Path(__file__).parent / "interop"
SPADE = [sys.executable, "-m", "spade_tasks.cli"]


def spade(*args):
    return subprocess.run([*SPADE, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_the_reference_loader_names_become_imports_and_reset_takes_options():
    conv = convert_file(HERE / "reference_library_mt.py", "reference")
    tree = ast.parse(conv.program)
    imported = {a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    assert {"json", "random", "ToolUseBaseEnv"} <= imported and "re" not in imported
    reset = next(f for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
                 if isinstance(f, ast.FunctionDef) and f.name == "reset")
    assert [a.arg for a in reset.args.args] == ["self", "seed", "options"]
    # comments survive: edits are made at the tree's positions, not by re-printing it
    assert "# Reference-code multi-turn tool-use form" in conv.program
    assert conv.sha256 == hashlib.sha256((HERE / "reference_library_mt.py").read_bytes()).hexdigest()


def test_names_the_program_binds_itself_are_left_alone():
    src = "import random as random\nre = None\nclass AEnv:\n    def reset(self, seed=None, options=None):\n        return str(random.random() + math.pi), {}\n"
    out, changes = convert_reference(src, "x.py")
    assert out.count("import random") == 1 and "import math\n" in out and "import re\n" not in out


@pytest.mark.parametrize(("name", "fmt"), [
    ("reference_mail_sorter.py", "reference"),   # single-task tool use
    ("reference_library_mt.py", "reference"),    # multi-turn tool use
    ("reference_digit_game.py", "reference"),    # a game with math_verify and solution()
])
def test_reference_programs_validate_and_their_oracle_solves_them(sandbox, name, fmt):
    conv = convert_file(HERE / name, fmt)
    report = validate_source(conv.program, sandbox, ValidationConfig(seeds=[0, 1, 2]))
    assert report.accepted, report.reasons
    for seed in (5, 11):
        p = play(sandbox, conv.program, report.class_name, seed, oracle_policy,
                 report.meta.max_turns)
        assert p.error is None and p.total == pytest.approx(1.0), (seed, p.error, p.observations)


def test_the_unconverted_multi_turn_program_fails_only_on_the_missing_imports(sandbox):
    raw = (HERE / "reference_library_mt.py").read_text()
    report = validate_source(raw, sandbox, ValidationConfig(seeds=[0]))
    assert not report.accepted and "NameError" in report.reasons[0], report.reasons


def test_gem_games_point_at_the_stand_ins_and_are_seeded(sandbox):
    conv = convert_file(HERE / "gem_letter_count.py", "gem")
    assert "gem." not in "".join(l for l in conv.program.splitlines() if l.startswith("from"))
    assert "from spade_env import GemEnv as Env" in conv.program
    cfg = ValidationConfig(seeds=[0, 1, 2])
    report = validate_source(conv.program, sandbox, cfg, allow_unverified=True)
    assert report.accepted, report.reasons  # determinism holds: GemEnv seeds `random`
    assert not report.meta.has_oracle
    # without an oracle, only a fixed pool that opts in takes it
    assert validate_source(conv.program, sandbox, cfg).reasons[0].startswith("oracle_missing:")


@pytest.mark.parametrize(("src", "fmt", "needle"), [
    ("from gem.core import Env\nfrom gem.wrappers import Wrap\n", "gem", "gem.wrappers has no stand-in"),
    ("from gem.core import Env, Registry\n", "gem", "gem.core.Registry has no stand-in"),
    ("class AEnv:\n    pass\n", "gem", "not a GEM program"),
    ("from math_verify import LatexExtractionConfig\n", "reference", "math_verify.LatexExtractionConfig"),
    ("def broken(:\n", "reference", "line 1"),
])
def test_unconvertible_programs_are_one_line_errors(tmp_path, src, fmt, needle):
    path = tmp_path / "p.py"
    path.write_text(src)
    with pytest.raises(ImportFormatError, match=needle.replace(".", r"\.")):
        convert_file(path, fmt)


def test_spade_import_writes_accepted_programs_with_their_source(tmp_path):
    into = tmp_path / "pool"
    r = spade("import", "--format", "reference", HERE / "reference_mail_sorter.py",
              HERE / "reference_market_game.py", "--into", into, "--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.strip().splitlines()]
    assert [row["accepted"] for row in rows] == [True, True]
    sorter, market = rows
    assert sorter["source"]["path"].endswith("reference_mail_sorter.py")
    assert sorter["source"]["sha256"] == hashlib.sha256(
        (HERE / "reference_mail_sorter.py").read_bytes()).hexdigest()
    assert sorter["feasibility"] == "verified" and market["feasibility"] == "unverified"
    assert sorted(p.name for p in into.iterdir()) == ["reference_mail_sorter.py",
                                                      "reference_market_game.py"]
    r = spade("validate", *sorted(into.iterdir()), "--json")
    assert r.returncode == 1 and "oracle_missing" in r.stdout  # the unverified one
    opt_in = tmp_path / "pool.yaml"
    opt_in.write_text("designer:\n  allow_unverified_pool: true\n")
    r = spade("validate", *sorted(into.iterdir()), "--json", "--config", opt_in)
    assert r.returncode == 0, r.stdout


def test_spade_import_bad_input_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from gem.core import Env\nfrom gem.magic import X\n")
    for args, needle in [
        (["import", "--format", "gem", bad, "--into", tmp_path / "o"], "gem.magic has no stand-in"),
        (["import", "--format", "gem", tmp_path / "none.py", "--into", tmp_path / "o"], "no such file"),
        (["import", "--format", "cobol", bad, "--into", tmp_path / "o"], "invalid choice"),
        (["import", "--format", "gem", bad], "--into"),
    ]:
        r = spade(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()  # nothing half-written

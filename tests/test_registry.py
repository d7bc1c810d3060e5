"""The registry helper: duplicates and unknown names raise, lazy entries resolve once,
and the config checks names without importing the registries' modules at its import."""

import subprocess
import sys

import pytest

from spade_tasks.errors import DuplicateName, UnknownName, UserError
from spade_tasks.registry import BACKENDS, DESIGNER_REWARDS, SUITES, Registry


def _fresh() -> Registry:
    # The owner is a module that is surely imported, so loading it registers nothing.
    return Registry("widget", owner="spade_tasks.errors")


def test_register_and_get():
    reg = _fresh()
    obj = object()
    assert reg.register("a", obj) is obj
    assert reg.get("a") is obj and reg["a"] is obj
    assert "a" in reg and "b" not in reg and list(reg) == ["a"] and len(reg) == 1


def test_duplicate_name_raises():
    reg = _fresh()
    reg.register("a", 1)
    with pytest.raises(DuplicateName, match="widget 'a' is already registered"):
        reg.register("a", 2)
    assert reg.get("a") == 1


def test_unknown_name_is_a_one_line_user_error_naming_the_known_ones():
    reg = _fresh()
    reg.register("b", 1)
    reg.register("a", 2)
    with pytest.raises(UnknownName) as e:
        reg.get("c")
    assert isinstance(e.value, UserError)
    assert str(e.value) == "unknown widget 'c' (known: a, b)"


def test_lazy_entry_resolves_on_first_get():
    reg = _fresh()
    reg.register("join", "os.path:join")
    import os.path

    assert reg.get("join") is os.path.join


@pytest.mark.parametrize("reg, names", [
    (BACKENDS, {"transformers", "vllm"}),
    (DESIGNER_REWARDS, {"regret", "blend", "solve_rate", "learning_potential"}),
    (SUITES, {"reasoning-gym", "humaneval", "bfcl-multi-turn", "textarena"}),
])
def test_package_registries_hold_their_builtins(reg, names):
    assert names <= set(reg.names())


def test_config_import_loads_no_registry_owner():
    code = ("import sys, spade_tasks.config\n"
            "print(sorted(m for m in ('spade_tasks.regret', 'spade_tasks.evaluation',"
            " 'spade_tasks.llm.base') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

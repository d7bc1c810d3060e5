"""Import structure: the package has no import cycle (imports inside functions and under
TYPE_CHECKING count), and only the CLI reaches into ``flows/`` (to start the flow)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in ("spade_tasks", "flows"):
        for p in (ROOT / pkg).rglob("*.py"):
            if "envlib" in p.parts:  # the sandbox's helper runs inside the sandbox, not here
                continue
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports, anywhere in its file. Importing a.b.c
    also runs a/__init__ and a/b/__init__, so those count too."""

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, path in mods.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = owner(name)
                while target:
                    if target != mod and not mod.startswith(target + "."):
                        targets.add(target)
                    target = owner(target.rpartition(".")[0])
        graph[mod] = targets
    return graph


def test_no_import_cycles():
    try:
        TopologicalSorter(_imports(_modules())).prepare()
    except CycleError as e:
        raise AssertionError(f"import cycle: {' -> '.join(e.args[1])}") from None


def test_the_package_does_not_import_flows_except_the_cli():
    graph = _imports(_modules())
    offenders = sorted(m for m, ts in graph.items() if m.startswith("spade_tasks")
                       and m != "spade_tasks.cli" and any(t.startswith("flows") for t in ts))
    assert offenders == []

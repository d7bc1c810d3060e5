"""Programs written for other frameworks, turned into programs of our contract.

``spade import --format reference|gem PATH... --into DIR`` reads each program, finds by
its syntax tree what the other framework supplied implicitly, makes that explicit with
small edits at the tree's positions (comments and layout survive), writes the result
into DIR and validates it like any other program.

- ``reference`` (the SPADE reference code's generated environments): its loader runs a
  program with ``random``, ``re``, ``json``, ``math`` and ``ToolUseBaseEnv`` already in
  the namespace, so programs use them without importing; the edit adds the imports they
  use. Its games import ``math_verify`` (not in the sandbox): pointed at ``spade_env``'s
  ``answer_parse``/``answer_verify``. ``reset(seed)`` gains ``options=None``. An
  ``__init__`` that calls ``reset()`` needs no change: the harness's ``reset(seed)``
  replaces what it built (the validator's ``episode_isolation`` check verifies that).
  Multi-turn tool use (``_user_messages``, ``_message_criteria``, ``_advance_if_done``)
  runs as it is on ``spade_env.ToolEnv``.
- ``gem`` (GEM text games subclassing ``gem.core.Env``, same reset/step tuple): imports
  from ``gem.core`` and ``gem.utils`` are pointed at ``spade_env``'s stand-ins, whose
  ``GemEnv`` seeds ``random`` from ``reset(seed)`` as GEM's own wrappers do.

A program without an oracle (``oracle``/``solution``) is still written: its
feasibility is unverified, and only a fixed pool that opts in may use it.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spade_tasks import pysyntax
from spade_tasks.errors import UserError

INJECTED_MODULES = ("json", "math", "random", "re")
"""Modules the reference loader puts in a program's namespace."""
INJECTED_BASE = "ToolUseBaseEnv"

MATH_VERIFY = {"parse": "answer_parse", "verify": "answer_verify"}
GEM_NAMES = {
    "gem.core": {"Env": "GemEnv"},
    "gem.utils.constants": {"TERMINAL_STATE": "TERMINAL_STATE",
                            "TextArenaGameReward": "TextArenaGameReward",
                            "LanguageGameReward": "LanguageGameReward"},
    "gem.utils.parsing": {"extract_last_boxed_answer": "extract_last_boxed_answer",
                          "extract_last_tagged_answer": "extract_last_tagged_answer"},
}


class ImportFormatError(UserError):
    """A program cannot be converted from the named format (the message says why)."""


@dataclass
class Converted:
    """One program, converted: the new text and what was changed in it."""

    path: str
    sha256: str
    fmt: str
    program: str
    changes: list[str] = field(default_factory=list)

    def source(self) -> dict:
        """Provenance for the validation JSON: where the original came from."""
        return {"path": self.path, "sha256": self.sha256, "format": self.fmt}


class _Edits:
    """Text replacements at syntax-tree positions, applied back to front."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.edits: list[tuple[int, int, str]] = []

    def offset(self, lineno: int, col: int) -> int:
        # ast columns count UTF-8 bytes; the text is indexed by characters.
        if lineno > len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def replace(self, node: ast.AST, text: str) -> None:
        self.edits.append((self.offset(node.lineno, node.col_offset),
                           self.offset(node.end_lineno, node.end_col_offset), text))

    def insert(self, lineno: int, col: int, text: str) -> None:
        at = self.offset(lineno, col)
        self.edits.append((at, at, text))

    def apply(self) -> str:
        out = self.text
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + text + out[end:]
        return out


def _parse(text: str, path: str) -> ast.Module:
    try:
        return pysyntax.parse(text)
    except SyntaxError as e:
        raise ImportFormatError(f"{path}: line {e.lineno}: {e.msg}") from None


def _bound_names(tree: ast.Module) -> set[str]:
    """Names a program binds itself anywhere (imports, assignments, defs, parameters)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


def _loaded_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _header_end(tree: ast.Module) -> int:
    """The line after the module docstring and ``from __future__`` imports."""
    end = 0
    for i, node in enumerate(tree.body):
        doc = i == 0 and isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None),
                                                                     ast.Constant) \
            and isinstance(node.value.value, str)
        if doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            end = node.end_lineno
        else:
            break
    return end


def _env_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in tree.body if isinstance(n, ast.ClassDef)
            and (n.name == "Environment" or n.name.endswith("Env"))]


def _add_options(tree: ast.Module, edits: _Edits, changes: list[str]) -> None:
    """``reset(self, seed=None)`` -> ``reset(self, seed=None, options=None)``."""
    for cls in _env_classes(tree):
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "reset"):
                continue
            a = fn.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
            if "options" in names or a.vararg or a.kwarg or a.kwonlyargs or not a.args:
                continue
            last = a.defaults[-1] if a.defaults else a.args[-1]
            edits.insert(last.end_lineno, last.end_col_offset, ", options=None")
            changes.append(f"{cls.name}.reset: added options=None")


def _point_imports(tree: ast.Module, edits: _Edits, changes: list[str], path: str,
                   table: dict[str, dict[str, str]]) -> None:
    """Rewrite ``from MOD import name`` of a known module to spade_env's stand-ins."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in table or any(a.name.startswith(m + ".") or m.startswith(a.name + ".")
                                          for m in table):
                    raise ImportFormatError(
                        f"{path}: line {node.lineno}: `import {a.name}` is not supported; "
                        f"import names from {', '.join(sorted(table))}")
        if not (isinstance(node, ast.ImportFrom) and node.module in table):
            continue
        names = table[node.module]
        parts = []
        for a in node.names:
            if a.name not in names:
                raise ImportFormatError(
                    f"{path}: line {node.lineno}: {node.module}.{a.name} has no stand-in "
                    f"(supported: {', '.join(sorted(names))})")
            local = a.asname or a.name
            ours = names[a.name]
            parts.append(ours if ours == local else f"{ours} as {local}")
        edits.replace(node, "from spade_env import " + ", ".join(parts))
        changes.append(f"line {node.lineno}: {node.module} -> spade_env")


BOXED_ORACLE = """
{i}def oracle(self):
{i}    # Added by `spade import`: the reference code's games return the bare answer from
{i}    # solution() and read actions from \\boxed{{}}, so the oracle boxes it.
{i}    answer = str(self.solution())
{i}    return answer if "\\\\boxed" in answer else "\\\\boxed{{" + answer + "}}"
"""


def _add_boxed_oracle(tree: ast.Module, text: str, edits: _Edits, changes: list[str]) -> None:
    """A reference game (not tool use) with solution() and \\boxed{} actions gets an
    oracle() that plays its answer in the box."""
    if "boxed" not in text:
        return
    for cls in _env_classes(tree):
        methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        tool_use = any(isinstance(b, ast.Name) and b.id in ("ToolUseBaseEnv", "ToolEnv")
                       for b in cls.bases)
        if tool_use or "solution" not in methods or "oracle" in methods:
            continue
        indent = " " * cls.body[-1].col_offset
        edits.insert(cls.body[-1].end_lineno + 1, 0, BOXED_ORACLE.format(i=indent))
        changes.append(f"{cls.name}: added oracle() = solution() in \\boxed{{}}")


def convert_reference(text: str, path: str) -> tuple[str, list[str]]:
    """A reference-code program as a program of our contract (see the module docstring)."""
    tree = _parse(text, path)
    edits, changes = _Edits(text), []
    _point_imports(tree, edits, changes, path, {"math_verify": MATH_VERIFY})
    bound, used = _bound_names(tree), _loaded_names(tree)
    lines = [f"import {m}\n" for m in INJECTED_MODULES if m in used and m not in bound]
    if INJECTED_BASE in used and INJECTED_BASE not in bound:
        lines.append(f"from spade_env import {INJECTED_BASE}\n")
    if lines:
        edits.insert(_header_end(tree) + 1, 0, "".join(lines))
        changes.append("added the imports the reference loader injects: "
                       + ", ".join(x.split()[-1] for x in lines))
    _add_options(tree, edits, changes)
    _add_boxed_oracle(tree, text, edits, changes)
    return edits.apply(), changes


def convert_gem(text: str, path: str) -> tuple[str, list[str]]:
    """A GEM text game as a program of our contract (see the module docstring)."""
    tree = _parse(text, path)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "gem.core" for n in ast.walk(tree)):
        raise ImportFormatError(f"{path}: not a GEM program (no `from gem.core import Env`)")
    edits, changes = _Edits(text), []
    _point_imports(tree, edits, changes, path, GEM_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gem" \
                and node.module not in GEM_NAMES:
            raise ImportFormatError(f"{path}: line {node.lineno}: {node.module} has no stand-in "
                                    f"(supported: {', '.join(sorted(GEM_NAMES))})")
    _add_options(tree, edits, changes)
    return edits.apply(), changes


FORMATS: dict[str, Callable[[str, str], tuple[str, list[str]]]] = {
    "reference": convert_reference,
    "gem": convert_gem,
}


def convert_file(path: Path, fmt: str) -> Converted:
    """Read ``path`` and convert it from ``fmt``; bad input raises ImportFormatError."""
    if fmt not in FORMATS:
        raise ImportFormatError(f"unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))})")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except OSError as e:
        raise ImportFormatError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path}: not UTF-8 text") from None
    program, changes = FORMATS[fmt](text, str(path))
    header = (f"# Converted by `spade import --format {fmt}` from {path.name} "
              f"(sha256 {hashlib.sha256(raw).hexdigest()[:16]}).\n")
    return Converted(str(path), hashlib.sha256(raw).hexdigest(), fmt, header + program, changes)


def output_path(conv: Converted, into: Path, taken: set[Path]) -> Path:
    """``into/<stem>.py``, with the hash's first characters added when two inputs
    share a name."""
    out = into / f"{Path(conv.path).stem}.py"
    if out in taken:
        out = into / f"{Path(conv.path).stem}_{conv.sha256[:8]}.py"
    return out


__all__ = ["Converted", "ImportFormatError", "FORMATS", "convert_file", "convert_reference",
           "convert_gem", "output_path"]

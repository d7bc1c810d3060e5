"""Parsing programs from many threads at once (CPython 3.11's shared AST counter)."""

import ast
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from spade_tasks import pysyntax

SOURCE = (Path(__file__).resolve().parent.parent / "spade_tasks" / "validation.py").read_text()


class _Finalised:
    """Garbage whose finaliser runs bytecode, so the collector can hand the GIL to
    another thread in the middle of a parse: the way the CI run met the bug."""

    def __del__(self):
        sum(range(50))


def _hammer(parse) -> str | None:
    """Parse from four threads while making cyclic garbage; the first SystemError's text."""
    def work(_):
        for _ in range(20):
            for _ in range(200):
                g = _Finalised()
                g.self = g
            parse(SOURCE)

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(work, range(16)))
    except SystemError as e:
        return str(e)
    finally:
        sys.setswitchinterval(before)
    return None


def test_parse_from_many_threads_never_trips_the_ast_counter():
    if _hammer(ast.parse) is None:
        pytest.skip("this interpreter's ast.parse is thread-safe; nothing to guard")
    assert _hammer(pysyntax.parse) is None


def test_parse_keeps_ast_parse_modes_and_errors():
    assert isinstance(pysyntax.parse("x = 1"), ast.Module)
    assert isinstance(pysyntax.parse("f(a=1)", mode="eval"), ast.Expression)
    with pytest.raises(SyntaxError):
        pysyntax.parse("def broken(:")

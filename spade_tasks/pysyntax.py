"""Thread-safe ``ast.parse`` for the parent process.

CPython 3.11 keeps the AST converter's recursion counter in interpreter-wide
state, so two threads parsing at once can corrupt it and one of them fails with
``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905).
SPADE parses programs from thread pools (rollout, memory, design, Prefect's task
runner), so every parse in the parent process goes through one lock. Parsing a
program takes well under a millisecond; the lock costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)

"""Live progress of long stages (stage, items done, tokens/s) on the terminal.

Stages call ``progress.stage(name, total)`` and ``advance(items, tokens)``; with a
terminal this draws a rich progress bar, otherwise (CI, logs) it prints a line when the
stage ends, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


class _Stage:
    def __init__(self, name: str, total: int | None, bar=None, task=None):
        self.name, self.total, self.bar, self.task = name, total, bar, task
        self.items = 0
        self.tokens = 0
        self.note: str | None = None
        self.t0 = time.perf_counter()

    @property
    def tokens_per_s(self) -> float:
        dt = time.perf_counter() - self.t0
        return self.tokens / dt if dt > 0 else 0.0

    def advance(self, items: int = 0, tokens: int = 0) -> None:
        self.items += items
        self.tokens += tokens
        if self.bar is not None:
            self.bar.update(self.task, advance=items,
                            description=f"{self.name} [{self.tokens_per_s:6.1f} tok/s]")

    def done_as(self, note: str) -> None:
        """Say ``note`` instead of the count of items done (a stage that found its result
        ready, such as a cached warm start, did none)."""
        self.note = note
        if self.bar is not None:
            self.bar.update(self.task, description=f"{self.name} ({note})")


@contextmanager
def stage(name: str, total: int | None = None):
    """A progress display for one stage; yields an object with ``advance``."""
    if sys.stderr.isatty():
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), transient=False) as bar:
            task = bar.add_task(name, total=total)
            st = _Stage(name, total, bar, task)
            yield st
    else:
        st = _Stage(name, total)
        yield st
        dt = time.perf_counter() - st.t0
        tok = f", {st.tokens} tokens, {st.tokens_per_s:.1f} tok/s" if st.tokens else ""
        print(f"[spade] {name}: {st.note or f'{st.items} done'} in {dt:.1f} s{tok}",
              file=sys.stderr, flush=True)

"""The environment store: seed programs, and accepted designs written content-addressed.

An environment's id is the SHA-256 prefix of its source, so the same program written
twice (a retried flow run, two designers converging) is one file and one row. Files are
written to a temporary name and renamed, so a crash never leaves half a program.
"""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from spade_tasks import pysyntax
from spade_tasks.sandbox import ProgramMeta
from spade_tasks.store import Store, queries

# Anchored to the checkout, so commands work from any directory.
STORE_ROOT = Path(__file__).resolve().parent.parent / "environments_store"
SEEDS_DIR = STORE_ROOT / "seeds"


@dataclass(frozen=True)
class EnvRecord:
    """One accepted environment program and what the validator learned of it."""

    env_id: str
    source: str
    class_name: str
    title: str
    doc: str
    max_turns: int
    has_hint: bool
    has_oracle: bool
    origin: str  # "seed" or "designed"
    path: str
    run: str | None = None
    generation: int | None = None
    doc_id: str | None = None
    feasibility_verified: bool | None = True
    """False for a fixed-pool program without oracle() that opted out of
    ``oracle_missing``: nobody showed that it can be won."""
    fingerprint: str | None = None
    """The validator's behaviour fingerprint (oracle transcripts on the validation seeds)."""
    flag: str | None = None
    """Why the environment left the pool after acceptance (``reward_overflow: ...``)."""

    def row(self) -> dict:
        return asdict(self)


def env_id_of(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def title_of(doc: str) -> str:
    return (doc.strip().splitlines() or [""])[0].strip()[:200]


def class_doc(source: str) -> str:
    """The docstring of a program's first class, read from its text alone (no sandbox);
    "" when it has none or does not parse."""
    try:
        tree = pysyntax.parse(source)
    except SyntaxError:
        return ""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    return (ast.get_docstring(cls) or "") if cls else ""


def record_from_meta(source: str, meta: ProgramMeta, origin: str, path: str,
                     run: str | None = None, generation: int | None = None,
                     doc_id: str | None = None, fingerprint: str | None = None) -> EnvRecord:
    return EnvRecord(env_id_of(source), source, meta.class_name, title_of(meta.doc), meta.doc,
                     meta.max_turns, meta.has_hint, meta.has_oracle, origin, path, run,
                     generation, doc_id, feasibility_verified=meta.has_oracle,
                     fingerprint=fingerprint)


def write_program(source: str, run: str, root: Path = STORE_ROOT) -> Path:
    """Write an accepted program under ``root/runs/<run>/<env_id>.py`` atomically."""
    folder = root / "runs" / run
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{env_id_of(source)}.py"
    if path.exists() and path.read_text(encoding="utf-8") == source:
        return path
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".py")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(source)
    os.replace(tmp, path)
    return path


def save_record(store: Store, rec: EnvRecord) -> bool:
    """Insert ``rec``'s row; an existing row of the same env_id is never overwritten (a
    design identical to a seed must not turn the seed's row into its own). True if new."""
    return store.insert_new("environments", rec.row())


def flag_environment(store: Store, env_id: str, reason: str) -> None:
    """Mark an accepted environment as misbehaving (the first reason stays); the memory
    refuses and deactivates flagged environments."""
    queries.flag_environment(store, env_id, reason)


def load_record(store: Store, env_id: str) -> EnvRecord | None:
    row = queries.environment(store, env_id)
    return EnvRecord(**row) if row else None


def seed_paths(folder: Path = SEEDS_DIR) -> list[Path]:
    return sorted(folder.glob("*.py"))


MAX_PROGRAM_BYTES = 256 * 1024
"""Largest program the CLI reads: well past what a designer's token budget can write
(32k tokens), so a bigger file is refused before it is parsed or sandboxed."""


def program_paths(paths: list[str | Path]) -> list[Path]:
    """The program files named by ``paths``, a folder standing for the ``*.py`` files
    in it; a missing path or a folder without programs is a UserError naming it."""
    from spade_tasks.errors import UserError

    out = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.glob("*.py") if f.is_file())
            if not found:
                raise UserError(f"{p}: a folder with no .py files")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise UserError(f"{p}: no such file")
    return out


def read_program(path: str | Path) -> str:
    """A program's text; a folder, a file over ``MAX_PROGRAM_BYTES`` or one that is not
    UTF-8 is a UserError naming the file and the reason (checked before any parsing)."""
    from spade_tasks.errors import UserError

    p = Path(path)
    if p.is_dir():
        raise UserError(f"{p}: is a folder, not a program file")
    try:
        size = p.stat().st_size
        if size > MAX_PROGRAM_BYTES:
            raise UserError(f"{p}: {size} bytes, over the {MAX_PROGRAM_BYTES}-byte limit "
                            "of an environment program")
        data = p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                        f"{e.start}); environment programs are UTF-8 Python source") from None

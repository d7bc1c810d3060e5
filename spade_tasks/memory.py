"""The environment memory of a run: the pool the agent plays and the examples the
designer sees.

It starts as the hand-written seed environments and grows with accepted designs. Each
entry is a row of the ``memory`` table (plays, regret, win rates, added/last generation,
active); the program itself is the ``environments`` row of the same env_id.

Choices, and why:

- **Seed meta is cached** in ``environments`` (keyed by env_id, a hash of the source):
  validating a program takes seconds, so a seed already recorded is not re-validated.
- **Near-duplicates** are refused by Jaccard similarity of feature sets: 4-grams of the
  code's tokens (comments dropped, names and numbers masked, strings kept) plus word
  3-grams of the docstring. On the seeds, distinct programs score at most ~0.32 and a
  copy with renamed variables and changed constants ~0.9.
  Duplicates here are mostly the designer copying the examples its prompt shows, which
  is textual overlap that shingles measure exactly; it is deterministic, needs no model
  and costs milliseconds for a memory of hundreds. (A sentence-embedding model would
  also flag "same idea, different code", at the cost of a model load per process and
  a threshold that drifts with the model.)
- **Statistics** move by an exponential average (``STATS_WEIGHT_NEW`` on the newest
  estimate): the agent changes every generation, so old plays matter less, but G is
  small, so one generation's estimate alone is noisy.
- **Capacity**: when the active set exceeds it, entries are deactivated (kept as rows,
  ``active = false``) in this order: designed before seeds, then played-and-out-of-band
  before never-played before in-band, then lowest regret, then oldest. Seeds therefore
  leave only when nothing else can (a capacity below the seed count), and a newcomer is
  never evicted by its own ``add``.
- **Unknown entries** (never played) are not positive examples on merit; when fewer
  than k entries qualify, a seeded sample of never-played entries (seeds first) fills in,
  so a young run's designer still sees complete, feasible programs.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import itertools
import keyword
import random
import re
import tokenize
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from spade_tasks import pysyntax, word_steps
from spade_tasks.config import MemoryConfig, ValidationConfig
from spade_tasks.environments import (SEEDS_DIR, EnvRecord, env_id_of, load_record,
                                      record_from_meta, save_record, seed_paths)
from spade_tasks.errors import SpadeError
from spade_tasks.records import MemoryReport, Scores, Verdicts
from spade_tasks.store import Store, queries
from spade_tasks.validation import is_solved, validate_source_cached

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

STATS_WEIGHT_NEW = 0.5
"""Weight of a generation's new estimate in an entry's moving-average statistics."""
SEED_GENERATION = 0
"""``added_generation`` of the seed entries."""
SEED_VALIDATION_WORKERS = 2
"""Seed programs validated at once (each validation runs its own sandbox workers)."""
CODE_NGRAM = 4
DOC_NGRAM = 3


class SeedRejected(SpadeError):
    """A hand-written seed program fails validation (a bug in the repository)."""


@dataclass(frozen=True)
class MemoryEntry:
    """One environment of the memory with its statistics (None: never played)."""

    record: EnvRecord
    plays: int
    regret: float | None
    win_rate_no_hint: float | None
    win_rate_hint: float | None
    added_generation: int
    last_generation: int | None
    active: bool

    @property
    def env_id(self) -> str:
        return self.record.env_id

    @property
    def played(self) -> bool:
        return self.plays > 0 and self.win_rate_no_hint is not None


@dataclass(frozen=True)
class EnvStats:
    """One generation's estimate for one environment (from the regret stage)."""

    episodes: int
    regret: float
    win_rate_no_hint: float
    win_rate_hint: float


@dataclass(frozen=True)
class AddResult:
    """What ``add`` did: ``added`` or refused with a reason."""

    added: bool
    reason: str | None = None
    similar_to: str | None = None
    similarity: float = 0.0
    evicted: tuple[str, ...] = ()


@dataclass(frozen=True)
class PromptExamples:
    """What the designer's prompt shows from the memory."""

    positives: list[MemoryEntry]
    negatives: list[tuple[MemoryEntry, str]]
    """(entry, "too easy" | "too hard")."""
    titles: list[str]


# -- seeds ---------------------------------------------------------------------------


def seed_records(store: Store, sandbox, vcfg: ValidationConfig | None = None,
                 folders: Path | Sequence[Path] = SEEDS_DIR,
                 workers: int = SEED_VALIDATION_WORKERS,
                 allow_unverified: bool = False) -> list[EnvRecord]:
    """The records of the programs in ``folders`` (the seeds by default), validating (in
    the sandbox, a few at once) only those not yet in the store or the verdict cache.
    ``allow_unverified``: programs without oracle() pass, recorded feasibility-unverified
    (``designer.allow_unverified_pool``, for a fixed pool imported from elsewhere)."""
    paths = [p for f in ([folders] if isinstance(folders, Path) else folders)
             for p in seed_paths(Path(f))]
    sources = [p.read_text(encoding="utf-8") for p in paths]
    cached = [load_record(store, env_id_of(src)) for src in sources]
    todo = [i for i, rec in enumerate(cached) if rec is None]
    # Sandboxed workers are separate processes, so a thread each overlaps their start-up
    # (a reasoning-gym program's import alone takes about a second per worker).
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        reports = dict(zip(todo, pool.map(
            lambda i: validate_source_cached(sources[i], sandbox, vcfg, str(paths[i]),
                                             allow_unverified=allow_unverified), todo)))
    out = []
    for i, (path, source) in enumerate(zip(paths, sources)):
        rec = cached[i]
        if rec is None:
            report = reports[i]
            if not report.accepted:
                raise SeedRejected(f"seed {path}: rejected: {'; '.join(report.reasons)}")
            rec = record_from_meta(source, report.meta, "seed", str(path),
                                   fingerprint=report.fingerprint)
            save_record(store, rec)
        out.append(rec)
    return out


def init_memory(store: Store, run: str, sandbox, vcfg: ValidationConfig | None = None,
                folders: Path | Sequence[Path] = SEEDS_DIR,
                allow_unverified: bool = False) -> list[EnvRecord]:
    """Put the programs of ``folders`` (the seeds by default; the fixed pool in the
    baseline) into the run's memory (once; existing entries keep their stats)."""
    recs = seed_records(store, sandbox, vcfg, folders, allow_unverified=allow_unverified)
    have = queries.memory_env_ids(store, run)
    for rec in recs:
        if rec.env_id not in have and not rec.flag:  # a flagged program stays out of every run
            store.upsert("memory", _new_row(run, rec.env_id, SEED_GENERATION))
    return recs


def _new_row(run: str, env_id: str, generation: int) -> dict:
    return {"run": run, "env_id": env_id, "added_generation": generation,
            "last_generation": None, "plays": 0, "regret": None, "win_rate_no_hint": None,
            "win_rate_hint": None, "active": True}


# -- reading -------------------------------------------------------------------------

_ENV_COLS = ("env_id", "source", "class_name", "title", "doc", "max_turns", "has_hint",
             "has_oracle", "origin", "path", "run", "generation", "doc_id",
             "feasibility_verified", "fingerprint", "flag")


def entries(store: Store, run: str, active_only: bool = True) -> list[MemoryEntry]:
    """The run's memory entries, ordered by env_id (a stable order for seeded draws)."""
    rows = queries.memory_with_environments(store, run, _ENV_COLS, active_only)
    out = []
    for r in rows:
        rec = EnvRecord(**{c: r[f"e_{c}"] for c in _ENV_COLS})
        out.append(MemoryEntry(rec, r["plays"] or 0, r["regret"], r["win_rate_no_hint"],
                               r["win_rate_hint"], r["added_generation"], r["last_generation"],
                               bool(r["active"])))
    return out


def existing_titles(store: Store, run: str) -> list[str]:
    """Titles of the active environments (newest first): what the designer must not repeat."""
    es = sorted(entries(store, run), key=lambda e: (-e.added_generation, e.env_id))
    return [e.record.title for e in es if e.record.title]


def _in_band(e: MemoryEntry, cfg: MemoryConfig) -> bool:
    lo, hi = cfg.win_band
    return e.played and lo <= e.win_rate_no_hint <= hi


def positive_examples(store: Store, run: str, k: int, cfg: MemoryConfig | None = None,
                      seed: int = 0) -> list[MemoryEntry]:
    """Top-``k`` by regret among played entries whose no-hint win rate is inside
    ``win_band``; never-played entries (seeds first, seeded order) fill any shortfall."""
    cfg = cfg or MemoryConfig()
    es = entries(store, run)
    good = sorted((e for e in es if _in_band(e, cfg)),
                  key=lambda e: (-e.regret, -(e.last_generation or 0), e.env_id))[:k]
    if len(good) < k:
        unknown = [e for e in es if not e.played]
        random.Random(seed).shuffle(unknown)
        unknown.sort(key=lambda e: e.record.origin != "seed")  # stable: keeps the shuffle
        good += unknown[: k - len(good)]
    return good


def negative_examples(store: Store, run: str, k: int, cfg: MemoryConfig | None = None
                      ) -> list[tuple[MemoryEntry, str]]:
    """Up to ``k`` played entries that were too easy (> too_easy) or too hard (< too_hard),
    most recently played first. Evicted entries count too: they are most often these."""
    cfg = cfg or MemoryConfig()
    out = []
    for e in entries(store, run, active_only=False):
        if not e.played:
            continue
        if e.win_rate_no_hint > cfg.too_easy:
            out.append((e, "too easy"))
        elif e.win_rate_no_hint < cfg.too_hard:
            out.append((e, "too hard"))
    out.sort(key=lambda p: (-(p[0].last_generation or 0), p[0].env_id))
    return out[:k]


def prompt_examples(store: Store, run: str, k: int, cfg: MemoryConfig | None = None,
                    seed: int = 0, negatives: int = 8) -> PromptExamples:
    """Everything the designer prompt shows; empty when the memory is disabled."""
    cfg = cfg or MemoryConfig()
    if not cfg.enabled:
        return PromptExamples([], [], [])
    return PromptExamples(positive_examples(store, run, k, cfg, seed),
                          negative_examples(store, run, negatives, cfg),
                          existing_titles(store, run))


def spread_chance(wins: int, episodes: int, group: int) -> float:
    """Chance that ``group`` episodes of an environment hold both a win and a loss, at
    the win rate estimated from ``wins`` of ``episodes`` earlier ones by Laplace's rule,
    ``(wins + 1) / (episodes + 2)``: an environment never played counts as a coin flip,
    one played often and never won tends to 0. Such a group is one the agent learns
    from (its advantages are not all zero)."""
    if not 0 <= wins <= episodes or group < 1:
        raise ValueError(f"spread_chance needs 0 <= wins <= episodes and group >= 1, "
                         f"got wins={wins}, episodes={episodes}, group={group}")
    p = (wins + 1) / (episodes + 2)
    return 1.0 - p ** group - (1.0 - p) ** group


def pool_sample(store: Store, run: str, n: int, seed: int,
                exclude: Collection[str] = (), *, priority: str = "uniform",
                generation: int = 0, group: int = 1) -> list[EnvRecord]:
    """``n`` active environments drawn without replacement (seeded) for the agent's
    rollouts; fewer when the pool is smaller.

    ``priority="uniform"``: every environment alike. ``"spread"``: each weighted by
    ``spread_chance`` of its no-hint wins before ``generation`` for a group of
    ``group`` episodes, so the games the agent has sometimes won, and those not yet
    played, come before those it has never won (prioritised level replay's idea:
    replay the levels with something left to learn). Weighted draws without replacement
    by Efraimidis and Spirakis' keys ``u ** (1 / w)``."""
    excluded = set(exclude)
    es = [e for e in entries(store, run) if e.env_id not in excluded]
    rng = random.Random(seed)
    if priority not in ("uniform", "spread"):
        raise ValueError(f"pool priority must be 'uniform' or 'spread', got {priority!r}")
    if priority == "uniform" or group < 2:  # one episode is never a group with spread
        return [e.record for e in rng.sample(es, min(n, len(es)))]
    returns = queries.no_hint_returns_by_env(store, run, generation)

    def weight(e: MemoryEntry) -> float:
        rets = returns.get(e.env_id, [])
        return spread_chance(sum(map(is_solved, rets)), len(rets), group)

    keyed = sorted(((rng.random() ** (1.0 / weight(e)), i) for i, e in enumerate(es)),
                   reverse=True)
    return [es[i].record for _, i in keyed[:n]]


# -- similarity ----------------------------------------------------------------------


_SKIP = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENDMARKER)


def _data_literals(tree: ast.Module) -> list[ast.expr]:
    """The literal data tables a program assigns: list, tuple, set or dict displays of
    constants only (``WORDS = ["apple", ...]``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        value = node.value
        if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            try:
                ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            out.append(value)
    return out


def without_data(source: str) -> str:
    """``source`` with each literal data table emptied (``WORDS = []``). The same game
    over another word list is the same game: a designer must not pass a copy of a known
    program as new by swapping its data."""
    try:
        tables = _data_literals(pysyntax.parse(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source
    lines = source.splitlines(keepends=True)
    starts = list(itertools.accumulate((len(ln) for ln in lines), initial=0))

    def offset(line: int, byte_col: int) -> int:  # ast counts UTF-8 bytes in a line
        return starts[line - 1] + len(lines[line - 1].encode()[:byte_col].decode(errors="ignore"))

    spans = sorted(((offset(t.lineno, t.col_offset), offset(t.end_lineno, t.end_col_offset), t)
                    for t in tables), key=lambda s: s[0], reverse=True)
    for a, b, t in spans:
        empty = {ast.List: "[]", ast.Tuple: "()", ast.Set: "set()", ast.Dict: "{}"}[type(t)]
        source = source[:a] + empty + source[b:]
    return source


_PROSE_METHODS = frozenset({"hint"})
"""Methods whose text is told to the player about the game, not the game itself."""


@functools.lru_cache(maxsize=1024)  # the duplicate rule asks again for every known program
def game_shape(source: str) -> tuple[str, ...] | None:
    """What a program does, apart from how it is told: its tokens with the data tables
    emptied, docstrings, comments and ``hint()`` dropped, a quiz's question-building
    statements dropped, and names, numbers and told text (f-strings, sentences) masked.
    Two programs of one shape are one game (new words, a reworded or retold question,
    docstring or hint, a renamed class or a retuned count make no new game). None if it
    does not parse."""
    try:
        tree = pysyntax.parse(without_data(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    _drop_uncalled_quiz_methods(tree)
    _drop_told_question(tree)  # before the dead stores: what only the question read goes
    _drop_dead_stores(tree)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        body = [b for b in body if not (
            isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str))]
        body = [b for b in body if not (isinstance(node, ast.ClassDef) and isinstance(
            b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name in _PROSE_METHODS)]
        node.body = body or [ast.Pass()]
    # A table of constants handed to a call (``rng.choice(["next", "letter"])``) is data
    # drawn from, like a WORDS list: other words in it make no new game. What picks
    # behaviour is a comparison with such a word (``which == "first"``), which stays.
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            node.args = [_emptied(a) for a in node.args]
    # The wording of a question is how the game is told: one computation asked in other
    # words is one game. The text of f-strings and of sentences (strings with a space) is
    # masked; the expressions inside f-strings stay, and so does a single word, which can
    # pick behaviour (a dataset's name, a mode such as "first").
    told = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
            for part in node.values if isinstance(part, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                id(node) in told or any(c.isspace() for c in node.value.strip())):
            node.value = " "
    return tuple(_code_tokens(ast.unparse(tree), keep=BEHAVIOUR_NAMES))


_QUIZ_CALLED = frozenset({"questions", "hint", "reset", "step", "oracle"})
"""The methods of a ``QuizEnv`` subclass that its base class or the harness calls."""


def _drop_uncalled_quiz_methods(tree: ast.Module) -> None:
    """Drop, in place, the methods of a ``QuizEnv`` subclass that nothing calls: code no
    episode runs makes no new game (learn-s11 accepted ``first_letters.py`` with its
    question reworded and an unused method added). Only in a quiz, whose base calls
    nothing but ``_QUIZ_CALLED``; other bases may find methods by name (tools)."""
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef) or not any(
                (b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) == "QuizEnv"
                for b in cls.bases):
            continue
        cls.body = [b for b in cls.body if not (
            isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
            and b.name not in _QUIZ_CALLED and not b.name.startswith("__")
            and b.name not in used)] or [ast.Pass()]


def _drop_dead_stores(tree: ast.Module) -> None:
    """Drop, in place, a function's top-level assignments to a local name that no later
    statement reads before it is assigned again (or ever): a value computed and thrown
    away makes no new game (learn-s19 accepted ``reverse_list.py`` with an
    ``answer = str(sorted(shown))`` that the next ``answer = shown[::-1]`` overwrote).
    Only plain ``name = ...`` statements in a function's own body; a name a nested
    statement or a closure reads is kept."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        changed = True
        while changed:
            changed = False
            for i, st in enumerate(fn.body):
                name = _assigned_name(st)
                if name is not None and _dead_after(name, fn.body[i + 1:]):
                    del fn.body[i]
                    changed = True
                    break


def _drop_told_question(tree: ast.Module) -> None:
    """Drop, in place, the statements of a ``questions`` method that build the question it
    returns (``question = ...``, ``question += ...``): a quiz's game is the answer it
    computes from its draws, and the question is how that game is told. Whatever the
    question shows, ``answer_determined`` has already checked that it shows enough to
    find the answer. Sentences added to a question (learn-s21, learn-s22) and drawn
    values it shows that the answer never reads make no new game (learn-s23's 7 accepted
    designs of generation 7 all score ``reverse_list.py``'s answer, asked as "Swap the
    first {rng.randint(1, 3)} elements of the list" and the like). Only top-level
    statements of the method, only where the name is the first of a returned pair, and
    not where the answer's computation reads the question."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                fn.name != "questions":
            continue
        told = {pair.elts[0].id for ret in ast.walk(fn) if isinstance(ret, ast.Return)
                and isinstance(ret.value, ast.List) for pair in ret.value.elts
                if isinstance(pair, ast.Tuple) and len(pair.elts) == 2
                and isinstance(pair.elts[0], ast.Name)}
        builds = [st for st in fn.body if _question_target(st) in told]
        rest = [st for st in fn.body if st not in builds and not isinstance(st, ast.Return)]
        if not builds or any(isinstance(n, ast.Name) and n.id in told
                             for st in rest for n in ast.walk(st)):
            continue
        fn.body = [st for st in fn.body if st not in builds] or [ast.Pass()]


def _question_target(st: ast.stmt) -> str | None:
    """The name a ``name = ...`` or ``name += ...`` statement writes; None otherwise."""
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
        return st.target.id
    return _assigned_name(st)


def _dead_after(name: str, rest: list[ast.stmt]) -> bool:
    """Whether ``name``'s value is not read by ``rest``: the first statement that
    mentions it assigns it anew without reading it, or none mentions it."""
    for st in rest:
        names = [n for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == name]
        if not names:
            continue
        return _assigned_name(st) == name and not any(
            isinstance(n.ctx, ast.Load) for n in names)
    return True


def _assigned_name(st: ast.stmt) -> str | None:
    """The name a plain ``name = ...`` statement assigns; None for any other statement."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(
            st.targets[0], ast.Name):
        return st.targets[0].id
    return None


def _emptied(node: ast.expr) -> ast.expr:
    """An empty tuple for a tuple of constants, an empty list for a list or set of them;
    any other expression unchanged."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(
            isinstance(e, ast.Constant) for e in node.elts):
        return ast.Tuple(elts=[], ctx=ast.Load()) if isinstance(node, ast.Tuple) else (
            ast.List(elts=[], ctx=ast.Load()))
    return node


def _behaviour_names() -> frozenset[str]:
    import builtins
    import collections
    import math
    import string

    modules = (builtins, math, random, string, itertools, collections, re)
    types = (str, list, dict, set, tuple, int, float, random.Random, collections.Counter)
    return frozenset(n for owner in modules + types for n in dir(owner)
                     if not n.startswith("_"))


BEHAVIOUR_NAMES = _behaviour_names()
"""Names the same-game rule keeps where they are called when it masks names: the
builtins, the methods of the builtin types and the functions of the modules a design
may import. ``min(shown)`` and
``sorted(shown)``, ``w.count(x)`` and ``w.index(x)`` compute different answers; only the
names a program chooses itself are masked (learn-s21: with a sentence added to its
question no longer telling them apart, "the word with the fewest letters" scored by
``min`` was the same game as ``sort_three.py`` scored by ``sorted``)."""


STEP_NAMES = frozenset(word_steps.STEPS)
"""Names both similarity rules keep wherever they stand: ``chain(word, reverse)`` and
``chain(word, sort_letters)`` compute different answers, though the steps are handed
over rather than called."""


def _code_tokens(source: str, keep: frozenset[str] = frozenset()) -> list[str]:
    # Names and numbers are masked so a copy with renamed variables and retuned
    # constants still matches; string literals (the task's text) and structure remain.
    # A name in ``keep`` stays where it is called (``min(``, ``.count(``): a variable
    # renamed to ``count`` is still only a name. Callers empty the data tables first
    # (``without_data``).
    try:
        lexed = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                 if t.type not in _SKIP]
    except (tokenize.TokenError, SyntaxError):
        # Only lexing, never executing; an unlexable program still gets a crude split.
        return re.findall(r"\w+|[^\w\s]", source)
    toks = []
    for i, t in enumerate(lexed):
        called = i + 1 < len(lexed) and lexed[i + 1].string == "("
        if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and not (
                called and t.string in keep) and t.string not in STEP_NAMES:
            toks.append("ID")
        elif t.type == tokenize.NUMBER:
            toks.append("0")
        else:
            toks.append(t.string)
    return toks


def features(source: str, doc: str = "") -> frozenset:
    """Shingles of one program: code-token 4-grams and docstring word 3-grams."""
    # Data tables emptied: a copy over other data matches too.
    toks = _code_tokens(without_data(source))
    feats = {("c",) + tuple(toks[i:i + CODE_NGRAM])
             for i in range(max(1, len(toks) - CODE_NGRAM + 1))}
    words = re.findall(r"\w+", inspect.cleandoc(doc or "").lower())
    feats |= {("d",) + tuple(words[i:i + DOC_NGRAM])
              for i in range(max(0, len(words) - DOC_NGRAM + 1))}
    return frozenset(feats)


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def most_similar(rec: EnvRecord, others: list[EnvRecord]) -> tuple[str | None, float]:
    """The most similar other record and its similarity (None, 0 when there is none)."""
    f = features(rec.source, rec.doc)
    best: tuple[str | None, float] = (None, 0.0)
    for o in others:
        if o.env_id == rec.env_id:
            continue
        s = jaccard(f, features(o.source, o.doc))
        if s > best[1]:
            best = (o.env_id, s)
    return best


def diversity(store: Store, run: str) -> float:
    """Mean pairwise Jaccard distance of the active set's programs (0 with < 2 entries)."""
    feats = [features(e.record.source, e.record.doc) for e in entries(store, run)]
    pairs = list(itertools.combinations(feats, 2))
    if not pairs:
        return 0.0
    return sum(1.0 - jaccard(a, b) for a, b in pairs) / len(pairs)


# -- writing -------------------------------------------------------------------------


def add(store: Store, run: str, rec: EnvRecord, generation: int,
        cfg: MemoryConfig | None = None) -> AddResult:
    """Add an accepted environment unless it is already in the run's memory (same id,
    active or evicted) or a near-duplicate of an active entry; then enforce capacity."""
    cfg = cfg or MemoryConfig()
    if rec.flag:
        return AddResult(False, rec.flag)
    if queries.in_memory(store, run, rec.env_id):
        return AddResult(False, "duplicate: already in the memory", rec.env_id, 1.0)
    other, sim = most_similar(rec, [e.record for e in entries(store, run)])
    if other is not None and sim >= cfg.dedup_threshold:
        return AddResult(False, f"near_duplicate: similarity {sim:.2f} to {other}", other, sim)
    save_record(store, rec)
    store.upsert("memory", _new_row(run, rec.env_id, generation))
    return AddResult(True, None, other, sim, tuple(enforce_capacity(store, run, cfg, keep={rec.env_id})))


def _stat(v) -> tuple[int, float, float, float]:
    if isinstance(v, EnvStats):
        return v.episodes, v.regret, v.win_rate_no_hint, v.win_rate_hint
    if isinstance(v, Mapping):  # a row of the `regrets` table
        return (int(v["episodes"]), float(v["regret"]), float(v["win_rate_no_hint"]),
                float(v["win_rate_hint"]))
    # regret.DesignStats, duck-typed to avoid coupling the modules' imports
    return (int(v.n_episodes), float(v.regret), float(v.win_rate_without_hint),
            float(v.win_rate_with_hint))


def _blend(old: float | None, new: float) -> float:
    return new if old is None else (1 - STATS_WEIGHT_NEW) * old + STATS_WEIGHT_NEW * new


def update_stats(store: Store, run: str, generation: int, stats_by_env: Mapping,
                 cfg: MemoryConfig | None = None) -> list[str]:
    """Fold one generation's estimates into the entries (EnvStats, regret.DesignStats or
    `regrets` rows), then enforce capacity; returns the evicted env_ids.

    Rerunning a generation is safe: an entry already updated at this generation is
    skipped, so its plays are not counted twice.
    """
    cfg = cfg or MemoryConfig()
    current = {e.env_id: e for e in entries(store, run, active_only=False)}
    for env_id, v in stats_by_env.items():
        e = current.get(env_id)
        if e is None or e.last_generation == generation:
            continue
        episodes, reg, wr, wrh = _stat(v)
        store.upsert("memory", {
            "run": run, "env_id": env_id, "added_generation": e.added_generation,
            "last_generation": generation, "plays": e.plays + episodes,
            "regret": _blend(e.regret, reg),
            "win_rate_no_hint": _blend(e.win_rate_no_hint, wr),
            "win_rate_hint": _blend(e.win_rate_hint, wrh), "active": e.active})
    return enforce_capacity(store, run, cfg)


def drop_flagged(store: Store, run: str) -> list[str]:
    """Deactivate the run's entries whose environment was flagged (e.g. it paid past 1.0
    in a rollout); returns their ids. They stay as rows, out of the pool and prompts."""
    ids = queries.active_flagged_memory(store, run)
    for env_id in ids:
        queries.deactivate_memory_entry(store, run, env_id)
    return ids


def _keep_priority(e: MemoryEntry, cfg: MemoryConfig) -> tuple:
    tier = 2 if _in_band(e, cfg) else (1 if not e.played else 0)
    return (e.record.origin == "seed", tier, e.regret if e.regret is not None else 0.0,
            e.last_generation if e.last_generation is not None else e.added_generation)


def enforce_capacity(store: Store, run: str, cfg: MemoryConfig,
                     keep: Collection[str] = ()) -> list[str]:
    """Deactivate the lowest-priority entries beyond ``cfg.capacity``; returns their ids."""
    es = entries(store, run)
    excess = len(es) - cfg.capacity
    if excess <= 0:
        return []
    victims = sorted((e for e in es if e.env_id not in keep),
                     key=lambda e: (_keep_priority(e, cfg), e.env_id))[:excess]
    for e in victims:
        store.upsert("memory", {
            "run": run, "env_id": e.env_id, "added_generation": e.added_generation,
            "last_generation": e.last_generation, "plays": e.plays, "regret": e.regret,
            "win_rate_no_hint": e.win_rate_no_hint, "win_rate_hint": e.win_rate_hint,
            "active": False})
    return [e.env_id for e in victims]


__all__ = ["MemoryEntry", "EnvStats", "AddResult", "PromptExamples", "SeedRejected",
           "seed_records", "init_memory", "entries", "existing_titles", "positive_examples",
           "negative_examples", "prompt_examples", "pool_sample", "features", "jaccard",
           "most_similar", "diversity", "add", "update_stats", "enforce_capacity",
           "drop_flagged"]


# -- the flow's stage ------------------------------------------------------------------


def update_stage(rt: StageRuntime, generation: int, verdicts: Verdicts, scores: Scores
                 ) -> MemoryReport:
    """Add this generation's accepted environments (near-duplicates refused) and fold
    the generation's regret estimates (``scores``; the per-environment statistics are
    the store's ``regrets`` rows) into every played environment's statistics."""
    store, run, cfg = rt.store, rt.run, rt.cfg.memory
    added = refused = 0
    for env_id in sorted(set(verdicts.accepted_env_ids)):
        rec = load_record(store, env_id)
        if rec is None:
            continue
        res = add(store, run, rec, generation, cfg)
        added += res.added
        refused += not res.added
    drop_flagged(store, run)
    regrets = queries.regrets_of(store, run, generation)
    evicted = update_stats(store, run, generation, {r["env_id"]: r for r in regrets}, cfg)
    return MemoryReport(memory_added=added, memory_refused=refused,
                        memory_evicted=len(evicted), memory_size=len(entries(store, run)),
                        memory_diversity=diversity(store, run))

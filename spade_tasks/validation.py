"""The environment checker: small named checks over one program, run in the sandbox.

Each ``check_*`` returns a list of reasons (``"<check name>: <detail>"``); an empty list
means the check passed, and raising ``Skipped`` means it does not apply. The same reason
strings go to the designer's feedback, DuckDB and the tests. Static checks read the
source; dynamic ones play episodes through ``spade_tasks.sandbox`` and never execute the
program in this process. The checks run in the order of ``STATIC_CHECKS`` then
``DYNAMIC_CHECKS``, cheapest and most basic first: by default validation stops at the
first failure (the flow validates every design), and how far a rejected design got in
this order grades its reward. ``run_all`` runs every check and reports each one.

Episodes are played once per validation and shared between checks (``Ctx.episode``):
the oracle's episodes serve feasibility, replay and the floor players; each episode
still runs in a fresh sandbox worker.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from spade_tasks import asked, pysyntax, word_steps
from spade_tasks.answers import answer_of, leaks
from spade_tasks.config import SandboxConfig, ValidationConfig
from spade_tasks.sandbox import CallResult, Episode, ProgramMeta, Sandbox

ALLOWED_IMPORTS = frozenset({
    "math", "random", "re", "json", "itertools", "collections", "string", "fractions",
    "dataclasses", "heapq", "functools", "typing", "abc", "enum", "copy", "operator",
    "statistics", "decimal", "bisect", "textwrap", "numpy", "gymnasium", "spade_env",
    "reasoning_gym",  # the fixed-environment baseline's wrapped generators
})
TOOL_BASES = frozenset({"ToolEnv", "ToolUseBaseEnv"})
# spade_env bases that define reset and step themselves: a subclass may inherit both.
FULL_BASES = frozenset({"QuizEnv", "ReasoningGymEnv"})
SOLVED = 1.0
RETURN_FLOOR = -1.0
RETURN_CAP = SOLVED
EPS = 1e-6


def is_solved(total: float) -> bool:
    """The one "solved" rule, for the validator, rollouts and regret: an episode's reward
    total reaches 1.0, up to float rounding (three rewards of 1/3 solve)."""
    return total >= SOLVED - EPS


def capped_return(total: float) -> float:
    """An episode's return wherever episodes are played (validator, rollout, ``spade
    play``): its reward total capped to [-1, 1]. The cap keeps an action the validator
    never tried from paying past "solved" and inflating regret; the floor bounds what
    penalties can cost."""
    return min(RETURN_CAP, max(RETURN_FLOOR, total))


@dataclass
class Static:
    """What the static checks learned: the environment class, if exactly one, and the
    names of its bases."""

    tree: ast.Module | None = None
    class_name: str | None = None
    bases: frozenset[str] = frozenset()


@dataclass
class Played:
    """One episode as the harness saw it; ``error`` is a sandbox failure, if any."""

    seed: int | None
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    error: str | None = None
    hint: str | None = None
    label: str = ""
    """Which player this was (``oracle``, ``empty``, ``probe 'long'``...), for reasons."""
    call_seconds: list[tuple[str, float]] = field(default_factory=list)
    """(call, seconds) of every reset/step/hint/oracle call, timed on the harness side."""
    peak_mb: float | None = None
    """The worker's peak resident memory over the episode (None where unknown)."""

    @property
    def total(self) -> float:
        return sum(self.rewards)

    @property
    def ret(self) -> float:
        """The episode's return: the reward total capped to [-1, 1]."""
        return capped_return(self.total)

    @property
    def turns(self) -> int:
        return len(self.actions)

    @property
    def solved(self) -> bool:
        return is_solved(self.total)


class Skipped(Exception):
    """Raised by a check that does not apply to this program; its message says why."""


@dataclass
class CheckResult:
    """One check's outcome, as ``spade validate --json`` reports it."""

    name: str
    status: str
    """``pass``, ``fail`` or ``skip``."""
    detail: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 3)}


@dataclass
class Report:
    """The verdict on one program."""

    path: str | None
    accepted: bool
    reasons: list[str]
    tier: str
    class_name: str | None = None
    meta: ProgramMeta | None = None
    checks: list[CheckResult] = field(default_factory=list)
    """Every check run, in order (with ``run_all``, every check there is)."""
    fingerprint: str | None = None
    """Hash of the oracle's transcripts on the validation seeds (behaviour, not text):
    two programs with the same fingerprint play the same episodes (``duplicate``)."""

    def to_json(self) -> dict:
        return {"path": self.path, "accepted": self.accepted, "reasons": self.reasons,
                "tier": self.tier, "class_name": self.class_name,
                "checks": [c.to_json() for c in self.checks]}


# Policies: given the episode and the last observation, return the next action text,
# or None when the policy cannot act (its failure is recorded by the caller).
Policy = Callable[[Episode, str], "str | None"]


def empty_policy(ep: Episode, obs: str) -> str:
    return ""


def echo_policy(ep: Episode, obs: str) -> str:
    return obs


QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"")


def quoted_policy(ep: Episode, obs: str) -> str:
    """Boxes the first text the observation puts in quotes: a task that names its own
    answer ("Spell out the word 'crane'") is solved without working anything out."""
    m = QUOTED.search(obs)
    return "\\boxed{" + (m.group(1) or m.group(2)) + "}" if m else ""


def constant_policy(text: str) -> Policy:
    return lambda ep, obs: text


def oracle_policy(ep: Episode, obs: str) -> str | None:
    r = ep.oracle()
    return r.value if r.ok else None


def replay_policy(actions: list[str]) -> Policy:
    """Plays a recorded action log, then empty text if the episode goes on."""
    log = iter(list(actions))
    return lambda ep, obs: next(log, "")


PROBES = {
    "empty": "",
    "long": "x" * 20000,
    "malformed": '<tool_call>{"name": [}</tool_call> \\boxed{ <answer>',
    "unicode": "Привет 🙂 — ∑∫ ÿ\u0000\u202e",
    "number": "42",
}


def play(sandbox: Sandbox, source: str, class_name: str, seed: int | None,
         policy: Policy, max_turns: int, with_hint: bool = False) -> Played:
    """Play one episode in a fresh worker; faults end it with ``error`` set."""
    with sandbox.open(source, class_name, {"max_turns": max_turns}) as ep:
        if not ep.load_result.ok:
            return Played(seed, error=ep.load_result.error)
        p = play_in(ep, seed, policy, max_turns, with_hint)
        p.peak_mb = ep.peak_memory_mb()
    return p


def play_in(ep: Episode, seed: int | None, policy: Policy, max_turns: int,
            with_hint: bool = False, options: dict | None = None) -> Played:
    """Play one episode on an open worker (several may follow each other on one);
    ``options`` goes to reset (the harness's own, such as a nudged draw)."""
    p = Played(seed)
    r = ep.reset(seed, options)
    p.call_seconds.append(("reset", r.seconds))
    if not r.ok:
        p.error = r.error
        return p
    obs = r.value[0]
    if with_hint and ep.meta.has_hint:
        h = ep.hint()
        p.call_seconds.append(("hint", h.seconds))
        if not h.ok:
            p.error = h.error
            return p
        p.hint = h.value
    p.observations.append(obs)
    for _ in range(max_turns):
        action = policy(ep, obs)
        if action is None:
            p.error = "policy: the policy produced no action"
            break
        p.actions.append(action)
        r = ep.step(action)
        p.call_seconds.append(("step", r.seconds))
        if not r.ok:
            p.error = r.error
            break
        obs, reward, p.terminated, p.truncated, _ = r.value
        p.observations.append(obs)
        p.rewards.append(reward)
        if p.terminated or p.truncated:
            break
    return p


# -- static checks --------------------------------------------------------------------


def check_parse(source: str, st: Static) -> list[str]:
    try:
        st.tree = pysyntax.parse(source)
    except SyntaxError as e:
        return [f"parse: line {e.lineno}: {e.msg}"]
    return []


def _env_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in tree.body if isinstance(n, ast.ClassDef)
            and (n.name == "Environment" or n.name.endswith("Env"))]


def _base_names(cls: ast.ClassDef) -> set[str]:
    names = set()
    for b in cls.bases:
        if isinstance(b, ast.Name):
            names.add(b.id)
        elif isinstance(b, ast.Attribute):
            names.add(b.attr)
    return names


def check_env_class(source: str, st: Static) -> list[str]:
    classes = _env_classes(st.tree)
    if len(classes) != 1:
        found = ", ".join(c.name for c in classes) or "none"
        return [f"env_class: define exactly one class named `Environment` or `...Env` "
                f"(found {found})"]
    cls = classes[0]
    st.class_name = cls.name
    st.bases = bases = frozenset(_base_names(cls))
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    inherited = {"reset", "step"} if bases & FULL_BASES else {"step"} if bases & TOOL_BASES else set()
    missing = [m for m in ("reset", "step") if m not in methods and m not in inherited]
    if missing:
        return [f"env_class: {cls.name} must define {' and '.join(missing)}()"]
    return []


def check_imports(source: str, st: Static) -> list[str]:
    bad = set()
    for node in ast.walk(st.tree):
        if isinstance(node, ast.Import):
            bad |= {a.name for a in node.names if a.name.split(".")[0] not in ALLOWED_IMPORTS}
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod == "__future__" and not node.level:
                continue  # compiler directives (annotations as strings), not a module
            if node.level or mod.split(".")[0] not in ALLOWED_IMPORTS:
                bad.add("." * node.level + mod)
    if bad:
        return [f"imports: not allowed: {', '.join(sorted(bad))} "
                f"(allowed: standard-library pure modules, numpy, gymnasium, spade_env, "
                "reasoning_gym)"]
    return []


STATIC_CHECKS = [check_parse, check_env_class, check_imports]


# -- dynamic checks -------------------------------------------------------------------


@dataclass
class Ctx:
    """Everything the dynamic checks share about one program."""

    sandbox: Sandbox
    source: str
    class_name: str
    cfg: ValidationConfig
    bases: frozenset[str] = frozenset()
    """The environment class's base names, as ``env_class`` read them."""
    meta: ProgramMeta | None = None
    allow_unverified: bool = False
    """A program from a fixed pool that opted out of ``oracle_missing``."""
    played: list[Played] = field(default_factory=list)
    """Every episode of this validation, in order (reward_well_formed and
    resource_bounds look at all of them)."""
    episodes: dict[tuple[str, int], Played] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    """What a passing check measured, shown as its detail."""
    load_seconds: float = 0.0

    @property
    def max_turns(self) -> int:
        return self.meta.max_turns

    def play(self, seed, policy, with_hint=False, label="") -> Played:
        p = play(self.sandbox, self.source, self.class_name, seed, policy,
                 self.max_turns, with_hint)
        p.label = label
        self.played.append(p)
        return p

    def other_seed(self, seed: int) -> int:
        """The next validation seed after ``seed`` (a different episode to borrow from)."""
        seeds = self.cfg.seeds
        if len(set(seeds)) < 2:
            raise Skipped("needs two different validation seeds")
        i = seeds.index(seed)
        return next(s for s in seeds[i + 1:] + seeds[:i] if s != seed)

    def episode(self, name: str, seed: int) -> Played:
        """The named player's episode on ``seed``, played once per validation.

        Players: ``oracle``; ``empty`` (empty text); ``echo`` (repeats the observation);
        ``quoted`` (boxes the observation's first quoted text); ``repeat_first``
        (another seed's first oracle action, every turn) and ``other_oracle`` (another
        seed's oracle actions): well-formed but uninformed."""
        key = (name, seed)
        if key not in self.episodes:
            if name == "oracle":
                policy = oracle_policy
            elif name == "empty":
                policy = empty_policy
            elif name == "echo":
                policy = echo_policy
            elif name == "quoted":
                policy = quoted_policy
            elif name == "oracle_replay":  # the oracle's actions, without calling oracle()
                policy = replay_policy(self.episode("oracle", seed).actions)
            else:
                donor = self.episode("oracle", self.other_seed(seed))
                if donor.error or not donor.actions:
                    raise Skipped(f"the oracle's episode on seed {donor.seed} failed")
                policy = (constant_policy(donor.actions[0]) if name == "repeat_first"
                          else replay_policy(donor.actions))
            self.episodes[key] = self.play(seed, policy, label=name)
        return self.episodes[key]

    def replay(self, p: Played, label: str) -> Played:
        """``p``'s recorded actions, played again on its seed in a fresh worker."""
        return self.play(p.seed, replay_policy(p.actions), label=label)

    @functools.cached_property
    def draws(self) -> list[tuple[str, str]] | None:
        """``probe_draws`` of this program, drawn once per validation and shared by the
        checks that read a quiz's questions against its answers."""
        return probe_draws(self.sandbox, self.source, self.class_name)

    @functools.cached_property
    def first_answers(self) -> list[FirstAnswer] | Callable[[str], str]:
        """``_read_first_answers`` of this program, played once per validation and shared
        by ``answer_given`` and ``answer_constant`` (``_first_answers``)."""
        return _read_first_answers(self)


def reference_episodes(ctx: Ctx) -> dict[int, Played]:
    """The oracle's episode on each validation seed (an empty-text player's for a
    feasibility-unverified program), played once and shared by the checks after
    feasibility and by the behaviour fingerprint."""
    name = "oracle" if ctx.meta.has_oracle else "empty"
    return {s: ctx.episode(name, s) for s in ctx.cfg.seeds}


def _transcript(p: Played) -> list:
    # Rewards rounded so float noise in a program's arithmetic is not a difference.
    return [p.observations, p.actions, [round(r, 9) for r in p.rewards], p.terminated,
            p.truncated]


def _digest(value) -> str:
    """A short stable hash of a JSON-able value: the form of every behaviour hash."""
    return hashlib.sha256(json.dumps(value, ensure_ascii=True).encode()).hexdigest()[:32]


def behaviour_fingerprint(episodes: dict[int, Played]) -> str:
    """Hash of the reference player's transcripts (observations, actions, rewards) on
    the validation seeds: equal for programs that play the same episodes."""
    return _digest([[s, _transcript(p)] for s, p in sorted(episodes.items())])


WORDS_OPTION = "spade_words"
"""The reset option that makes a ``QuizEnv`` draw from other words (envlib)."""
PROBE_WORDS = ("kettle", "apricot", "zebra", "moon", "quartz", "lilac", "umbrella", "fig",
               "gnome", "harbor", "jasmine", "vivid", "oxen", "breeze", "ladder", "sky")
"""The words every quiz draws from for ``answer_behaviour``: lengths 3 to 8, first
letters all different, vowels from none to four, so different games over them answer
differently."""
PROBE_SEEDS = 16
"""Resets ``answer_behaviour`` records."""
PROBE_DRAWS = 64
"""Resets ``answer_items`` records: enough that two quizzes showing one or two words
ask some of the same questions whatever their draws (16 probe words: 16 questions of
one word, 240 of two in order)."""
_NUMBER = re.compile(r"\d+")

Question = tuple[tuple[str, ...], tuple[str, ...]]
"""What a quiz's question asks about, apart from its wording: the probe words it shows,
in order, and the numbers it states."""


HOISTED = "_SPADE_WORDS_"
"""The name stem of the word lists ``hoist_word_lists`` moves to the top of a program."""
HOIST_MIN = 4
"""Words a list written inside a function needs to be read as data: the options a
question picks from ("yes", "no"; "first", "last", "middle") are fewer."""


def hoist_word_lists(source: str) -> str:
    """``source`` with each list or tuple of ``HOIST_MIN`` or more words (string
    constants of two or more characters each) written inside a function moved to a
    table at the top of the module, where ``WORDS_OPTION`` replaces it: a list is read
    as a fresh copy, as the literal made one on each call. A quiz that draws its words
    from a list inside ``questions()`` is then probed like one drawing from ``WORDS``
    (learn-s43 wrote 12 of 128 designs so, "How many letters does X have?" among them,
    each refused unread by ``words_ignored``). Lists of letters ("a", "e", ...) and short
    lists of options ("yes", "no") stay: they are rules, not data. The source comes
    back unchanged where nothing moves (or it does not parse)."""
    try:
        tree = pysyntax.parse(source)
    except (SyntaxError, ValueError):
        return source
    tables: list[ast.Assign] = []

    class Hoist(ast.NodeTransformer):
        def visit_List(self, node):
            return self._hoisted(node, copy=True)

        def visit_Tuple(self, node):
            return self._hoisted(node, copy=False)

        def _hoisted(self, node, copy: bool):
            if len(node.elts) < HOIST_MIN or not all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str)
                    and len(e.value) >= 2 for e in node.elts) \
                    or not isinstance(node.ctx, ast.Load):
                return self.generic_visit(node)
            name = f"{HOISTED}{len(tables)}"
            tables.append(ast.Assign([ast.Name(name, ast.Store())], node))
            read = ast.Name(name, ast.Load())
            return ast.Call(ast.Name("list", ast.Load()), [read], []) if copy else read

    class InFunctions(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return Hoist().visit(node)

        visit_AsyncFunctionDef = visit_FunctionDef

    tree = InFunctions().visit(tree)
    if not tables:
        return source
    first = next((i for i, n in enumerate(tree.body)
                  if not isinstance(n, (ast.Import, ast.ImportFrom))
                  and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))),
                 len(tree.body))
    tree.body[first:first] = tables
    return ast.unparse(ast.fix_missing_locations(tree))


def probe_draws(sandbox: Sandbox, source: str, class_name: str,
                seeds: int = PROBE_DRAWS) -> list[tuple[str, str]] | None:
    """A quiz's first question and the oracle's first answer on each of ``seeds`` seeds
    with its word tables set to ``PROBE_WORDS`` (a ``QuizEnv``'s ``WORDS_OPTION``), up
    to the first seed it fails on; word lists written inside its functions count as
    tables (``hoist_word_lists``), unless the quiz then fails where it did not (a list
    of names it dispatches on is not data). None for a program that is not such a quiz
    (no word table, no oracle) or that fails on the probe words within ``PROBE_SEEDS``
    seeds."""
    hoisted = hoist_word_lists(source)
    draws = _probe(sandbox, hoisted, class_name, seeds)
    if draws is None and hoisted != source:
        draws = _probe(sandbox, source, class_name, seeds)
    return draws


def _probe(sandbox: Sandbox, source: str, class_name: str,
           seeds: int) -> list[tuple[str, str]] | None:
    draws = []
    with sandbox.open(source, class_name, {"max_turns": 1}) as ep:
        if not ep.load_result.ok or not ep.meta.has_oracle:
            return None
        for seed in range(seeds):
            r = ep.reset(seed, {WORDS_OPTION: list(PROBE_WORDS)})
            o = ep.oracle() if r.ok else None
            if not r.ok or not isinstance(r.value[1], dict) or not r.value[1].get("tables") \
                    or not o.ok or not isinstance(o.value, str):
                # A quiz that fails on a late draw is still compared on the draws before
                # it, as ``answer_behaviour`` compares its first ``PROBE_SEEDS``.
                return draws if len(draws) >= PROBE_SEEDS else None
            draws.append((str(r.value[0]), o.value))
    return draws


def _shown(text: str) -> tuple[str, ...]:
    """The probe words a question shows, in order."""
    return tuple(w for w in _words(text) if w in PROBE_WORDS)


def answer_items(sandbox: Sandbox, source: str, class_name: str,
                 seeds: int = PROBE_DRAWS) -> list[tuple[Question, str]] | None:
    """What a quiz computes on ``probe_draws``: its first question (``Question``) and
    the oracle's first answer on each draw. None where ``probe_draws`` gives None."""
    draws = probe_draws(sandbox, source, class_name, seeds)
    if draws is None:
        return None
    return [((_shown(text), tuple(_NUMBER.findall(text))), answer) for text, answer in draws]


def behaviour_of(items: list[tuple[Question, str]]) -> str:
    """The hash ``answer_behaviour`` gives for ``answer_items``' first ``PROBE_SEEDS``."""
    return _digest([[sorted(set(q[0])), answer] for q, answer in items[:PROBE_SEEDS]])


def answer_behaviour(sandbox: Sandbox, source: str, class_name: str) -> str | None:
    """What a quiz computes, apart from its data and how it is told: a hash of, on each
    of ``PROBE_SEEDS`` seeds with its word tables set to ``PROBE_WORDS`` (a
    ``QuizEnv``'s ``WORDS_OPTION``), the probe words its first question shows and the
    oracle's first answer. Two quizzes with the same hash compute the same answer from
    the same shown words, however their code and questions read (``shown[::-1]`` and
    ``list(reversed(shown))``; "Reverse the list" and "Swap the first 2 of the list"):
    the same game for the duplicate rule. None for a program that is not such a quiz
    (no word table, no oracle) or that fails on the probe words."""
    items = answer_items(sandbox, source, class_name, PROBE_SEEDS)
    return None if items is None else behaviour_of(items)


MIN_SHARED_QUESTIONS = 3
"""Questions two quizzes must both ask, with the same answers and none different, for
``shared_questions`` to call them one game under other draws."""


def shared_questions(mine: list[tuple[Question, str]],
                     theirs: list[tuple[Question, str]]) -> int:
    """How many questions (``Question``) two quizzes both ask and answer alike, or 0 when
    one of them is answered differently: the same game drawn another way (a word taken
    from a sample of 4 rather than from the table, a list of 3 to 5 words where the
    other draws 4) agrees wherever the two ask the same thing. A question a quiz answers
    in more than one way depends on something it does not show, and is not compared."""
    def answers(items):
        out: dict[Question, set[str]] = {}
        for q, a in items:
            out.setdefault(q, set()).add(a)
        return {q: next(iter(a)) for q, a in out.items() if len(a) == 1}

    a, b = answers(mine), answers(theirs)
    both = a.keys() & b.keys()
    if any(a[q] != b[q] for q in both):
        return 0
    return len(both)


def _fault(check: str, p: Played, what: str) -> str:
    kind = p.error.split(":", 1)[0]
    name = {"timeout": "limits", "memory": "limits", "crash": "limits",
            "protocol": "limits"}.get(kind, check)
    if kind == "bad_return":
        name = "step_return" if "step" in p.error or "terminated" in p.error else "reset_return"
    return f"{name}: {what}: {p.error}"


def check_load(ctx: Ctx) -> list[str]:
    # No constructor arguments: the program's own max_turns (a class attribute, or the
    # default of a reference-style `__init__(self, max_turns=...)`) is what it declares;
    # passing one here would override a ToolEnv's class attribute.
    with ctx.sandbox.open(ctx.source, ctx.class_name, {}) as ep:
        if not ep.load_result.ok:
            return [f"load: {ep.load_result.error}"]
        ctx.meta = ep.meta
        ctx.load_seconds = ep.start_seconds
    return []


def check_max_turns(ctx: Ctx) -> list[str]:
    mt = ctx.meta.max_turns
    if mt is None or not 1 <= mt <= ctx.cfg.max_turns_cap:
        return [f"max_turns: must be an int in 1..{ctx.cfg.max_turns_cap}, "
                f"got {mt!r}"]
    return []


def _reward_problem(p: Played, what: str) -> str | None:
    """The reason of reward_well_formed for one episode, or None: every reward finite,
    the total within [-1, 1] (an episode pays at most 1.0, which means solved)."""
    bad = next((r for r in p.rewards if not math.isfinite(r)), None)
    if bad is not None:
        return f"reward_well_formed: {what}: reward {bad} is not finite"
    if p.total > RETURN_CAP + EPS:
        return (f"reward_well_formed: {what}: episode total {p.total:g} exceeds 1.0 (an "
                "episode pays at most 1.0, which means solved)")
    if p.total < RETURN_FLOOR - EPS:
        return (f"reward_well_formed: {what}: episode total {p.total:g} is below -1.0 "
                "(penalties may cost at most 1.0 in all)")
    return None


def _episode_problems(check: str, p: Played, what: str) -> list[str]:
    if p.error:
        return [_fault(check, p, what)]
    problem = _reward_problem(p, what)
    return [problem] if problem else []


def check_probe_actions(ctx: Ctx) -> list[str]:
    """Every probe action, repeated each turn, gets well-typed finite replies."""
    seed = ctx.cfg.seeds[0]
    probes = dict(PROBES, long="x" * ctx.cfg.probe_long_chars)
    for name, text in probes.items():
        problems = _episode_problems("step_return",
                                     ctx.play(seed, constant_policy(text), label=f"probe {name!r}"),
                                     f"probe action {name!r}")
        if problems:
            return problems
    return []


def check_oracle_missing(ctx: Ctx) -> list[str]:
    """Feasibility is shown, not assumed: the program defines oracle() or solution()
    (only a fixed pool imported from elsewhere may opt out, and is recorded as
    feasibility-unverified)."""
    if ctx.meta.has_oracle or ctx.allow_unverified:
        return []
    return ["oracle_missing: define oracle() (or solution()) returning the next action of "
            "a player who sees the hidden state, so the validator can show the environment "
            "is winnable"]


def check_oracle_feasible(ctx: Ctx) -> list[str]:
    """Where an oracle exists, it solves every validation seed within max_turns."""
    if not ctx.meta.has_oracle:
        raise Skipped("no oracle() or solution(): feasibility unverified")
    for seed in ctx.cfg.seeds:
        p = ctx.episode("oracle", seed)
        problems = _episode_problems("oracle_feasible", p, f"oracle on seed {seed}")
        if problems:
            return problems
        if not p.solved:
            return [f"oracle_feasible: oracle reached total {p.total:g} (needs 1.0) on seed "
                    f"{seed} in {p.turns} turns (max_turns {ctx.max_turns})"]
    return []


def _difference(a: Played, b: Played) -> str | None:
    """Where two episodes of the same seed and actions part, or None."""
    for i, (x, y) in enumerate(zip(a.observations, b.observations)):
        if x != y:
            return f"observation {i}"
    if len(a.observations) != len(b.observations):
        return f"episode length ({a.turns} vs {b.turns} turns)"
    if not all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a.rewards, b.rewards)):
        turn = next(i for i, (x, y) in enumerate(zip(a.rewards, b.rewards))
                    if not math.isclose(x, y, abs_tol=1e-9))
        return f"reward {turn + 1} ({a.rewards[turn]:g} vs {b.rewards[turn]:g})"
    return None


def _first_diff(a: list, b: list) -> int:
    return next((i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)) + 1)


def check_determinism(ctx: Ctx) -> list[str]:
    """On every validation seed, the same actions give the same observations and rewards,
    for a wrong player (echo: its text reaches the verifier as a wrong answer) and for the
    oracle's actions (replayed without calling oracle(), in fresh workers)."""
    for seed in ctx.cfg.seeds:
        pairs = [("echo", ctx.episode("echo", seed), None)]
        if ctx.meta.has_oracle and not ctx.episode("oracle", seed).error:
            pairs.append(("oracle", ctx.episode("oracle", seed), ctx.episode("oracle_replay", seed)))
        for name, first, second in pairs:
            if first.error:
                return [_fault("non_trivial", first, f"{name} policy on seed {seed}")]
            second = second or ctx.replay(first, f"{name} replay")
            if second.error:
                return [_fault("determinism", second, f"replay of seed {seed}")]
            if name == "oracle" and _difference(first, second):
                # The oracle's run may differ from its replay because oracle() changed
                # the state (replayability's reason) or because the program is not
                # deterministic: a second oracle run in a fresh worker tells them apart
                # (the same seed must give the same oracle actions and transcript).
                again = ctx.play(seed, oracle_policy, label="oracle, again")
                if again.error:
                    return [_fault("determinism", again, f"oracle on seed {seed}, again")]
                if again.actions != first.actions:
                    return [f"determinism: seed {seed} played twice by the oracle gives "
                            f"different actions (turn {_first_diff(first.actions, again.actions)})"]
                second = again
            where = _difference(first, second)
            if where:
                return [f"determinism: seed {seed} replayed with the same actions differs "
                        f"at {where}"]
    return []


def check_replayability(ctx: Ctx) -> list[str]:
    """The oracle's recorded actions, replayed in a fresh worker without calling the
    oracle, give the same observations and return (an oracle() that changes the state
    it is asked about would make a task look feasible when it is not)."""
    if not ctx.meta.has_oracle:
        raise Skipped("no oracle")
    for seed in ctx.cfg.seeds:
        o = ctx.episode("oracle", seed)
        if o.error:
            raise Skipped(f"the oracle's episode on seed {seed} failed")
        r = ctx.episode("oracle_replay", seed)
        if r.error:
            return [_fault("replayability", r, f"replay of the oracle's actions on seed {seed}")]
        where = _difference(o, r)
        if where:
            return [f"replayability: the oracle's actions on seed {seed}, replayed without "
                    f"calling oracle(), differ at {where} (return {r.ret:g} vs {o.ret:g})"]
    return []


def check_episode_isolation(ctx: Ctx) -> list[str]:
    """After a played episode, reset(seed) on the same instance gives the same episode as
    a fresh instance (no state leaks from one episode into the next)."""
    name = "oracle" if ctx.meta.has_oracle else "echo"
    first_seed, seed = ctx.cfg.seeds[-1], ctx.cfg.seeds[0]
    fresh = ctx.episode(name, seed)
    if fresh.error:
        raise Skipped(f"the {name} episode on seed {seed} failed")
    policy = oracle_policy if name == "oracle" else echo_policy
    with ctx.sandbox.open(ctx.source, ctx.class_name, {"max_turns": ctx.max_turns}) as ep:
        if not ep.load_result.ok:
            return [f"load: {ep.load_result.error}"]
        before = play_in(ep, first_seed, policy, ctx.max_turns)
        before.label = f"{name}, first of two on one instance"
        again = play_in(ep, seed, replay_policy(fresh.actions), ctx.max_turns)
        again.label = f"{name} replay, second on one instance"
        again.peak_mb = ep.peak_memory_mb()
    ctx.played += [before, again]
    for p in (before, again):
        if p.error:
            return [_fault("episode_isolation", p, "two episodes on one instance")]
    where = _difference(fresh, again)
    if where:
        return [f"episode_isolation: after an episode on seed {first_seed}, reset({seed}) on "
                f"the same instance differs from a fresh instance's episode at {where}"]
    return []


def check_seed_ignored(ctx: Ctx) -> list[str]:
    """Episodes vary with the seed: the reference player's whole episodes (observations,
    actions, rewards) on the validation seeds are not all identical. First observations
    alone may coincide in a good game whose state is hidden, so they are not enough.
    A feasibility-unverified program (no oracle) is not checked: no player that cannot
    see the hidden state shows whether it varies."""
    if not ctx.meta.has_oracle:
        return []
    eps = reference_episodes(ctx)
    if len(eps) < 2:
        return []
    faulty = next((p for p in eps.values() if p.error), None)
    if faulty is not None:
        return [_fault("seed_ignored", faulty, f"reference episode on seed {faulty.seed}")]
    first, *rest = eps.values()
    if all(_transcript(p) == _transcript(first) for p in rest):
        return [f"seed_ignored: the oracle's episodes on seeds "
                f"{', '.join(map(str, eps))} are identical; reset(seed) must draw the "
                "episode from its seed"]
    return []


def check_words_ignored(ctx: Ctx) -> list[str]:
    """A word quiz draws its words from its word tables: with its tables replaced by the
    probe words (``WORDS_OPTION``), its questions on the first ``PROBE_SEEDS`` seeds are
    not all the same as with its own tables. The checks that read a quiz's questions
    against its answers (``answer_given``, ``answer_asked``, the duplicate rule's answer
    behaviour) vary its data through its tables, as ``seed_ignored`` varies its seed; a
    quiz that draws from a list written inside ``questions`` shows them none of it, and
    learn-s41's designer wrote 4 of its 13 accepted designs of generations 4-7 so (3 of
    them asking one thing and scoring another). A list of words inside ``questions``
    is a table too (``hoist_word_lists``); words written in one string, or in a list
    too short to be data, are not. A quiz without tables is not judged."""
    draws = _quiz_draws(ctx)
    with ctx.sandbox.open(ctx.source, ctx.class_name, {"max_turns": 1}) as ep:
        for seed, (probed, _) in enumerate(draws[:PROBE_SEEDS]):
            r = ep.reset(seed)
            if not r.ok or str(r.value[0]) != probed:
                ctx.notes["words_ignored"] = f"seed {seed} asks otherwise over the probe words"
                return []
    n = min(len(draws), PROBE_SEEDS)
    return [f"words_ignored: with its word tables replaced by other words, the questions "
            f"on seeds 0-{n - 1} stay the same (seed 0: {_short(draws[0][0])}); draw the "
            f"words from a list of {HOIST_MIN} or more (WORDS), not from a string or a "
            "few words written in questions()"]


ANSWER_SEEDS = 64
"""Resets ``answer_determined`` looks at: enough that a task drawn from a few dozen
texts ("Which letter comes 3?") shows one twice."""
ANSWER_PAIRS = 4
"""Repeated tasks with different oracle answers it plays out before passing."""
NUDGE_OPTION = "spade_nudge"
"""The reset option that makes a ``QuizEnv`` draw from ``NudgedRandom`` (envlib)."""
NUDGE_SEEDS = 8
"""Seeds of a ``QuizEnv`` whose draws ``answer_determined`` changes one at a time."""
NUDGE_DRAWS = 32
"""The most draws of one reset it changes: a quiz's first task takes a handful."""

Task = tuple[int, int | None]
"""A first task as ``answer_determined`` draws it: (seed, the draw nudged or None)."""


def _is_quiz(ctx: Ctx) -> bool:
    """Whether the program's class subclasses ``QuizEnv``, where each question stands
    alone and its text must decide its answer."""
    return "QuizEnv" in ctx.bases


def _first_task_decides(ctx: Ctx) -> None:
    """Skip a check of first task against first answer (``answer_determined``,
    ``answer_given``) where there is no oracle answer, or where the first observation
    need not decide the answer: a one-turn game reveals nothing before its one answer,
    but in other games than a quiz feedback may reveal what the first observation hides
    (guess the hidden word)."""
    if not ctx.meta.has_oracle:
        raise Skipped("no oracle: nothing says which answer a task needs")
    if not (ctx.max_turns == 1 or _is_quiz(ctx)):
        raise Skipped("feedback may reveal what the first observation hides")


def _task_options(task: Task) -> dict | None:
    return None if task[1] is None else {NUDGE_OPTION: task[1]}


def _reset_task(ep: Episode, task: Task) -> CallResult:
    return ep.reset(task[0], _task_options(task))


def _tasks(ep: Episode, quiz: bool):
    """The first tasks ``answer_determined`` compares: ``ANSWER_SEEDS`` seeds, then for a
    ``QuizEnv`` each of the first ``NUDGE_DRAWS`` draws of ``NUDGE_SEEDS`` seeds changed
    in turn. A quiz whose ``reset`` is its own reports no draws and gets no nudges."""
    yield from ((seed, None) for seed in range(ANSWER_SEEDS))
    if not quiz:
        return
    for seed in range(NUDGE_SEEDS):
        r = _reset_task(ep, (seed, -1))  # -1: nothing changed, only the draws counted
        draws = r.value[1].get("draws") if r.ok and isinstance(r.value[1], dict) else None
        if not isinstance(draws, int):
            return
        yield from ((seed, k) for k in range(min(draws, NUDGE_DRAWS)))


def _task_name(task: Task) -> str:
    seed, nudge = task
    return f"seed {seed}" if nudge is None else f"seed {seed} with draw {nudge} changed"


def check_answer_determined(ctx: Ctx) -> list[str]:
    """Where the first observation must decide the first answer (a ``QuizEnv``
    subclass, a one-turn game), the same task text never needs two answers that exclude
    each other. Over ``ANSWER_SEEDS`` resets, and for a ``QuizEnv`` over resets with one
    of its random draws changed (``NudgedRandom``), whenever two show the same first
    observation and the oracle answers them differently, each oracle answer is played on
    the other: it must earn what that task's own oracle answer earns (a task with
    several right answers passes). Otherwise no player can do better than guess: a
    question that does not show what it asks about ("Which letter comes 3?" without the
    word) is accepted by every other check, since the oracle sees the hidden state; so
    is an answer drawn by a coin flip the text never shows, which the changed draws
    find even when no two seeds ask the same question. A changed draw that makes the
    program fail is passed over: it is not a seed any episode will play."""
    _first_task_decides(ctx)
    quiz = _is_quiz(ctx)
    seen: dict[str, tuple[Task, str]] = {}
    pairs = nudged = 0
    with ctx.sandbox.open(ctx.source, ctx.class_name, {"max_turns": ctx.max_turns}) as ep:
        if not ep.load_result.ok:
            return [f"load: {ep.load_result.error}"]
        for task in _tasks(ep, quiz):
            r = _reset_task(ep, task)
            o = ep.oracle() if r.ok else r
            if not o.ok:
                if task[1] is not None:
                    continue
                return [_fault("answer_determined", Played(task[0], error=o.error),
                               f"{'reset' if not r.ok else 'oracle'} on seed {task[0]}")]
            nudged += task[1] is not None
            obs = r.value[0]
            if obs not in seen:
                seen[obs] = (task, o.value)
                continue
            first_task, first_answer = seen[obs]
            if first_answer == o.value:
                continue
            for on, own, borrowed in ((task, o.value, first_answer),
                                      (first_task, first_answer, o.value)):
                # Each answer as the one move of a one-turn episode on the open worker.
                own_p, borrowed_p = (play_in(ep, on[0], replay_policy([a]), 1,
                                             options=_task_options(on))
                                     for a in (own, borrowed))
                faulty = next((p for p in (own_p, borrowed_p) if p.error), None)
                if faulty is not None:
                    return [_fault("answer_determined", faulty,
                                   f"first move on {_task_name(on)}")]
                own_r, borrowed_r = own_p.rewards[0], borrowed_p.rewards[0]
                if borrowed_r < own_r - EPS:
                    return [f"answer_determined: {_task_name(first_task)} and "
                            f"{_task_name(task)} show the same task ({_short(obs)}) but need "
                            f"different answers: {_short(borrowed)} earns {borrowed_r:g} on "
                            f"{_task_name(on)}, its own answer {_short(own)} {own_r:g}; the "
                            "task text must show what decides the answer"]
            pairs += 1
            if pairs >= ANSWER_PAIRS:
                break
    ctx.notes["answer_determined"] = (
        f"{len(seen)} distinct first tasks over the resets looked at ({nudged} with a "
        f"draw changed); {pairs} repeated with other right answers")
    return []


_WORD = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


FirstAnswer = tuple[list[str], str, str]
"""A reset's first task as words, the oracle's first answer (unboxed, lower case) and the
task text."""


def _first_answers(ctx: Ctx, check: str) -> list[FirstAnswer] | str:
    """The first task and answer of each of ``ANSWER_SEEDS`` resets, played once and
    shared by ``answer_given`` and ``answer_constant``; or the reason, under ``check``'s
    name, why they could not be read."""
    got = ctx.first_answers
    return got if isinstance(got, list) else got(check)


def _read_first_answers(ctx: Ctx) -> list[FirstAnswer] | Callable[[str], str]:
    """The first answers, or what names the failure under a check's name."""
    seen: list[FirstAnswer] = []
    with ctx.sandbox.open(ctx.source, ctx.class_name, {"max_turns": ctx.max_turns}) as ep:
        if not ep.load_result.ok:
            error = ep.load_result.error
            return lambda check: f"load: {error}"
        for seed in range(ANSWER_SEEDS):
            r = ep.reset(seed)
            o = ep.oracle() if r.ok else r
            if not o.ok:
                failed, what = Played(seed, error=o.error), \
                    f"{'reset' if not r.ok else 'oracle'} on seed {seed}"
                return lambda check: _fault(check, failed, what)
            text = str(r.value[0])
            seen.append((_words(text), answer_of(str(o.value)).lower(), text))
    return seen


def check_answer_given(ctx: Ctx) -> list[str]:
    """Where the first observation must decide the first answer (as for
    ``answer_determined``), the answer is not always copied from the same places of the
    question (``copied_from``). Over ``ANSWER_SEEDS`` resets, if one place in the
    question's words (the k-th, or the k-th from the end) starts the oracle's answer,
    word for word, on every seed, a player that copies the words from there wins every
    game without doing the task. ``floor_gap``'s quoted player finds such an answer only
    in quotes: learn-s12 accepted "Which of these words is X in the list?" (answer X)
    and "First word: X. Which one follows?"; learn-s19 accepted "First a, b, c words:
    ..." scored on the list a, b, c as shown, an answer of several words. A game whose
    answer moves (a word picked from a shuffled list) passes: over 64 seeds no place
    holds it every time."""
    _first_task_decides(ctx)
    seen = _first_answers(ctx, "answer_given")
    if isinstance(seen, str):
        return [seen]
    found = copied_from([(words, answer) for words, answer, _ in seen],
                        [text for _, _, text in seen])
    if found:
        told, copied = found
        _, answer, text = seen[0]
        return [f"answer_given: on all {ANSWER_SEEDS} seeds looked at, the answer is "
                f"{told} (seed 0: {_short(text)} -> {answer!r}); a player that copies "
                f"{copied} wins without doing the task"]
    ctx.notes["answer_given"] = "no place in the task text holds the answer on every seed"
    return []


CONSTANT_SHARE = 0.75
"""The most of ``ANSWER_SEEDS`` resets one answer may be right on. Above
``floor_gap``'s 0.5 so that a fair yes-or-no question, right on about half the seeds, is
not refused by the luck of 64 draws (more than 48 of 64 at odds under one in ten
thousand)."""


def check_answer_constant(ctx: Ctx) -> list[str]:
    """In a game of one answer, no one answer is right on more than ``CONSTANT_SHARE``
    of ``ANSWER_SEEDS`` resets: a player that always writes it wins without reading the
    task. ``floor_gap``'s players borrow the answer of another of the three validation
    seeds, so an answer that is the same on nearly every draw passes there whenever one
    of the three draws the rare other: learn-s44 accepted "How many letters is 'x' right
    next to 'y'? Count from 1." scored on 1 on 63 of 64 seeds, 0 on seed 2. A game of
    several answers is left to ``floor_gap``, whose players play them all."""
    _first_task_decides(ctx)
    if ctx.max_turns != 1:
        raise Skipped("a constant first answer wins one turn of several")
    seen = _first_answers(ctx, "answer_constant")
    if isinstance(seen, str):
        return [seen]
    answer, n = collections.Counter(a for _, a, _ in seen).most_common(1)[0]
    share = n / len(seen)
    if share > CONSTANT_SHARE + EPS:
        return [f"answer_constant: the answer is {answer!r} on {n} of {len(seen)} seeds "
                f"looked at (seed 0: {_short(seen[0][2])}); a player that always writes it "
                f"wins without doing the task"]
    ctx.notes["answer_constant"] = f"the commonest answer, {answer!r}, on {n} of {len(seen)} seeds"
    return []


def _place(k: int) -> str:
    return f"word {k + 1}" if k >= 0 else f"word {-k} from the end"


def _fixed(found: Iterable[set]) -> set:
    """What every seed's set of places has in common (empty if any seed has none)."""
    common = None
    for places in found:
        common = set(places) if common is None else common & places
        if not common:
            return set()
    return common or set()


def _both_ends(i: int, n: int) -> set[int]:
    """A place counted from the start and from the end of ``n`` words."""
    return {i, i - n}


def copied_from(seen: list[tuple[list[str], str]],
                texts: list[str] | None = None) -> tuple[str, str] | None:
    """How each seed's answer is copied from the same places of its task text's words,
    as (what the answer is, what a player copies), or None. Three forms, each over every
    seed, each place counted from the start or from the end:

    - the answer's words in a row, from one place on (learn-s12, learn-s19);
    - the answer's words, each from its own place, in the order shown (learn-s42: "Find
      the letter of the 'x' that is a letter of 'y'" scored on "x y"), or in another
      order that no task text (``texts``) asks for (learn-s43: "Which letter of the word
      X at position 3 has 'l'?" scored on "l 3"), also where a word drawn empty is
      missing from both answer and text on some seeds (``_word_places``); a list sorted
      moves with the draw, and one reversed where a text asks for an order is a task,
      and both pass;
    - ``ECHO_RUN`` or more of the task text's words in a row, from one place on, held
      anywhere in the answer: the question's own sentence written back (min-p's probe,
      2026-12-07: "Write the word 'a, b, c' with exactly one vowel ..." scored on "The
      a, b, c." and then the question). A long option picked from several shown (a
      choice) moves with the draw and passes.

    Shown words written together ("Join these words with hyphens") are a task of
    writing, not a copy, and pass."""
    spans = [_words(answer) for _, answer in seen]
    if not spans or not all(spans):
        return None  # an answer of punctuation only copies nothing
    width = max(map(len, spans))
    starts = _fixed(
        {p for i in range(len(words) - len(span) + 1) if words[i:i + len(span)] == span
         for p in _both_ends(i, len(words))}
        for (words, _), span in zip(seen, spans))
    if starts:
        where = _place(min(starts, key=abs))
        return ((f"the words from {where} of the task text on, as shown", "them")
                if width > 1 else (f"{where} of the task text", "that word"))
    placed = _word_places([words for words, _ in seen], spans) if width > 1 else None
    if placed:
        each, n = placed
        places = ", ".join(_place(min(p, key=abs)) for p in each)
        if _in_order(each, n):
            return f"the task text's {places}, in the order shown", "those words"
        if texts and not REORDER_ASK.search(_template(texts)):
            return (f"the task text's {places}, in an order no question asks for",
                    "those words")
    echoed = _fixed(_echoes(words, span) for (words, _), span in zip(seen, spans))
    if echoed:
        where = _place(min(echoed, key=abs))
        return (f"the task text itself, {ECHO_RUN} or more of its words in a row from "
                f"{where}", "the question back")
    return None


def _word_places(texts: list[list[str]],
                 spans: list[list[str]]) -> tuple[list[set[int]], int] | None:
    """The fixed places (from either end) of each word of the longest answers, and the
    length of a text they were found in, if every seed's answer is copied word by word
    from them, else None. The places are found on
    the seeds whose answer has all its words, which must be at least half. A shorter
    answer counts as copied where its text is shorter by as many words (the word it
    lacks was drawn empty and is missing from both: learn-s43's "Write the letter '' at
    the given place 'y'" scored on "y") and its words stand at those places in their
    order. A shorter answer under a text as long picks some of the words shown (a
    filter: "the words with an 'a'"), which is a task, and passes."""
    width = max(map(len, spans))
    full = [(words, span) for words, span in zip(texts, spans) if len(span) == width]
    if 2 * len(full) < len(spans):
        return None
    each = [_fixed({p for i, w in enumerate(words) if w == span[t]
                    for p in _both_ends(i, len(words))} for words, span in full)
            for t in range(width)]
    if not all(each):
        return None
    rest = len(full[0][0]) - width
    for words, span in zip(texts, spans):
        if len(span) < width and (len(words) - len(span) != rest
                                  or not _picked(words, span, each)):
            return None
    return each, len(full[0][0])


def _picked(words: list[str], span: list[str], each: list[set[int]]) -> bool:
    """Whether ``span``'s words stand in ``words`` at places of ``each``, one set each,
    the sets taken in their order (some skipped)."""
    sets = iter(each)
    return all(any(any(-len(words) <= p < len(words) and words[p] == w for p in places)
                   for places in sets) for w in span)


REORDER_ASK = re.compile(r"revers|backward|order|sort|swap|switch|rotat|shift|alphabet"
                         r"|right to left|opposite|flip|mirror|invert|before|after|last\b.*\bfirst")
"""Words with which a task text may ask for shown words in another order than shown."""

ECHO_RUN = 8
"""Words of the task text in a row that ``copied_from``'s third form finds in an answer:
a sentence, where a copied list is the first form's (from a fixed place)."""


def _template(texts: list[str]) -> str:
    """The words every text has, in the first one's order: the instructions, without
    the drawn words (a shown "mirror" does not ask for a reversal)."""
    common = set.intersection(*(set(_words(t)) for t in texts))
    return " ".join(w for w in _words(texts[0]) if w in common)


def _echoes(words: list[str], span: list[str]) -> set[int]:
    """The places (from either end) of ``words`` where ``ECHO_RUN`` words in a row
    begin that ``span`` holds in a row too."""
    held = {tuple(span[i:i + ECHO_RUN]) for i in range(len(span) - ECHO_RUN + 1)}
    return {p for i in range(len(words) - ECHO_RUN + 1)
            if tuple(words[i:i + ECHO_RUN]) in held for p in _both_ends(i, len(words))}


def _in_order(each: list[set[int]], n: int) -> bool:
    """Whether some choice of one place from each set, on a text of ``n`` words, runs
    from start to end (a copy in the order shown)."""
    last = -1
    for places in each:
        ahead = sorted(p % n for p in places if p % n > last)
        if not ahead:
            return False
        last = ahead[0]
    return True


def chain_verdict(draws: list[tuple[str, str]]) -> tuple[bool, str | None]:
    """Whether every draw's question is one ``spade_env.chain`` worded, and the first draw
    whose answer is not what its steps compute (``word_steps.chain_answer``, on the host),
    as a reason; (False, None) where some question is not a chain's."""
    chained = True
    for question, answer in draws:
        read = word_steps.read_chain(question)
        if read is None:
            chained = False
            continue
        right = word_steps.answer_of_read(*read)
        if right is None or answer_of(answer).strip().lower() != right:
            word, steps = read
            return chained, (f"the question asks for {', then '.join(steps)} of {word!r}, "
                             f"which gives {right!r}, but the answer is "
                             f"{answer_of(answer)!r}")
    return chained, None


def _exact_for_chains(check: Callable[[Ctx], list[str]]) -> Callable[[Ctx], list[str]]:
    """A check of whether a quiz's answer is what its question asks (the lexicon of
    ``asked``), decided exactly where every probe question is a chain of word steps
    (``spade_env.chain``): its answer is computed from the question's text on the host,
    so the guess the lexicon makes is not needed. A chain question answered otherwise
    is refused by ``answer_asked``; quizzes of other questions are judged as before."""
    name = check.__name__.removeprefix("check_")

    @functools.wraps(check)
    def wrapper(ctx: Ctx) -> list[str]:
        if not _is_quiz(ctx) or not ctx.meta.has_oracle or not ctx.draws:
            return check(ctx)
        chained, wrong = chain_verdict(_quiz_answers(ctx))
        if wrong and name == "answer_asked":
            return [f"answer_asked: {wrong}; a player doing what the question says never wins"]
        if chained and not wrong:
            ctx.notes[name] = "every question is a chain of word steps, answered as they compute"
            return []
        return check(ctx)

    return wrapper


@_exact_for_chains
def check_answer_asked(ctx: Ctx) -> list[str]:
    """A word quiz scores what its question asks for. Over ``probe_draws``, where the
    oracle's answer is one of the word operations of ``asked.OPERATIONS`` on every draw
    (the words in reverse order, the longest word, each word's vowels counted, ...), the
    question may not ask only for others: "Write these words in alphabetical order"
    scored on their first letters, "Count the vowels of each word" scored on their
    lengths. Every other check accepts such a quiz (it runs, its text decides its answer,
    it gives nothing away), and no player wins it by doing what it says; read by hand,
    most of what learn-s22 to learn-s27 accepted was of this kind. A tie rule is read
    apart from the question it breaks ties for. An answer no operation computes, or a
    question that names none, is not judged (``asked``)."""
    read = _quiz_reading(ctx)
    scored = asked.computed(read)
    problem = asked.unasked(read, scored)
    if problem:
        return [f"answer_asked: {problem}; a player doing what the question says never wins"]
    ctx.notes["answer_asked"] = (f"the answer is {scored[0].name}, which the question asks for"
                                 if scored else "no operation of the lexicon computes the answer")
    return []


def _lettered(text: str) -> set[str]:
    """The words of ``text`` with at least two characters, one of them a letter."""
    return {w for w in _words(text) if len(w) > 1 and any(c.isalpha() for c in w)}


UNSHOWN_RUN = 10
"""Letters in a row (spaces and punctuation dropped) that ``answer_unshown`` looks for in
every answer and in no question: longer than any probe word (8), so a run common to all
draws was written by the program."""


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalpha())


@_exact_for_chains
def check_answer_unshown(ctx: Ctx) -> list[str]:
    """A quiz's answer carries no words that it has on every draw and that no question
    shows. Over ``probe_draws``, a word present in every oracle answer and absent from
    every question was written into the answer by the program itself, not drawn for the
    task: "3 for each word. Keep the counts of consonants only." asked as "How many
    vowels are in X?", or a word followed by " and keep the second letter at the end".
    No player can know such words, so no player wins by doing the task, and every other
    check accepts the quiz: learn-s40's designer came to append such sentences to
    answers (6 of its 18 accepted designs of generations 4-7). The same holds for
    ``UNSHOWN_RUN`` letters in a row once spaces and punctuation are dropped, so a
    sentence glued to the answer with its spaces removed, or a run of the alphabet, is
    found too (two more of the 18). Words that differ between draws (a word reversed,
    a letter, a count) are the task's and are never judged."""
    draws = _quiz_draws(ctx)
    unshown: set[str] | None = None
    first = _letters(answer_of(draws[0][1]))
    runs = {first[i:i + UNSHOWN_RUN] for i in range(len(first) - UNSHOWN_RUN + 1)}
    for question, answer in draws:
        answer = answer_of(answer)
        mine = _lettered(answer) - _lettered(question)
        unshown = mine if unshown is None else unshown & mine
        said, asked_text = _letters(answer), _letters(question)
        runs = {r for r in runs if r in said and r not in asked_text}
        if not unshown and not runs:
            break
    if unshown or runs:
        question, answer = draws[0]
        words = ", ".join(repr(w) for w in sorted(unshown)[:4]) if unshown else (
            f"the letters {min(runs)!r} in a row")
        return [f"answer_unshown: on all {len(draws)} draws looked at the answer has "
                f"{words}, which no question shows (draw 0: {_short(question)} -> "
                f"{_short(answer_of(answer))}); no player can know what to write"]
    ctx.notes["answer_unshown"] = "every word the answer always has, the question shows"
    return []


@_exact_for_chains
def check_answer_fits(ctx: Ctx) -> list[str]:
    """A word quiz's answer is of the kind its question asks for. Over ``probe_draws``,
    a question that asks how many is answered by a number, one that asks which letter by
    a letter, one that asks for alphabetical order by something in order or picked by it
    (``asked.misfit``). ``answer_asked`` judges only answers an operation of its lexicon
    computes; learn-s40's designer came to score "How many letters does X have?" on a
    letter and "Spell X with its letters in alphabetical order" on X in capitals,
    answers no operation computes, which every other check accepts and no player reaches
    by doing the task. A number in the answer is asked for by some word of the question
    (``asked.unasked_number``): learn-s44's designer scored "Write the letter 'x' into
    'X'." on the letter and a number no question mentions. A task that asks for nothing
    (``asked.asks_nothing``), "Digit of the word 'X' is 'y'." scored on X's length
    (learn-s44), no answer fits. Nor does one whose parts are joined by another mark than
    the question says (``asked.unsaid_separator``: learn-s45's "Spell out the letters of
    X separated by spaces." scored with commas), a letter no question asks for
    (``asked.unasked_letter``: "What is the snowdrop of 'X'?" scored on X's second
    letter, at the warm start's weights), or one answer to two questions asking for
    opposite ends of one order (``asked.asks_opposites``: learn-s45's "Which word comes
    first ...? Which word comes last ...?")."""
    reading = _quiz_reading(ctx)
    problem = (asked.asks_nothing(reading) or asked.misfit(reading)
               or asked.unasked_number(reading) or asked.unasked_letter(reading)
               or asked.asks_opposites(reading)
               or asked.unsaid_separator(_quiz_answers(ctx)))
    if problem:
        return [f"answer_fits: {problem}; a player doing what the question says never wins"]
    ctx.notes["answer_fits"] = "the answer is of the kind the question asks for"
    return []


@_exact_for_chains
def check_answer_repeated(ctx: Ctx) -> list[str]:
    """A quiz's answer is not one text written a number of times no question states
    (``asked.unstated_repeat``): "Write the letter 'r' at position r." scored on "rr". The
    player is told what to write but not how many times, so it wins only by guessing;
    every other check accepted such quizzes (learn-s41: 3 of its 10 accepted designs of
    generations 4-5)."""
    problem = asked.unstated_repeat(_quiz_answers(ctx))
    if problem:
        return [f"answer_repeated: {problem}; a player can only guess how many times"]
    ctx.notes["answer_repeated"] = "the answer is not a text repeated an unstated number of times"
    return []


@_exact_for_chains
def check_answer_counts(ctx: Ctx) -> list[str]:
    """A word quiz's answer to "how many" is a count of the words its question shows
    (``asked.uncounted``): their letters, vowels, different letters, a named letter's
    occurrences or place, how many words there are, and the like, or one of those
    changed by a number the question gives. ``answer_fits`` takes any number for a
    count; learn-s41's designer scored "How many places is letter 'x' in word X?" on the
    word's length less one and "Count all vowels: ..." on each word's different letters
    less one, which every other check accepted. A question asking where a letter
    stands in the alphabet is answered by the place of a letter it holds
    (``asked.unplaced``)."""
    problem = asked.uncounted(_quiz_reading(ctx)) or asked.unplaced(_quiz_answers(ctx))
    if problem:
        return [f"answer_counts: {problem}; a player counting what it asks never wins"]
    ctx.notes["answer_counts"] = "each how-many answer is a count of the words shown"
    return []


def check_chain_padded(ctx: Ctx) -> list[str]:
    """Every step of a chain of word steps changes its answer: a chain that answers on
    words of every shape (``word_steps.idle_step``) as it does without one of its steps
    is that shorter game retold ("remove the last letter, then take the first letter" is
    "take the first letter"). With sixteen steps, a designer could otherwise make a known
    game new as often as it likes by adding a step that changes nothing (learn-s49 wrote
    ``chain(word, drop_last, first_letter)``)."""
    chains = dict.fromkeys(read[1] for q, _ in _quiz_draws(ctx)
                           if (read := word_steps.read_chain(q)) is not None)
    if not chains:
        raise Skipped("no question is a chain of word steps")
    for names in chains:
        i = word_steps.idle_step(names)
        if i is not None:
            shorter = names[:i] + names[i + 1:]
            return [f"chain_padded: {', then '.join(names)} answers as "
                    f"{', then '.join(shorter)} does on words of every shape: the step "
                    f"{names[i]} changes nothing, and the game is the shorter chain's"]
    ctx.notes["chain_padded"] = "every step of each chain changes its answer"
    return []


def _quiz_draws(ctx: Ctx) -> list[tuple[str, str]]:
    """A word quiz's probe draws (``Ctx.draws``); Skipped for a program that is not a quiz
    with an oracle or has no word table to draw from (``probe_draws`` never gives an
    empty list: fewer than ``PROBE_SEEDS`` draws is None)."""
    if not _is_quiz(ctx) or not ctx.meta.has_oracle:
        raise Skipped("not a quiz with an oracle")
    if not ctx.draws:
        raise Skipped("no word table to draw probe words from")
    return ctx.draws


def _quiz_answers(ctx: Ctx) -> list[tuple[str, str]]:
    """A word quiz's probe draws as (question, the oracle's answer without its box)."""
    return [(q, answer_of(a)) for q, a in _quiz_draws(ctx)]


def _quiz_reading(ctx: Ctx) -> list[asked.Draw]:
    """``read_draws`` of a word quiz's probe draws; Skipped where there are none."""
    return read_draws(_quiz_draws(ctx))


def read_draw(text: str, shown: Iterable[str], answer: str) -> asked.Draw:
    """One draw as the lexicon of ``asked`` reads it: the question, the probe words it
    shows (in order, each once) and the oracle's answer as ``QuizEnv`` matches it (items
    split at commas, lower case)."""
    return (text, tuple(dict.fromkeys(shown)),
            tuple(a.strip().lower() for a in answer_of(answer).split(",")))


def read_draws(draws: list[tuple[str, str]] | None) -> list[asked.Draw] | None:
    """``probe_draws`` as the lexicon of ``asked`` reads them (``read_draw``)."""
    if draws is None:
        return None
    return [read_draw(text, _shown(text), answer) for text, answer in draws]


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def check_non_trivial(ctx: Ctx) -> list[str]:
    """Neither an empty nor an echoing player solves the task."""
    for name in ("empty", "echo"):
        for seed in ctx.cfg.seeds:
            p = ctx.episode(name, seed)
            if p.error:
                return [_fault("non_trivial", p, f"{name} policy on seed {seed}")]
            if p.solved:
                return [f"non_trivial: the {name} policy solves seed {seed}"]
            problems = _episode_problems("non_trivial", p, f"{name} policy on seed {seed}")
            if problems:
                return problems
    return []


FLOOR_MARGIN = 0.5
"""How far below the maximum (1.0) each uninformed player's mean return over the
validation seeds must stay. Measured on the 15 seed environments with
benchmarks/validation_cost.py (it prints each seed's figure): the best uninformed mean
is 0.083 (sequence_memory: another seed's first answer, repeated, earns 0.25 on one
seed) and 0 or below for the rest; the best single episode is 0.7 (tower_of_hanoi: a
borrowed oracle play blindly restacks one seed's four disks). Of the wrapped Reasoning
Gym programs (the fixed pool) the best is 0.333 (letter_counting: a repeated count is
right on one seed). A design that pays for any well-formed answer sits at 0.5 or more. The mean, not the worst episode, because a
small puzzle may fall to one lucky sequence."""
FLOOR_PLAYERS = ("empty", "echo", "quoted", "repeat_first", "other_oracle")


def check_floor_gap(ctx: Ctx) -> list[str]:
    """Uninformed players (empty text, echoing, the observation's first quoted text,
    another seed's first oracle action repeated, another seed's whole oracle play) stay
    FLOOR_MARGIN below the maximum on average over the validation seeds."""
    ceiling = SOLVED - FLOOR_MARGIN
    means: dict[str, list[float]] = {}
    for name in FLOOR_PLAYERS:
        if name in ("repeat_first", "other_oracle") and not ctx.meta.has_oracle:
            continue  # the borrowed actions come from the oracle
        for seed in ctx.cfg.seeds:
            p = ctx.episode(name, seed)
            if p.error:
                return [_fault("floor_gap", p, f"{name} player on seed {seed}")]
            means.setdefault(name, []).append(p.ret)
    if not means:
        raise Skipped("no uninformed player applies")
    name, rets = max(means.items(), key=lambda kv: sum(kv[1]) / len(kv[1]))
    mean = sum(rets) / len(rets)
    shown = ", ".join(f"{r:g}" for r in rets)
    ctx.notes["floor_gap"] = f"best uninformed mean return {mean:.3g} ({name}: {shown})"
    if mean > ceiling + EPS:
        return [f"floor_gap: the uninformed {name} player's mean return is {mean:.3g} "
                f"(seeds {ctx.cfg.seeds}: {shown}); uninformed play must stay at or below "
                f"{ceiling:g}"]
    return []


def check_reward_well_formed(ctx: Ctx) -> list[str]:
    """Every reward of every episode played so far is finite, and no episode's total is
    above 1.0 or below -1.0, whatever the player. The checks before it apply the same
    rule (``_reward_problem``) to the episodes they examine, under this name, so a
    design is stopped where the overflow first shows; this sweep covers the rest (the
    floor players, the replays). The one reward-range check of the validator; rollouts
    flag a live environment that pays past 1.0 as ``reward_overflow``."""
    for p in ctx.played:
        if p.error:
            continue  # a fault is its own check's reason
        problem = _reward_problem(p, f"{p.label or 'a player'} on seed {p.seed}")
        if problem:
            return [problem]
    ctx.notes["reward_well_formed"] = f"{len(ctx.played)} episodes, totals within [-1, 1]"
    return []


def check_resource_bounds(ctx: Ctx) -> list[str]:
    """Every call of every episode played ends within ``max_call_seconds`` and no worker's
    resident memory peaks above ``max_peak_memory_mb``; reports both."""
    calls = [(sec, what, p) for p in ctx.played for what, sec in p.call_seconds]
    if not calls:
        raise Skipped("no episode was played")
    sec, what, slow = max(calls, key=lambda c: c[0])
    peaks = [(p.peak_mb, p) for p in ctx.played if p.peak_mb is not None]
    peak, heavy = max(peaks, key=lambda x: x[0]) if peaks else (None, None)
    ctx.notes["resource_bounds"] = (
        f"{len(calls)} calls, slowest {sec:.3f} s ({what}, {slow.label or 'a player'}, seed "
        f"{slow.seed}); load {ctx.load_seconds:.3f} s; peak memory "
        + (f"{peak:.0f} MB" if peak is not None else "unknown"))
    if sec > ctx.cfg.max_call_seconds:
        return [f"resource_bounds: a {what} call took {sec:.2f} s ({slow.label or 'a player'}, "
                f"seed {slow.seed}); calls must end within {ctx.cfg.max_call_seconds:g} s"]
    if peak is not None and peak > ctx.cfg.max_peak_memory_mb:
        return [f"resource_bounds: the worker's memory peaked at {peak:.0f} MB "
                f"({heavy.label or 'a player'}, seed {heavy.seed}); the bound is "
                f"{ctx.cfg.max_peak_memory_mb} MB"]
    return []


def check_hint(ctx: Ctx) -> list[str]:
    """A defined hint() returns non-empty text after reset."""
    if not ctx.meta.has_hint:
        raise Skipped("no hint()")
    p = ctx.play(ctx.cfg.seeds[0], constant_policy(""), with_hint=True, label="hint")
    if p.error:
        return [_fault("hint", p, "hint()")]
    if not (p.hint or "").strip():
        return ["hint: hint() returned empty text"]
    return []


def check_hint_leak(ctx: Ctx) -> list[str]:
    """hint() passes the same leak rule as a model-written hint: on no validation seed
    does it contain the oracle's solving answer (a leaked answer makes the hinted arm
    win by being told, and regret maximal)."""
    if not (ctx.meta.has_hint and ctx.meta.has_oracle):
        return []
    for seed, p in reference_episodes(ctx).items():
        if not (p.solved and p.actions):
            continue
        h = play(ctx.sandbox, ctx.source, ctx.class_name, seed, empty_policy, 0,
                 with_hint=True)
        if h.error:
            return [_fault("hint", h, f"hint() on seed {seed}")]
        leaked = leaks(h.hint or "", [answer_of(p.actions[-1])])
        if leaked:
            return [f"hint_leak: hint() on seed {seed} contains the oracle's answer "
                    f"{leaked!r}; a hint gives strategy, never the answer"]
    return []


def check_gymnasium(ctx: Ctx) -> list[str]:
    """The wrapped program passes gymnasium's own environment checker."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    from gymnasium.spaces import Text

    from spade_tasks.gym_wrapper import CHARSET, EnvironmentFault, SandboxedEnv

    env = SandboxedEnv(ctx.source, ctx.class_name, sandbox=ctx.sandbox)
    # The checker steps with sampled actions; sampling the wrapper's full 1M-character
    # space took a third of this check. probe_actions already sends the long text.
    env.action_space = Text(max_length=ctx.cfg.probe_long_chars, charset=CHARSET)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env, skip_render_check=True)
    except (AssertionError, ValueError, TypeError, RuntimeError, EnvironmentFault) as e:
        return [f"gymnasium: {str(e).splitlines()[0][:300] if str(e) else type(e).__name__}"]
    finally:
        env.close()
    return []


# The order is the grading order (see the module docstring): what a design must get right
# first comes first. resource_bounds is last so that it sees every call.
# Load -> runtime probes -> feasibility -> determinism and replay -> seed control ->
# uninformed players -> rewards -> hint -> resources. ``duplicate`` comes after all of
# them, in the flow (``designer.duplicate_reason``), because it needs the pool.
DYNAMIC_CHECKS = [check_load, check_max_turns, check_probe_actions, check_gymnasium,
                  check_oracle_missing, check_oracle_feasible, check_determinism,
                  check_replayability, check_episode_isolation, check_seed_ignored,
                  check_words_ignored, check_answer_determined, check_answer_given,
                  check_answer_constant, check_answer_asked, check_answer_unshown, check_answer_fits,
                  check_answer_repeated, check_answer_counts, check_chain_padded,
                  check_non_trivial, check_floor_gap, check_reward_well_formed, check_hint,
                  check_hint_leak, check_resource_bounds]
GATES = frozenset({"parse", "env_class", "load", "max_turns"})
"""Checks whose failure leaves nothing for the later ones to run on."""


def check_name(check: Callable) -> str:
    return check.__name__.removeprefix("check_")


def check_names() -> list[str]:
    """Every check's name, in the order they run."""
    return [check_name(c) for c in STATIC_CHECKS + DYNAMIC_CHECKS]


def validate_source(source: str, sandbox: Sandbox, cfg: ValidationConfig | None = None,
                    path: str | None = None, allow_unverified: bool = False,
                    run_all: bool = False) -> Report:
    """Run the checks in order, stopping at the first that fails (``run_all``: run every
    check; those that need a failed gate are skipped).

    ``allow_unverified`` lets a program without oracle()/solution() through
    ``oracle_missing`` (a fixed pool imported from elsewhere, by config); designs never."""
    cfg = cfg or ValidationConfig()
    st = Static()
    ctx = Ctx(sandbox, source, "", cfg, allow_unverified=allow_unverified)
    results: list[CheckResult] = []
    reasons: list[str] = []
    blocked: str | None = None
    for check in STATIC_CHECKS + DYNAMIC_CHECKS:
        name = check_name(check)
        if blocked:
            results.append(CheckResult(name, "skip", f"needs {blocked}"))
            continue
        t0 = time.perf_counter()
        try:
            got = check(source, st) if check in STATIC_CHECKS else check(ctx)
            status = "fail" if got else "pass"
            detail = "; ".join(got) if got else ctx.notes.get(name, "")
        except Skipped as e:
            got, status, detail = [], "skip", str(e)
        results.append(CheckResult(name, status, detail, time.perf_counter() - t0))
        if got:
            reasons += got
            if name in GATES:
                blocked = name
            if not run_all:
                break
        if name == "env_class":
            ctx.class_name, ctx.bases = st.class_name, st.bases
    fingerprint = behaviour_fingerprint(reference_episodes(ctx)) if not reasons else None
    return Report(path, not reasons, reasons, sandbox.tier, st.class_name, ctx.meta, results,
                  fingerprint)


# -- verdicts cached across runs -----------------------------------------------------
# A verdict is a pure function of the program, this checker's and the sandbox's code,
# the configs and the packages a program may import. The seeds are the same programs in
# every run, so a new run reuses their verdicts instead of replaying them (~30 s here).

_PKG = Path(__file__).resolve().parent
_VERDICT_PACKAGES = ("gymnasium", "numpy", "reasoning-gym")


@functools.cache
def _code_fingerprint() -> str:
    h = hashlib.sha256(platform.python_version().encode())
    for f in sorted([_PKG / "validation.py", _PKG / "asked.py", _PKG / "gym_wrapper.py",
                     _PKG / "hints.py", _PKG / "answers.py", *(_PKG / "sandbox").rglob("*.py")]):
        h.update(f.read_bytes())
    for dist in _VERDICT_PACKAGES:
        try:
            h.update(f"{dist}=={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(dist.encode())
    return h.hexdigest()


def verdict_key(source: str, sandbox: Sandbox, cfg: ValidationConfig,
                allow_unverified: bool = False) -> str:
    """The cache key of ``source``'s verdict under this checker, sandbox and config."""
    h = hashlib.sha256(_code_fingerprint().encode())
    h.update(sandbox.cfg.model_dump_json().encode())
    h.update(cfg.model_dump_json().encode())
    h.update(b"unverified-ok" if allow_unverified else b"oracle-required")
    h.update(source.encode("utf-8"))
    return h.hexdigest()[:32]


def verdict_cache_dir() -> Path:
    return Path(os.environ.get("SPADE_CACHE_DIR") or Path.home() / ".cache" / "spade") / "verdicts"


def validate_source_cached(source: str, sandbox: Sandbox, cfg: ValidationConfig | None = None,
                           path: str | None = None, cache_dir: Path | None = None,
                           allow_unverified: bool = False) -> Report:
    """``validate_source``, reusing an acceptance recorded under the same ``verdict_key``
    (only acceptances are kept: a rejection is cheap to find again and may be flaky)."""
    cfg = cfg or ValidationConfig()
    folder = cache_dir or verdict_cache_dir()
    file = folder / f"{verdict_key(source, sandbox, cfg, allow_unverified)}.json"
    try:
        saved = json.loads(file.read_text())
        meta = ProgramMeta(**saved["meta"])
        return Report(path, True, [], sandbox.tier, meta.class_name, meta, saved["fingerprint"])
    except (OSError, ValueError, TypeError, KeyError):
        pass  # absent or unreadable: validate for real
    report = validate_source(source, sandbox, cfg, path, allow_unverified)
    if report.accepted and report.meta is not None:
        folder.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: a crash never leaves a half verdict.
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"meta": dataclasses.asdict(report.meta),
                       "fingerprint": report.fingerprint}, f)
        os.replace(tmp, file)
    return report


def validate_path(path: str | Path, sandbox: Sandbox, cfg: ValidationConfig | None = None,
                  run_all: bool = False, allow_unverified: bool = False) -> Report:
    p = Path(path)
    return validate_source(p.read_text(encoding="utf-8"), sandbox, cfg, str(path),
                           allow_unverified=allow_unverified, run_all=run_all)


def env_class_name(source: str) -> str | None:
    """The environment class a program defines, or None when the static checks fail."""
    st = Static()
    for check in STATIC_CHECKS:
        if check(source, st):
            return None
    return st.class_name


__all__ = ["Report", "Played", "CheckResult", "play", "validate_source", "validate_path",
           "env_class_name", "check_names", "oracle_policy", "empty_policy", "echo_policy",
           "SandboxConfig", "capped_return", "behaviour_fingerprint"]

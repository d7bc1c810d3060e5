"""The environment checker: small named checks over one program, run in the sandbox.

Each ``check_*`` returns a list of reasons (``"<check name>: <detail>"``); an empty list
means the check passed. The same reason strings go to the designer's feedback, DuckDB
and the tests. Static checks read the source; dynamic ones play episodes through
``spade_tasks.sandbox`` and never execute the program in this process.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spade_tasks.config import SandboxConfig, ValidationConfig
from spade_tasks.sandbox import Episode, ProgramMeta, Sandbox

ALLOWED_IMPORTS = frozenset({
    "math", "random", "re", "json", "itertools", "collections", "string", "fractions",
    "dataclasses", "heapq", "functools", "typing", "abc", "enum", "copy", "operator",
    "statistics", "decimal", "bisect", "textwrap", "numpy", "gymnasium", "spade_env",
    "reasoning_gym",  # the fixed-environment baseline's wrapped generators
})
TOOL_BASES = frozenset({"ToolEnv", "ToolUseBaseEnv"})
SOLVED = 1.0
RETURN_FLOOR = -1.0
RETURN_CAP = SOLVED
EPS = 1e-6


def capped_return(total: float) -> float:
    """An episode's return wherever episodes are played (validator, rollout, ``spade
    play``): its reward total capped to [-1, 1]. The cap keeps an action the validator
    never tried from paying past "solved" and inflating regret; the floor bounds what
    penalties can cost."""
    return min(RETURN_CAP, max(RETURN_FLOOR, total))


@dataclass
class Static:
    """What the static checks learned: the environment class, if exactly one."""

    tree: ast.Module | None = None
    class_name: str | None = None


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
        return self.total >= SOLVED - EPS


@dataclass
class Report:
    """The verdict on one program."""

    path: str | None
    accepted: bool
    reasons: list[str]
    tier: str
    class_name: str | None = None
    meta: ProgramMeta | None = None
    fingerprint: str | None = None
    """Hash of the oracle's transcripts on the validation seeds (behaviour, not text):
    two programs with the same fingerprint play the same episodes (``duplicate``)."""

    def to_json(self) -> dict:
        return {"path": self.path, "accepted": self.accepted, "reasons": self.reasons,
                "tier": self.tier, "class_name": self.class_name}


# Policies: given the episode and the last observation, return the next action text,
# or None when the policy cannot act (its failure is recorded by the caller).
Policy = Callable[[Episode, str], "str | None"]


def empty_policy(ep: Episode, obs: str) -> str:
    return ""


def echo_policy(ep: Episode, obs: str) -> str:
    return obs


def constant_policy(text: str) -> Policy:
    return lambda ep, obs: text


def oracle_policy(ep: Episode, obs: str) -> str | None:
    r = ep.oracle()
    return r.value if r.ok else None


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
    p = Played(seed)
    with sandbox.open(source, class_name, {"max_turns": max_turns}) as ep:
        if not ep.load_result.ok:
            p.error = ep.load_result.error
            return p
        r = ep.reset(seed)
        if not r.ok:
            p.error = r.error
            return p
        obs = r.value[0]
        if with_hint and ep.meta.has_hint:
            h = ep.hint()
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
        st.tree = ast.parse(source)
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
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    tool_env = bool(_base_names(cls) & TOOL_BASES)
    missing = [m for m in ("reset", "step") if m not in methods and not (m == "step" and tool_env)]
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
    meta: ProgramMeta | None = None
    allow_unverified: bool = False
    """A program from a fixed pool that opted out of ``oracle_missing``."""
    reference: dict[int, Played] | None = None
    """The reference player's episode per validation seed (see ``reference_episodes``)."""

    @property
    def max_turns(self) -> int:
        return self.meta.max_turns

    def play(self, seed, policy, with_hint=False) -> Played:
        return play(self.sandbox, self.source, self.class_name, seed, policy,
                    self.max_turns, with_hint)


def reference_episodes(ctx: Ctx) -> dict[int, Played]:
    """The oracle's episode on each validation seed (an empty-text player's for a
    feasibility-unverified program), played once and shared by the checks after
    feasibility and by the behaviour fingerprint."""
    if ctx.reference is None:
        policy = oracle_policy if ctx.meta.has_oracle else empty_policy
        ctx.reference = {s: ctx.play(s, policy) for s in ctx.cfg.seeds}
    return ctx.reference


def _transcript(p: Played) -> list:
    # Rewards rounded so float noise in a program's arithmetic is not a difference.
    return [p.observations, p.actions, [round(r, 9) for r in p.rewards], p.terminated,
            p.truncated]


def behaviour_fingerprint(episodes: dict[int, Played]) -> str:
    """Hash of the reference player's transcripts (observations, actions, rewards) on
    the validation seeds: equal for programs that play the same episodes."""
    body = json.dumps([[s, _transcript(p)] for s, p in sorted(episodes.items())],
                      ensure_ascii=True)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def _fault(check: str, p: Played, what: str) -> str:
    kind = p.error.split(":", 1)[0]
    name = {"timeout": "limits", "memory": "limits", "crash": "limits",
            "protocol": "limits"}.get(kind, check)
    if kind == "bad_return":
        name = "step_return" if "step" in p.error or "terminated" in p.error else "reset_return"
    return f"{name}: {what}: {p.error}"


def check_load(ctx: Ctx) -> list[str]:
    with ctx.sandbox.open(ctx.source, ctx.class_name, {"max_turns": 10}) as ep:
        if not ep.load_result.ok:
            return [f"load: {ep.load_result.error}"]
        ctx.meta = ep.meta
    return []


def check_max_turns(ctx: Ctx) -> list[str]:
    mt = ctx.meta.max_turns
    if mt is None or not 1 <= mt <= ctx.cfg.max_turns_cap:
        return [f"max_turns: must be an int in 1..{ctx.cfg.max_turns_cap}, "
                f"got {mt!r}"]
    return []


def _episode_problems(check: str, p: Played, what: str) -> list[str]:
    if p.error:
        return [_fault(check, p, what)]
    if p.total > RETURN_CAP + EPS:
        return [f"reward_overflow: {what}: episode total {p.total:g} exceeds 1.0 (an episode "
                "pays at most 1.0, which means solved)"]
    return []


def check_probe_actions(ctx: Ctx) -> list[str]:
    """Every probe action, repeated each turn, gets well-typed finite replies."""
    seed = ctx.cfg.seeds[0]
    probes = dict(PROBES, long="x" * ctx.cfg.probe_long_chars)
    for name, text in probes.items():
        problems = _episode_problems("step_return", ctx.play(seed, constant_policy(text)),
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
        return []
    for seed, p in reference_episodes(ctx).items():
        problems = _episode_problems("oracle_feasible", p, f"oracle on seed {seed}")
        if problems:
            return problems
        if not p.solved:
            return [f"oracle_feasible: oracle reached total {p.total:g} (needs 1.0) on seed "
                    f"{seed} in {p.turns} turns (max_turns {ctx.max_turns})"]
    return []


def check_determinism(ctx: Ctx) -> list[str]:
    """The same seed and actions give the same observations and rewards."""
    seed = ctx.cfg.seeds[-1]
    policy = oracle_policy if ctx.meta.has_oracle else constant_policy("1")
    first = ctx.play(seed, policy)
    if first.error:
        return []  # reported by the check that owns that policy
    replay = iter(first.actions)
    second = ctx.play(seed, lambda ep, obs: next(replay, ""))
    if second.error:
        return [_fault("determinism", second, f"replay of seed {seed}")]
    if first.observations != second.observations or not all(
            math.isclose(a, b, abs_tol=1e-9) for a, b in zip(first.rewards, second.rewards)):
        turn = next((i for i, (a, b) in enumerate(zip(first.observations, second.observations))
                     if a != b), None)
        where = f"observation {turn}" if turn is not None else "rewards"
        return [f"determinism: seed {seed} replayed with the same actions differs at {where}"]
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


def check_non_trivial(ctx: Ctx) -> list[str]:
    """Neither an empty nor an echoing player solves the task."""
    for name, policy in (("empty", empty_policy), ("echo", echo_policy)):
        for seed in ctx.cfg.seeds:
            p = ctx.play(seed, policy)
            if p.error:
                return [_fault("non_trivial", p, f"{name} policy on seed {seed}")]
            if p.solved:
                return [f"non_trivial: the {name} policy solves seed {seed}"]
            problems = _episode_problems("non_trivial", p, f"{name} policy on seed {seed}")
            if problems:
                return problems
    return []


def check_hint(ctx: Ctx) -> list[str]:
    """A defined hint() returns non-empty text after reset."""
    if not ctx.meta.has_hint:
        return []
    p = ctx.play(ctx.cfg.seeds[0], constant_policy(""), with_hint=True)
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
    from spade_tasks.hints import answer_of, leaks  # hints imports this module

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

    from spade_tasks.gym_wrapper import EnvironmentFault, SandboxedEnv

    env = SandboxedEnv(ctx.source, ctx.class_name, sandbox=ctx.sandbox)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env, skip_render_check=True)
    except (AssertionError, ValueError, TypeError, RuntimeError, EnvironmentFault) as e:
        return [f"gymnasium: {str(e).splitlines()[0][:300] if str(e) else type(e).__name__}"]
    finally:
        env.close()
    return []


# Ordered: load -> runtime probes -> feasibility -> determinism -> seed control ->
# non-trivial -> hint. The order is meaningful (a rejected design's credit can grow with
# how far it got), and ``duplicate`` comes after all of them, in the flow
# (``designer.duplicate_reason``), because it needs the pool.
DYNAMIC_CHECKS = [check_load, check_max_turns, check_probe_actions, check_gymnasium,
                  check_oracle_missing, check_oracle_feasible, check_determinism,
                  check_seed_ignored, check_non_trivial, check_hint, check_hint_leak]


def validate_source(source: str, sandbox: Sandbox, cfg: ValidationConfig | None = None,
                    path: str | None = None, allow_unverified: bool = False) -> Report:
    """Run every check in order, stopping at the first that fails.

    ``allow_unverified`` lets a program without oracle()/solution() through
    ``oracle_missing`` (a fixed pool imported from elsewhere, by config); designs never."""
    cfg = cfg or ValidationConfig()
    st = Static()
    for check in STATIC_CHECKS:
        reasons = check(source, st)
        if reasons:
            return Report(path, False, reasons, sandbox.tier, st.class_name)
    ctx = Ctx(sandbox, source, st.class_name, cfg, allow_unverified=allow_unverified)
    for check in DYNAMIC_CHECKS:
        reasons = check(ctx)
        if reasons:
            return Report(path, False, reasons, sandbox.tier, st.class_name, ctx.meta)
    return Report(path, True, [], sandbox.tier, st.class_name, ctx.meta,
                  behaviour_fingerprint(reference_episodes(ctx)))


# -- verdicts cached across runs -----------------------------------------------------
# A verdict is a pure function of the program, this checker's and the sandbox's code,
# the configs and the packages a program may import. The seeds are the same programs in
# every run, so a new run reuses their verdicts instead of replaying them (~30 s here).

_PKG = Path(__file__).resolve().parent
_VERDICT_PACKAGES = ("gymnasium", "numpy", "reasoning-gym")


@functools.cache
def _code_fingerprint() -> str:
    h = hashlib.sha256(platform.python_version().encode())
    for f in sorted([_PKG / "validation.py", _PKG / "gym_wrapper.py", _PKG / "hints.py",
                     *(_PKG / "sandbox").rglob("*.py")]):
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


def validate_path(path: str | Path, sandbox: Sandbox,
                  cfg: ValidationConfig | None = None) -> Report:
    p = Path(path)
    return validate_source(p.read_text(encoding="utf-8"), sandbox, cfg, str(path))


def env_class_name(source: str) -> str | None:
    """The environment class a program defines, or None when the static checks fail."""
    st = Static()
    for check in STATIC_CHECKS:
        if check(source, st):
            return None
    return st.class_name


__all__ = ["Report", "Played", "play", "validate_source", "validate_path", "env_class_name",
           "oracle_policy", "empty_policy", "echo_policy", "SandboxConfig", "capped_return",
           "behaviour_fingerprint"]

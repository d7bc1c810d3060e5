"""Regret, designer rewards and group-relative advantages: plain functions, no model.

A designer's environment is played G times without a hint and G times with one (same
seeds). Regret is how much the hint helps; the designer reward turns an environment's
episode statistics into one number, chosen by name from a registry (the reference
code's ablations); advantages are GRPO-style within a group.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spade_tasks import pysyntax, registry
from spade_tasks.errors import ConfigError, RewardError
from spade_tasks.records import Played, Scores
from spade_tasks.store import queries
from spade_tasks.validation import is_solved

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime


# The reference code's plateau: full reward for a no-hint win rate in [0.4, 0.6],
# falling linearly to 0 over 0.25 on either side.
PLATEAU_LO, PLATEAU_HI, PLATEAU_RAMP = 0.4, 0.6, 0.25
# blend = 0.6 * plateau + 0.4 * clip(regret / 0.15, 0, 1)
BLEND_PLATEAU_WEIGHT, BLEND_REGRET_WEIGHT, BLEND_REGRET_SCALE = 0.6, 0.4, 0.15
# Weight of the newest win rate in the slow moving-average baseline of
# `learning_potential` (the reference's gamma2 = 0.85, its "slow" tracker).
BASELINE_WEIGHT_NEW = 0.85


def _mean(values: Sequence[float], what: str) -> float:
    if len(values) == 0:
        raise RewardError(f"{what}: no episodes (mean of an empty list)")
    return math.fsum(values) / len(values)


def is_win(episode_return: float) -> bool:
    """A won episode: a solved one (``validation.is_solved``, the one rule)."""
    return is_solved(episode_return)


def win_rate(returns: Sequence[float]) -> float:
    """Fraction of episodes won."""
    return _mean([1.0 if is_win(r) else 0.0 for r in returns], "win_rate")


def regret(returns_with_hint: Sequence[float], returns_without_hint: Sequence[float]) -> float:
    """mean(with hint) - mean(without hint): how much the hint helps (the paper's signal)."""
    return _mean(returns_with_hint, "returns_with_hint") - _mean(
        returns_without_hint, "returns_without_hint"
    )


@dataclass(frozen=True)
class DesignStats:
    """What a designer reward may look at for one environment."""

    win_rate_with_hint: float
    win_rate_without_hint: float
    mean_return_with_hint: float
    mean_return_without_hint: float
    regret: float
    n_episodes: int
    """Episodes per condition (G)."""
    baseline_win_rate: float | None = None
    """Slow moving average of the agent's no-hint win rate (see `update_baseline`);
    only `learning_potential` needs it."""


def design_stats(
    returns_with_hint: Sequence[float],
    returns_without_hint: Sequence[float],
    baseline_win_rate: float | None = None,
) -> DesignStats:
    """Summarise one environment's hinted and unhinted episodes."""
    if len(returns_with_hint) != len(returns_without_hint):
        # Same seeds with and without hint: unequal counts mean a bookkeeping bug.
        raise RewardError(
            f"design_stats: {len(returns_with_hint)} hinted vs "
            f"{len(returns_without_hint)} unhinted episodes; play the same seeds in both"
        )
    return DesignStats(
        win_rate_with_hint=win_rate(returns_with_hint),
        win_rate_without_hint=win_rate(returns_without_hint),
        mean_return_with_hint=_mean(returns_with_hint, "returns_with_hint"),
        mean_return_without_hint=_mean(returns_without_hint, "returns_without_hint"),
        regret=regret(returns_with_hint, returns_without_hint),
        n_episodes=len(returns_without_hint),
        baseline_win_rate=baseline_win_rate,
    )


def update_baseline(previous: float | None, win_rate_now: float) -> float:
    """Slow moving average of the agent's win rate, for `learning_potential`.

    The first value starts the average (as the reference's tracker does).
    """
    if previous is None:
        return win_rate_now
    return (1.0 - BASELINE_WEIGHT_NEW) * previous + BASELINE_WEIGHT_NEW * win_rate_now


def plateau(win_rate_now: float) -> float:
    """1 on [0.4, 0.6]; linear down to 0 at 0.15 and at 0.85; 0 beyond."""
    if win_rate_now < PLATEAU_LO:
        return max(0.0, 1.0 - (PLATEAU_LO - win_rate_now) / PLATEAU_RAMP)
    if win_rate_now > PLATEAU_HI:
        return max(0.0, 1.0 - (win_rate_now - PLATEAU_HI) / PLATEAU_RAMP)
    return 1.0


# ---------------------------------------------------------------- designer rewards

DesignerReward = Callable[[DesignStats], float]
DESIGNER_REWARDS = registry.DESIGNER_REWARDS
"""Every designer reward by name (``name in DESIGNER_REWARDS``, ``DESIGNER_REWARDS[name]``)."""


def register_designer_reward(name: str) -> Callable[[DesignerReward], DesignerReward]:
    """Decorator: add a designer reward under ``name``; a taken name raises DuplicateName."""

    def decorate(fn: DesignerReward) -> DesignerReward:
        return DESIGNER_REWARDS.register(name, fn)

    return decorate


def get_designer_reward(name: str) -> DesignerReward:
    """The designer reward registered as ``name``; an unknown name is a ConfigError
    (UnknownDesignerReward)."""
    return DESIGNER_REWARDS.get(name)


@register_designer_reward("regret")
def regret_reward(stats: DesignStats) -> float:
    """The regret itself (the paper's default)."""
    return stats.regret


@register_designer_reward("blend")
def blend_reward(stats: DesignStats) -> float:
    """0.6 * plateau(no-hint win rate) + 0.4 * clip(regret / 0.15, 0, 1).

    The plateau picks how hard (about half solved); the floored regret picks which
    in-band environment the hint helps most. Both terms lie in [0, 1].
    """
    regret_term = min(1.0, max(0.0, stats.regret / BLEND_REGRET_SCALE))
    return BLEND_PLATEAU_WEIGHT * plateau(stats.win_rate_without_hint) + (
        BLEND_REGRET_WEIGHT * regret_term
    )


@register_designer_reward("solve_rate")
def solve_rate_reward(stats: DesignStats) -> float:
    """plateau(no-hint win rate) alone: the reference's blend with regret weight 0."""
    return plateau(stats.win_rate_without_hint)


@register_designer_reward("learning_potential")
def learning_potential_reward(stats: DesignStats) -> float:
    """|no-hint win rate - slow baseline of the agent's win rate|.

    Rewards environments where the agent does differently from how it has been doing
    lately (the reference's non-regret default). Needs ``stats.baseline_win_rate``.
    """
    if stats.baseline_win_rate is None:
        raise RewardError(
            "learning_potential needs DesignStats.baseline_win_rate; "
            "compute it with update_baseline() before scoring"
        )
    return abs(stats.win_rate_without_hint - stats.baseline_win_rate)


def designer_reward(stats: DesignStats | None, name: str, rejected_reward: float) -> float:
    """Reward of one design; ``stats=None`` means it was rejected (fixed negative reward)."""
    if rejected_reward >= 0:
        raise ConfigError(f"rejected_reward must be negative, got {rejected_reward}")
    fn = get_designer_reward(name)
    return rejected_reward if stats is None else float(fn(stats))


# ---------------------------------------------------------------- rejected designs
# A rejected design earns less than any accepted one, whatever the designer reward. The
# `graded` reward says how far it got, so that when every design of a generation is
# rejected (a small model's first generations) the group still has spread to learn from.

LOWEST_ACCEPTED: dict[str, float] = {
    "regret": -2.0,  # hint arm all -1, no-hint arm all +1 (returns are capped to [-1, 1])
    "blend": 0.0,
    "solve_rate": 0.0,
    "learning_potential": 0.0,
}
"""Lowest reward an accepted design can earn under each built-in designer reward; a
reward registered elsewhere is assumed to be bounded below like ``regret``."""
GRADED_GAP = 0.05
"""Distance between the best rejected reward and the lowest accepted one."""
GRADED_SPAN = 1.0
"""Distance between the worst and the best rejected reward."""

REJECTION_STAGES: tuple[str, ...] = (
    "no_code", "parse", "env_class", "imports", "load", "max_turns", "limits",
    "reset_return", "step_return", "probe_actions", "gymnasium", "oracle_missing",
    "oracle_feasible", "determinism", "replayability", "episode_isolation", "seed_ignored",
    "words_ignored", "answer_determined", "answer_given", "answer_constant", "answer_asked",
    "answer_unshown", "answer_fits", "answer_repeated", "answer_counts", "chain_padded",
    "non_trivial", "floor_gap", "reward_well_formed", "hint", "resource_bounds",
)
"""The validator's checks in the order a program meets them (``validation.check_names()``;
a probe episode's fault is named ``limits``, ``reset_return`` or ``step_return``, met
first by the probe actions). A rejection's progress is its check's position here."""
GAMING_CHECKS = frozenset({"duplicate", "hint_leak", "reward_overflow"})
"""Rejections that mean the design tried to earn without a new, honest environment: they
never earn credit for getting far (a copied seed gets through every other check; a
leaked hint or a reward past 1.0 buys regret). A leaked hint or an overflow earns the
floor; a duplicate earns what a program that parses earns (``DUPLICATE_PROGRESS``)."""
DUPLICATE_PROGRESS = (REJECTION_STAGES.index("parse") + 0.999) / len(REJECTION_STAGES)
"""A duplicate's progress: the top of the parse stage, as far as a design that parses and
shows the whole contract but fails every later check. Below that, a designer learns to
break its programs to escape a copy's floor (measured: docs/learning.md, "Notes on the
early runs"); above it, copying would earn more than trying and failing later."""
RETOLD_CHECKS = frozenset({"duplicate", "chain_padded"})
"""Rejections of a game already known, retold: a copy, or a chain of word steps with a
step that changes nothing (the shorter chain's game). They earn ``DUPLICATE_PROGRESS``."""
FREE_WIN_CHECKS = frozenset({"non_trivial", "answer_given", "answer_constant", "floor_gap"})
"""Rejections that mean a player wins without doing the task (an empty or echoed answer,
the answer copied from the question, one answer right on nearly every draw, another
uninformed player): the program runs and gets through most checks, but what it pays for
is not a task. Like a duplicate they earn ``DUPLICATE_PROGRESS``, not their place near
the end of the order, where they earned more than most honest failures and the designer
drifted towards them (learn-s21: ``answer_given`` 1, 4, 6, 7, 5 of 16 designs in
generations 0-4)."""
UNASKED_CHECKS = frozenset({"answer_asked", "answer_unshown", "answer_fits",
                            "answer_repeated", "answer_counts"})
"""Rejections of a game that scores something its question does not ask for: another
operation, words it never shows, another kind of answer, a text repeated a number of
times it never says, a number that counts nothing shown. No player wins it by doing the
task. Like a duplicate they earn ``DUPLICATE_PROGRESS``; at their place near the end of
the order they would pay a designer for rewording a working quiz's question into
another one's."""
FLAGGED_REASON = "reward_overflow: paid past 1.0 in the rollout"
"""The reason a design whose environment the rollout flagged is scored under."""
_FIRST_DYNAMIC = REJECTION_STAGES.index("load")

CONTRACT_PARTS: tuple[tuple[str, str], ...] = (
    ("env_class", r"^\s*class\s+(?:\w*Env|Environment)\b"),
    ("reset", r"^\s*def\s+reset\s*\("),
    ("step", r"^\s*def\s+step\s*\("),
    ("oracle", r"^\s*def\s+(?:oracle|solution)\s*\("),
    ("max_turns", r"^\s*max_turns\s*=\s*\d+"),
)
"""Parts of the environment contract, found by pattern in text that may not parse."""
QUIZ_PARTS: tuple[tuple[str, str], ...] = (
    ("env_class", r"^\s*class\s+\w+\s*\(\s*(?:spade_env\.)?QuizEnv\s*\)"),
    ("questions", r"^\s*def\s+questions\s*\("),
)
"""The same for a ``QuizEnv`` subclass, which inherits reset, step, oracle and max_turns."""


def check_name(reason: str) -> str:
    """The check a rejection reason names (``"parse: no python code block"`` is
    ``no_code``: a completion with nothing to parse)."""
    if reason.startswith("parse: no python code block"):
        return "no_code"
    return reason.split(":", 1)[0].strip()


def names_duplicate(reasons: list[str] | None) -> bool:
    """Whether any of a design's reasons is the duplicate rule's."""
    return any(check_name(r) == "duplicate" for r in reasons or [])


def contract_fraction(text: str) -> float:
    """Fraction of ``CONTRACT_PARTS`` present in ``text`` (0..1), or of ``QUIZ_PARTS``
    where that is higher (a ``QuizEnv`` subclass owes only those)."""
    import re

    return max(sum(bool(re.search(pat, text, re.M)) for _, pat in parts) / len(parts)
               for parts in (CONTRACT_PARTS, QUIZ_PARTS))


def parsed_fraction(source: str) -> float:
    """Fraction of the program's lines before its first syntax error: the longest
    prefix of whole lines that parses, over all lines (1.0 for a program that parses)."""
    lines = source.splitlines()
    if not lines:
        return 0.0

    def parses(n: int) -> bool:
        try:
            pysyntax.parse("\n".join(lines[:n]))
        except (SyntaxError, ValueError):
            return False
        return True

    if parses(len(lines)):
        return 1.0
    # A prefix may end inside an open block or string and fail though the lines before
    # parse, so every line boundary is tried, longest first.
    best = next((n for n in range(len(lines) - 1, 0, -1) if parses(n)), 0)
    return best / len(lines)


def rejection_progress(reasons: Sequence[str], source: str | None, text: str = "") -> float:
    """How far a rejected design got, in [0, 1): its first reason's check position in
    ``REJECTION_STAGES``, refined inside the first stages (which part of the program
    parses, which parts of the contract appear) so that designs failing the same early
    check still differ. Gaming rejections (``GAMING_CHECKS``, ``FREE_WIN_CHECKS``) make
    no progress past parsing, nor do questions that do not ask for what they score
    (``UNASKED_CHECKS``); a check this list does not know counts as the first
    dynamic one."""
    name = check_name(reasons[0]) if reasons else "no_code"
    if name in RETOLD_CHECKS or name in FREE_WIN_CHECKS | UNASKED_CHECKS:
        return DUPLICATE_PROGRESS
    if name in GAMING_CHECKS:
        return 0.0
    stage = REJECTION_STAGES.index(name) if name in REJECTION_STAGES else _FIRST_DYNAMIC
    within = 0.0
    if name == "no_code":
        within = 0.5 * contract_fraction(text)
    elif name == "parse" and source is not None:
        within = 0.5 * parsed_fraction(source) + 0.5 * contract_fraction(source)
    elif name == "env_class" and source is not None:
        within = contract_fraction(source)
    # A fraction of exactly 1 would tie the next stage's start: keep it inside its stage.
    within = min(within, 0.999)
    return (stage + within) / len(REJECTION_STAGES)


RejectionReward = Callable[..., float]
REJECTION_REWARDS: dict[str, RejectionReward] = {}


def register_rejection_reward(name: str) -> Callable[[RejectionReward], RejectionReward]:
    """Decorator: add a rejected-design reward under ``name``; a taken name is an error.

    The function takes ``(reasons, source, text, *, reward_name, constant)`` and must
    stay below ``lowest_accepted(reward_name)``."""

    def decorate(fn: RejectionReward) -> RejectionReward:
        if name in REJECTION_REWARDS:
            raise RewardError(f"rejection reward {name!r} is already registered")
        REJECTION_REWARDS[name] = fn
        return fn

    return decorate


def lowest_accepted(reward_name: str) -> float:
    """The lowest reward an accepted design can earn under ``reward_name``."""
    return LOWEST_ACCEPTED.get(reward_name, LOWEST_ACCEPTED["regret"])


@register_rejection_reward("constant")
def constant_rejection(reasons: Sequence[str], source: str | None, text: str = "", *,
                       reward_name: str = "regret", constant: float = -1.0) -> float:
    """The same negative reward for every rejection (the reference code's)."""
    if constant >= 0:
        raise ConfigError(f"rejected_constant must be negative, got {constant}")
    return constant


def _graded_reward(progress: float, reward_name: str) -> float:
    """``progress`` in [0, 1) on a span of ``GRADED_SPAN`` that ends ``GRADED_GAP`` below
    the lowest accepted reward."""
    top = min(0.0, lowest_accepted(reward_name)) - GRADED_GAP
    return top - GRADED_SPAN * (1.0 - progress)


@register_rejection_reward("graded")
def graded_rejection(reasons: Sequence[str], source: str | None, text: str = "", *,
                     reward_name: str = "regret", constant: float = -1.0) -> float:
    """Partial credit for how far the design got (``rejection_progress``)."""
    return _graded_reward(rejection_progress(reasons, source, text), reward_name)


FIRST_MOVE_PROGRESS = REJECTION_STAGES.index("probe_actions") / len(REJECTION_STAGES)
"""Progress of a program that has loaded, reset and taken its first step: the first check
after the probe episode's faults (``load`` to ``step_return``)."""


@register_rejection_reward("graded_played")
def played_rejection(reasons: Sequence[str], source: str | None, text: str = "", *,
                     reward_name: str = "regret", constant: float = -1.0) -> float:
    """``graded``, except that the checks between parsing and a first move earn nothing:
    a program that parses but does not load, reset or take its first step earns what a
    duplicate earns (``DUPLICATE_PROGRESS``). Under ``graded`` a program raising on its
    first move earns more than a copy or a free win, and with few designs accepted the
    designer drifted towards raising; under this reward it drifted towards copies and
    free wins instead, and accepted no more (docs/learning.md: learn-s33, learn-s34)."""
    progress = rejection_progress(reasons, source, text)
    if progress < FIRST_MOVE_PROGRESS:
        progress = min(progress, DUPLICATE_PROGRESS)
    return _graded_reward(progress, reward_name)


def rejection_reward(kind: str, reasons: Sequence[str], source: str | None, text: str = "",
                     *, reward_name: str = "regret", constant: float = -1.0) -> float:
    """The reward of one rejected design under the rejection reward named ``kind``."""
    try:
        fn = REJECTION_REWARDS[kind]
    except KeyError:
        raise ConfigError(f"unknown rejection reward {kind!r} "
                          f"(known: {sorted(REJECTION_REWARDS)})") from None
    return float(fn(reasons, source, text, reward_name=reward_name, constant=constant))


# ---------------------------------------------------------------- advantages


def group_advantages(rewards: Sequence[float], eps: float = 1e-6,
                     scale: bool = True) -> list[float]:
    """GRPO: (r - mean) / (std + eps) within one group (population std); with
    ``scale=False``, r - mean (Dr. GRPO), so a group whose rewards barely differ moves
    the policy by that little, not by a unit spread.

    A group whose rewards are all equal gives zeros: it carries no preference.
    """
    if len(rewards) == 0:
        return []
    if min(rewards) == max(rewards):
        # Exactly zero: the mean's rounding error divided by eps would otherwise leave
        # ~1e-10 noise that still pushes the policy.
        return [0.0] * len(rewards)
    mean = math.fsum(rewards) / len(rewards)
    if not scale:
        return [r - mean for r in rewards]
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + eps) for r in rewards]


def clip_advantages(advantages: Sequence[float], bound: float | None) -> list[float]:
    """Each advantage clipped to [-bound, bound] (``None``: unchanged).

    A design accepted among rejected ones has an advantage of about 2.5 under centred
    graded rewards, ten times any rejected design's; clipping it bounds how far one
    accepted program pulls the designer towards writing that same program again."""
    if bound is None:
        return list(advantages)
    if bound <= 0:
        raise RewardError(f"advantage bound must be positive, got {bound}")
    return [min(bound, max(-bound, a)) for a in advantages]


def grouped_advantages(
    rewards: Sequence[float], keys: Sequence[Hashable], eps: float = 1e-6
) -> list[float]:
    """`group_advantages` within each set of equal ``keys``; results in input order."""
    if len(rewards) != len(keys):
        raise RewardError(f"{len(rewards)} rewards but {len(keys)} group keys")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        members[key].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        for i, a in zip(idx, group_advantages([rewards[i] for i in idx], eps)):
            out[i] = a
    return out


# ---------------------------------------------------------------- the flow's stage


def _rejected_design_reward(dcfg, reasons, completion: str | None) -> float:
    """A recorded rejected design's reward under the run's ``designer.rejected_reward``."""
    from spade_tasks.designer import extract_program

    text = completion or ""
    return rejection_reward(dcfg.rejected_reward, list(reasons or []), extract_program(text),
                            text, reward_name=dcfg.reward, constant=dcfg.rejected_constant)


def score_stage(rt: StageRuntime, generation: int, played: Played) -> Scores:
    """Regret of every environment ``played`` this generation, and each design's reward.

    The episodes' returns are read from the store (they are the rollout's rows); writes
    ``regrets`` rows and fills ``designs.reward`` (rejected designs get the configured
    negative reward) in one transaction each, so a rerun replaces them."""
    cfg, store, run = rt.cfg, rt.store, rt.run
    eps = queries.episode_returns(store, run, generation)
    if len(eps) != played.episodes:
        raise RewardError(f"generation {generation}: the store holds {len(eps)} episodes, "
                          f"the rollout recorded {played.episodes}")
    by_env: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {True: [], False: []})
    for e in eps:
        by_env[e["env_id"]][bool(e["with_hint"])].append(e["ret"])
    prev = queries.mean_win_rate_no_hint(store, run, generation - 1)
    last = rt.stage_result(generation - 1, "score_regret")
    baseline = None if last is None else Scores.load(last).baseline_win_rate
    if prev is not None:
        baseline = update_baseline(baseline, prev)
    # An environment that paid past 1.0 in this generation's rollout (flagged there) is
    # not measured: its design earns the rejected reward below, and the memory drops it.
    flagged = queries.flagged_env_ids(store)
    stats = {env: design_stats(arms[True], arms[False], baseline)
             for env, arms in by_env.items() if arms[True] and arms[False] and env not in flagged}
    if baseline is None and stats:
        baseline = update_baseline(None, sum(s.win_rate_without_hint for s in stats.values())
                                   / len(stats))
        stats = {env: design_stats(by_env[env][True], by_env[env][False], baseline)
                 for env in stats}
    name, rejected = cfg.designer.reward, cfg.designer.rejected_constant
    rows = [{"run": run, "generation": generation, "env_id": env, "episodes": s.n_episodes,
             "mean_return_hint": s.mean_return_with_hint,
             "mean_return_no_hint": s.mean_return_without_hint,
             "win_rate_hint": s.win_rate_with_hint, "win_rate_no_hint": s.win_rate_without_hint,
             "regret": s.regret, "designer_reward": designer_reward(s, name, rejected)}
            for env, s in sorted(stats.items())]
    store.replace_rows("regrets", {"run": run, "generation": generation}, rows)
    designs = queries.designs_of(store, run, generation)
    rewards, written = [], []
    for d in designs:
        if d["accepted"] and d["env_id"] in flagged:
            r = _rejected_design_reward(cfg.designer, [FLAGGED_REASON], d["completion"])
        elif d["accepted"] and d["env_id"] not in stats:
            # Accepted but not measured (no hint could be written for it this generation):
            # no reward at all (NULL), so it stays out of the designer's group
            # normalisation; a 0.0 next to rejected designs' negative rewards would be a
            # positive advantage for an environment nobody measured.
            r = None
        elif d["accepted"]:
            r = designer_reward(stats.get(d["env_id"]), name, rejected)
        else:
            r = _rejected_design_reward(cfg.designer, d["reasons"], d["completion"])
        if r is not None:
            rewards.append(r)
        written.append((d["design_idx"], r))
    queries.set_design_rewards(store, run, generation, written)
    n = len(stats)
    return Scores(
        regret_by_env={env: s.regret for env, s in sorted(stats.items())},
        environments_played=n,
        regret_mean=sum(s.regret for s in stats.values()) / n if n else 0.0,
        win_rate_no_hint=sum(s.win_rate_without_hint for s in stats.values()) / n if n else 0.0,
        win_rate_hint=sum(s.win_rate_with_hint for s in stats.values()) / n if n else 0.0,
        designer_reward_mean=sum(rewards) / len(rewards) if rewards else 0.0,
        baseline_win_rate=baseline,
    )

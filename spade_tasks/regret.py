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

from spade_tasks import registry
from spade_tasks.errors import ConfigError, RewardError

WIN_RETURN = 1.0
"""An episode is a win (solved) when its return is at least this."""

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
    """A solved episode: return >= 1.0."""
    return episode_return >= WIN_RETURN


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


# ---------------------------------------------------------------- advantages


def group_advantages(rewards: Sequence[float], eps: float = 1e-6) -> list[float]:
    """GRPO: (r - mean) / (std + eps) within one group (population std).

    A group whose rewards are all equal gives zeros: it carries no preference.
    """
    if len(rewards) == 0:
        return []
    if min(rewards) == max(rewards):
        # Exactly zero: the mean's rounding error divided by eps would otherwise leave
        # ~1e-10 noise that still pushes the policy.
        return [0.0] * len(rewards)
    mean = math.fsum(rewards) / len(rewards)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + eps) for r in rewards]


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


def score_stage(rt, generation: int) -> dict:
    """Regret of every environment played this generation, and each design's reward.

    Writes ``regrets`` rows and fills ``designs.reward`` (rejected designs get the
    configured negative reward) in one transaction each, so a rerun replaces them."""
    cfg, store, run = rt.cfg, rt.store, rt.run
    eps = store.rows('SELECT env_id, with_hint, "return" AS ret FROM episodes'
                     " WHERE run = ? AND generation = ? ORDER BY episode_id", [run, generation])
    by_env: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {True: [], False: []})
    for e in eps:
        by_env[e["env_id"]][bool(e["with_hint"])].append(e["ret"])
    prev = store.rows("SELECT avg(win_rate_no_hint) AS w FROM regrets WHERE run = ? AND"
                      " generation = ?", [run, generation - 1])[0]["w"]
    last = rt.stage_result(generation - 1, "score_regret") or {}
    baseline = last.get("baseline_win_rate")
    if prev is not None:
        baseline = update_baseline(baseline, prev)
    # An environment that paid past 1.0 in this generation's rollout (flagged there) is
    # not measured: its design earns the rejected reward below, and the memory drops it.
    flagged = {r["env_id"] for r in store.rows(
        "SELECT env_id FROM environments WHERE flag IS NOT NULL")}
    stats = {env: design_stats(arms[True], arms[False], baseline)
             for env, arms in by_env.items() if arms[True] and arms[False] and env not in flagged}
    if baseline is None and stats:
        baseline = update_baseline(None, sum(s.win_rate_without_hint for s in stats.values())
                                   / len(stats))
        stats = {env: design_stats(by_env[env][True], by_env[env][False], baseline)
                 for env in stats}
    name, rejected = cfg.designer.reward, cfg.designer.rejected_reward
    rows = [{"run": run, "generation": generation, "env_id": env, "episodes": s.n_episodes,
             "mean_return_hint": s.mean_return_with_hint,
             "mean_return_no_hint": s.mean_return_without_hint,
             "win_rate_hint": s.win_rate_with_hint, "win_rate_no_hint": s.win_rate_without_hint,
             "regret": s.regret, "designer_reward": designer_reward(s, name, rejected)}
            for env, s in sorted(stats.items())]
    store.replace_rows("regrets", {"run": run, "generation": generation}, rows)
    designs = store.rows("SELECT design_idx, env_id, accepted FROM designs WHERE run = ? AND"
                         " generation = ? ORDER BY design_idx", [run, generation])
    rewards = []
    cur = store.cursor()
    cur.execute("BEGIN TRANSACTION")
    for d in designs:
        if d["accepted"] and d["env_id"] in flagged:
            r = designer_reward(None, name, rejected)
        elif d["accepted"] and d["env_id"] not in stats:
            # Accepted but not measured (no hint could be written for it this generation):
            # no reward at all (NULL), so it stays out of the designer's group
            # normalisation; a 0.0 next to rejected designs' negative rewards would be a
            # positive advantage for an environment nobody measured.
            r = None
        else:
            r = designer_reward(stats.get(d["env_id"]) if d["accepted"] else None, name, rejected)
        if r is not None:
            rewards.append(r)
        cur.execute("UPDATE designs SET reward = ? WHERE run = ? AND generation = ? AND"
                    " design_idx = ?", [r, run, generation, d["design_idx"]])
    cur.execute("COMMIT")
    n = len(stats)
    return {
        "environments_played": n,
        "regret_mean": sum(s.regret for s in stats.values()) / n if n else 0.0,
        "win_rate_no_hint": sum(s.win_rate_without_hint for s in stats.values()) / n if n else 0.0,
        "win_rate_hint": sum(s.win_rate_with_hint for s in stats.values()) / n if n else 0.0,
        "designer_reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
        "baseline_win_rate": baseline,
    }

"""Regret, designer rewards, registry and advantages: plain numbers, no model."""

import math
import statistics

import pytest

from spade_tasks.errors import ConfigError, DuplicateName, RewardError
from spade_tasks.regret import (
    DESIGNER_REWARDS,
    DesignStats,
    design_stats,
    designer_reward,
    get_designer_reward,
    group_advantages,
    grouped_advantages,
    is_win,
    plateau,
    register_designer_reward,
    regret,
    update_baseline,
    win_rate,
)


def _stats(win_no_hint: float, regret_value: float, baseline: float | None = None) -> DesignStats:
    return DesignStats(
        win_rate_with_hint=min(1.0, win_no_hint + regret_value),
        win_rate_without_hint=win_no_hint,
        mean_return_with_hint=win_no_hint + regret_value,
        mean_return_without_hint=win_no_hint,
        regret=regret_value,
        n_episodes=8,
        baseline_win_rate=baseline,
    )


# ---------------------------------------------------------------- regret and wins


def test_regret_is_difference_of_means():
    assert regret([1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]) == pytest.approx(0.25)
    assert regret([0.0, 0.5], [1.0, 1.0]) == pytest.approx(-0.75)


def test_regret_of_no_episodes_is_an_error():
    with pytest.raises(RewardError, match="no episodes"):
        regret([], [1.0])


@pytest.mark.parametrize(("ret", "won"), [(1.0, True), (1.5, True), (0.999, False), (-1.0, False)])
def test_win_is_return_at_least_one(ret, won):
    assert is_win(ret) is won


def test_design_stats_summarises_both_conditions():
    s = design_stats([1.0, 1.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0])
    assert s.win_rate_with_hint == 0.5
    assert s.win_rate_without_hint == 0.25
    assert s.mean_return_with_hint == pytest.approx(0.625)
    assert s.regret == pytest.approx(0.375)
    assert s.n_episodes == 4
    assert win_rate([1.0, 0.2]) == 0.5


def test_design_stats_rejects_unequal_episode_counts():
    with pytest.raises(RewardError, match="same seeds"):
        design_stats([1.0, 0.0], [1.0])


# ---------------------------------------------------------------- plateau and blend


@pytest.mark.parametrize(
    ("wr", "expected"),
    [
        (0.0, 0.0),
        (0.15, 0.0),
        (0.275, 0.5),
        (0.4, 1.0),
        (0.5, 1.0),
        (0.6, 1.0),
        (0.725, 0.5),
        (0.85, 0.0),
        (1.0, 0.0),
    ],
)
def test_plateau_edges(wr, expected):
    assert plateau(wr) == pytest.approx(expected, abs=1e-12)


def test_blend_at_plateau_edges_and_regret_clip():
    blend = get_designer_reward("blend")
    # In band, regret saturates at 0.15: 0.6 + 0.4.
    assert blend(_stats(0.5, 0.15)) == pytest.approx(1.0)
    assert blend(_stats(0.5, 0.9)) == pytest.approx(1.0)
    # Negative regret is floored, so only the plateau pays.
    assert blend(_stats(0.4, -0.3)) == pytest.approx(0.6)
    # Half-way down the ramp, half the regret scale.
    assert blend(_stats(0.275, 0.075)) == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)
    # Outside the plateau only regret pays.
    assert blend(_stats(0.9, 0.06)) == pytest.approx(0.4 * 0.4)


def test_regret_reward_is_the_regret():
    assert get_designer_reward("regret")(_stats(0.2, -0.25)) == pytest.approx(-0.25)


def test_solve_rate_is_plateau_only():
    solve_rate = get_designer_reward("solve_rate")
    assert solve_rate(_stats(0.5, 0.0)) == 1.0
    assert solve_rate(_stats(0.725, 0.9)) == pytest.approx(0.5)
    assert solve_rate(_stats(0.0, 1.0)) == 0.0


def test_learning_potential_is_distance_from_baseline():
    lp = get_designer_reward("learning_potential")
    assert lp(_stats(0.7, 0.0, baseline=0.4)) == pytest.approx(0.3)
    assert lp(_stats(0.1, 0.0, baseline=0.4)) == pytest.approx(0.3)
    with pytest.raises(RewardError, match="baseline_win_rate"):
        lp(_stats(0.5, 0.0))


def test_baseline_starts_at_first_value_then_moves_towards_new():
    b = update_baseline(None, 0.2)
    assert b == 0.2
    assert update_baseline(b, 1.0) == pytest.approx(0.15 * 0.2 + 0.85 * 1.0)


def test_rejected_design_gets_the_fixed_negative_reward():
    assert designer_reward(None, "regret", rejected_reward=-1.0) == -1.0
    assert designer_reward(_stats(0.5, 0.1), "regret", rejected_reward=-1.0) == pytest.approx(0.1)
    with pytest.raises(ConfigError, match="negative"):
        designer_reward(None, "regret", rejected_reward=0.0)


# ---------------------------------------------------------------- registry


def test_registry_holds_the_four_rewards():
    assert {"regret", "blend", "solve_rate", "learning_potential"} <= set(DESIGNER_REWARDS)


def test_unknown_reward_is_a_config_error_naming_known_ones():
    with pytest.raises(ConfigError, match="unknown designer reward 'nope'.*blend"):
        get_designer_reward("nope")


def test_duplicate_registration_is_an_error():
    with pytest.raises(DuplicateName, match="already registered"):

        @register_designer_reward("regret")
        def other(stats):  # pragma: no cover - never registered
            return 0.0

    assert DESIGNER_REWARDS["regret"] is get_designer_reward("regret")


# ---------------------------------------------------------------- advantages


def test_group_advantages_zero_mean_unit_std():
    adv = group_advantages([0.0, 1.0, 1.0, 3.0, -2.0], eps=0.0)
    assert statistics.fmean(adv) == pytest.approx(0.0, abs=1e-12)
    assert statistics.pstdev(adv) == pytest.approx(1.0)
    assert adv[3] > adv[1] > adv[0] > adv[4]


def test_constant_group_gives_zeros():
    assert group_advantages([0.7, 0.7, 0.7]) == [0.0, 0.0, 0.0]
    assert group_advantages([5.0]) == [0.0]
    assert group_advantages([]) == []


def test_grouped_advantages_normalise_each_group_alone():
    adv = grouped_advantages([1.0, 0.0, 10.0, 10.0, 5.0, 0.0], ["a", "a", "b", "b", "c", "c"])
    assert adv[0] == pytest.approx(1.0, abs=1e-5) and adv[1] == pytest.approx(-1.0, abs=1e-5)
    assert adv[2:4] == [0.0, 0.0]
    assert adv[4] == pytest.approx(1.0, abs=1e-5)


def test_advantages_are_finite_for_tiny_spread():
    adv = group_advantages([0.0, 1e-12])
    assert all(math.isfinite(a) for a in adv)


# ---------------------------------------------------------------- the scoring stage


class _Rt:
    """What ``score_stage`` reads of a runtime: config, store, run name, stage results."""

    def __init__(self, store):
        from spade_tasks.config import Config

        self.cfg, self.store, self.run = Config(), store, "r"

    def stage_result(self, generation, stage):
        return None


def _scored(tmp_path, flag=None):
    """Four designs: measured (regret 0.5), accepted-unmeasured, rejected, and measured
    but flagged ``flag`` in the rollout; returns {design_idx: reward}."""
    from spade_tasks.regret import score_stage
    from spade_tasks.store import Store

    with Store(tmp_path / "s.duckdb") as store:
        for idx, env, accepted in [(0, "a", True), (1, "b", True), (2, None, False),
                                   (3, "c", True)]:
            store.upsert("designs", {"run": "r", "generation": 0, "design_idx": idx,
                                     "env_id": env, "accepted": accepted})
        for env, no_hint, hint in [("a", 0.0, 1.0), ("c", 0.0, 1.0)]:
            for with_hint, ret in ((False, no_hint), (True, hint)):
                store.upsert("episodes", {"run": "r", "generation": 0, "env_id": env,
                                          "episode_id": f"{env}-{with_hint}",
                                          "with_hint": with_hint, "return": ret})
        store.upsert("environments", {"env_id": "c", "flag": flag})
        score_stage(_Rt(store), 0)
        rewards = {r["design_idx"]: r["reward"] for r in store.rows(
            "SELECT design_idx, reward FROM designs ORDER BY design_idx")}
        used = [r["design_idx"] for r in store.rows(
            # the designer's training query (training.train_stage)
            "SELECT design_idx FROM designs WHERE run = 'r' AND generation = 0"
            " AND reward IS NOT NULL ORDER BY design_idx")]
    return rewards, used


def test_unmeasured_design_stays_out_of_the_group(tmp_path):
    rewards, used = _scored(tmp_path)
    assert rewards[0] == 1.0 and rewards[2] == -1.0
    assert rewards[1] is None and 1 not in used


def test_overflowing_environment_earns_the_rejected_reward(tmp_path):
    rewards, _ = _scored(tmp_path, flag="reward_overflow: episode c-n-0 paid 2.1")
    assert rewards[3] == -1.0
    assert _scored(tmp_path / "clean")[0][3] == 1.0

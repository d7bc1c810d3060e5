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


def test_unscaled_advantages_keep_the_rewards_spread():
    # Dr. GRPO: centred, not divided by the spread. Fifteen rejected designs 0.3 apart
    # and one accepted 2.5 above them: scaled, the rejected ones' differences weigh
    # like a unit spread; unscaled, they stay 0.3 while the accepted one's lead stays.
    rewards = [-2.7] * 8 + [-3.0] * 7 + [0.0]
    scaled = group_advantages(rewards)
    unscaled = group_advantages(rewards, scale=False)
    assert statistics.fmean(unscaled) == pytest.approx(0.0, abs=1e-12)
    assert unscaled[0] - unscaled[8] == pytest.approx(0.3)
    assert unscaled[15] == pytest.approx(0.0 - statistics.fmean(rewards))
    assert scaled[0] - scaled[8] > 0.4  # the same 0.3, stretched by a 0.7 std
    all_rejected = [-2.7] * 8 + [-3.0] * 8
    assert max(map(abs, group_advantages(all_rejected, scale=False))) == pytest.approx(0.15)
    assert max(map(abs, group_advantages(all_rejected, eps=0.0))) == pytest.approx(1.0)
    assert group_advantages([0.7, 0.7], scale=False) == [0.0, 0.0]


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


# ---------------------------------------------------------------- rejected designs

from spade_tasks.regret import (  # noqa: E402
    GAMING_CHECKS, REJECTION_STAGES, check_name, contract_fraction, graded_rejection,
    lowest_accepted, score_stage,
    parsed_fraction, rejection_progress, rejection_reward)

_GOOD = '''import random

class CoinEnv:
    max_turns = 3

    def reset(self, seed=None, options=None):
        return "x", {}

    def step(self, action):
        return "y", 0.0, True, False, {}

    def oracle(self):
        return "1"
'''


def test_check_name_reads_the_reason_prefix():
    assert check_name("parse: no python code block") == "no_code"
    assert check_name("parse: line 3: invalid syntax") == "parse"
    assert check_name("oracle_feasible: oracle reached total 0") == "oracle_feasible"


def test_parsed_fraction_is_the_prefix_before_the_first_syntax_error():
    assert parsed_fraction(_GOOD) == 1.0
    lines = _GOOD.splitlines()
    broken = "\n".join(lines[:8] + ["    def step(self, action:"] + lines[9:])
    frac = parsed_fraction(broken)
    assert 0.4 < frac < 0.7  # the lines before the broken `def step` parse
    assert parsed_fraction("def f(:\n  pass\n") == 0.0


def test_contract_fraction_counts_parts_in_text_that_may_not_parse():
    assert contract_fraction(_GOOD) == 1.0
    assert contract_fraction("class CoinEnv:\n    def reset(self):\n        (((") == 0.4
    assert contract_fraction("Once upon a time") == 0.0
    # A QuizEnv subclass owes only its class line and questions(); half of that is 0.5.
    assert contract_fraction("class WordsEnv(QuizEnv):\n    def questions(self, rng):\n") == 1.0
    assert contract_fraction("class WordsEnv(QuizEnv):\n    x = (((") == 0.5


def test_progress_follows_the_validator_order():
    order = ["parse: no python code block", "parse: line 1: x", "env_class: y", "imports: z",
             "load: boom", "step_return: bad", "gymnasium: w", "oracle_feasible: no",
             "answer_determined: two answers", "resource_bounds: slow"]
    got = [rejection_progress([r], _GOOD if not r.startswith("parse: no") else None, "")
           for r in order]
    assert got == sorted(got) and len(set(got)) == len(got)
    assert all(0.0 <= p < 1.0 for p in got)


def test_progress_within_the_first_checks_separates_designs_failing_the_same_check():
    worse = "class Foo:\n  x = (\n"
    better = _GOOD.replace("    def oracle(self):\n        return \"1\"\n", "    def oracle(self:\n")
    p_worse = rejection_progress(["parse: line 2: '(' was never closed"], worse)
    p_better = rejection_progress(["parse: line 13: invalid syntax"], better)
    assert p_worse < p_better < rejection_progress(["env_class: none"], _GOOD)
    prose = rejection_progress(["parse: no python code block"], None, "Hello there")
    codey = rejection_progress(["parse: no python code block"], None, "class AEnv: def reset(")
    assert prose < codey < p_worse


def test_every_validator_check_has_a_place_in_the_order():
    from spade_tasks.validation import check_names

    names = check_names()
    assert all(n in REJECTION_STAGES or n in GAMING_CHECKS for n in names)
    ranked = [n for n in names if n in REJECTION_STAGES]
    assert ranked == sorted(ranked, key=REJECTION_STAGES.index)


def test_gaming_rejections_make_no_progress():
    for reason in ("hint_leak: hint holds answer", "reward_overflow: paid 2.0"):
        assert rejection_progress([reason], _GOOD) == 0.0


def test_a_duplicate_earns_what_parsing_earns_and_no_more():
    dup = rejection_progress(["duplicate: the same game as seed x"], _GOOD)
    # no credit for the checks a copy gets through...
    assert dup < rejection_progress(["env_class: no class"], "x = 1\n")
    assert dup < rejection_progress(["step_return: bad"], _GOOD)
    # ...but no less than a program broken anywhere (breaking a copy earns nothing)
    broken = _GOOD.replace("class ", "class Broken ", 1)
    assert rejection_progress(["parse: line 1: invalid syntax"], broken) <= dup
    assert rejection_progress(["parse: x"], _GOOD) <= dup
    assert rejection_progress(["hint_leak: x"], _GOOD) < dup


@pytest.mark.parametrize("reason", ["answer_given: the answer is word 3 of the question",
                                    "non_trivial: echo policy wins", "floor_gap: quoted 0.9"])
def test_a_game_won_without_doing_the_task_earns_what_a_duplicate_earns(reason):
    free = rejection_progress([reason], _GOOD)
    assert free == rejection_progress(["duplicate: the same game as x"], _GOOD)
    # Not its place near the end of the order: a program that crashes on its first step,
    # or fails to reach a solvable state, earns more than one a copier wins.
    assert free < rejection_progress(["step_return: bad"], _GOOD)
    assert free < rejection_progress(["oracle_feasible: no"], _GOOD)


def test_unknown_check_counts_as_the_first_dynamic_one():
    assert rejection_progress(["brand_new_check: x"], _GOOD) == rejection_progress(
        ["load: x"], _GOOD)


@pytest.mark.parametrize("reward", ["regret", "blend", "solve_rate", "learning_potential"])
def test_graded_rejection_is_below_every_accepted_reward(reward):
    best = max(graded_rejection([f"{REJECTION_STAGES[-1]}: x"], _GOOD, reward_name=reward),
               graded_rejection(["env_class: x"], _GOOD, reward_name=reward))
    assert best < lowest_accepted(reward)
    worst = graded_rejection(["parse: no python code block"], None, "", reward_name=reward)
    assert worst < best
    # The lowest accepted bound holds for the registered function itself.
    fn = get_designer_reward(reward)
    lows = [fn(_stats(wr, rg, baseline=0.5)) for wr in (0.0, 0.5, 1.0) for rg in (-2.0, 0.0)]
    assert min(lows) >= lowest_accepted(reward)


def test_graded_played_gives_no_credit_between_parsing_and_a_first_move():
    def played(reason, source=_GOOD):
        return rejection_reward("graded_played", [reason], source)

    dup = played("duplicate: the same game as seed x")
    assert dup == rejection_reward("graded", ["duplicate: the same game as seed x"], _GOOD)
    # A program that parses and then fails to load, reset or step earns a copy's reward...
    for reason in ("env_class: none", "imports: os", "load: boom", "reset_return: bad",
                   "step_return: probe action 'empty': exception: NameError"):
        assert played(reason) == dup, reason
    # ...where `graded` paid it more than a copy.
    assert rejection_reward("graded", ["step_return: bad"], _GOOD) > dup
    # A program broken as Python still earns less, and one that plays earns more.
    assert played("parse: line 1: x", "x(") < dup
    assert played("probe_actions: bad") > dup
    assert played("answer_determined: two answers") == rejection_reward(
        "graded", ["answer_determined: two answers"], _GOOD)
    assert played(f"{REJECTION_STAGES[-1]}: x") < lowest_accepted("regret")


def test_rejection_reward_by_name():
    assert rejection_reward("constant", ["parse: x"], None, constant=-0.7) == -0.7
    assert rejection_reward("graded", ["gymnasium: x"], _GOOD, reward_name="blend") > \
        rejection_reward("graded", ["parse: x"], "x(", reward_name="blend")
    with pytest.raises(ConfigError, match="unknown rejection reward"):
        rejection_reward("nope", [], None)
    with pytest.raises(ConfigError, match="negative"):
        rejection_reward("constant", [], None, constant=0.0)


def test_score_stage_grades_rejected_designs_below_accepted_ones(tmp_path):
    """The flow's stage on hand-made rows: an accepted design's regret, graded rewards for
    the rejected ones (the further a design got, the more it earns), then the designer's
    group has spread even with one accepted design."""
    from spade_tasks.config import Config, DesignerConfig, RunConfig
    from spade_tasks.runtime import Runtime
    from spade_tasks.store import Store

    def design(idx, env_id, accepted, reasons, completion):
        return {"run": "r", "generation": 0, "design_idx": idx, "doc_id": None,
                "setting": "games", "prompt": "[]", "completion": completion,
                "prompt_token_ids": [1], "token_ids": [2], "logprobs": [0.0],
                "env_id": env_id, "accepted": accepted, "reasons": reasons, "reward": None}

    cfg = Config(run=RunConfig(name="r", root=tmp_path), designer=DesignerConfig(reward="regret"))
    with Store(tmp_path / "s.duckdb") as store:
        store.replace_rows("designs", {"run": "r", "generation": 0}, [
            design(0, "e1", True, [], "```python\n" + _GOOD + "```"),
            design(1, None, False, ["parse: no python code block"], "Once upon a time"),
            design(2, None, False, ["parse: line 2: never closed"], "```python\nclass XEnv:\n  x = (\n"),
            design(3, None, False, ["oracle_feasible: no"], "```python\n" + _GOOD + "```"),
        ])
        store.replace_rows("episodes", {"run": "r", "generation": 0}, [
            {"run": "r", "generation": 0, "episode_id": f"{h}{k}", "env_id": "e1",
             "with_hint": h, "return": r} for k, (h, r) in enumerate(
                [(False, 0.0), (False, 1.0), (True, 1.0), (True, 1.0)])])
        out = score_stage(Runtime(cfg, store), 0, _played(4))
        rewards = [r["reward"] for r in store.rows(
            "SELECT reward FROM designs WHERE run = 'r' ORDER BY design_idx")]
    assert out.regret_mean == pytest.approx(0.5) and out.regret_by_env == {"e1": 0.5}
    assert rewards[0] == pytest.approx(0.5)
    assert rewards[1] < rewards[2] < rewards[3] < lowest_accepted("regret") <= rewards[0]
    constant = Config(run=RunConfig(name="r2", root=tmp_path),
                      designer=DesignerConfig(rejected_reward="constant", rejected_constant=-0.5))
    assert constant.designer.rejected_constant == -0.5


# ---------------------------------------------------------------- the scoring stage


def _played(n):
    """The rollout record of ``n`` episodes (their rows are the test's)."""
    from spade_tasks.records import Played

    return Played(episode_ids=[], episodes=n, environments=[], environments_new=0,
                  environments_pool=0, hints_model=0, hints_dropped=0, hints_env_refused=0,
                  environments_overflow=[], environments_unhinted=[], rollout_workers=1,
                  rollout_tokens=0, rollout_tokens_per_s=0.0, end_reasons={})


def test_score_stage_refuses_a_rollout_the_store_does_not_hold(tmp_path):
    from spade_tasks.errors import RewardError
    from spade_tasks.regret import score_stage
    from spade_tasks.store import Store

    with Store(tmp_path / "s.duckdb") as store:
        store.upsert("episodes", {"run": "r", "generation": 0, "env_id": "a",
                                  "episode_id": "a-0", "with_hint": False, "return": 1.0})
        with pytest.raises(RewardError, match="holds 1 episodes, the rollout recorded 2"):
            score_stage(_Rt(store), 0, _played(2))


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
        score_stage(_Rt(store), 0, _played(4))
        rewards = {r["design_idx"]: r["reward"] for r in store.rows(
            "SELECT design_idx, reward FROM designs ORDER BY design_idx")}
        used = [r["design_idx"] for r in store.rows(
            # the designer's training query (training.train_stage)
            "SELECT design_idx FROM designs WHERE run = 'r' AND generation = 0"
            " AND reward IS NOT NULL ORDER BY design_idx")]
    return rewards, used


def test_unmeasured_design_stays_out_of_the_group(tmp_path):
    rewards, used = _scored(tmp_path)
    # The rejected design has no reasons recorded: the graded reward's floor.
    assert rewards[0] == 1.0 and rewards[2] == graded_rejection([], None)
    assert rewards[1] is None and 1 not in used


def test_overflowing_environment_earns_the_rejected_reward(tmp_path):
    rewards, _ = _scored(tmp_path, flag="reward_overflow: episode c-n-0 paid 2.1")
    # Paying past 1.0 is gaming: the floor, whatever the program's progress.
    assert rewards[3] == graded_rejection([], None) < lowest_accepted("regret")
    assert _scored(tmp_path / "clean")[0][3] == 1.0


def test_one_solved_rule_for_wins_rollouts_and_the_validator():
    from spade_tasks.validation import is_solved

    third = 1 / 3
    for total in (1.0, third + third + third, 1 - 1e-9, 0.999, 0.0, -0.1):
        assert is_win(total) == is_solved(total)
    assert is_win(1 - 1e-9) and not is_win(0.999)


DESIGN_REWARDS = [0.0, -2.7, -2.7, -3.0]  # one accepted design among three rejected


def _designer_advantages(tmp_path, **designer) -> list[float]:
    """The designer samples' advantages the training stage reads from a store holding
    one generation rewarded ``DESIGN_REWARDS``, under the designer settings given."""
    from spade_tasks.store import Store
    from spade_tasks.training import generation_samples

    with Store(tmp_path / "s.duckdb") as store:  # upsert: a second call writes the same rows
        for idx, r in enumerate(DESIGN_REWARDS):
            store.upsert("designs", {"run": "r", "generation": 0, "design_idx": idx,
                                     "accepted": idx == 0, "reward": r,
                                     "prompt_token_ids": [1, 2], "token_ids": [3],
                                     "logprobs": [-0.5]})
        rt = _Rt(store)
        rt.cfg = rt.cfg.model_copy(update={"designer": rt.cfg.designer.model_copy(
            update=designer)})
        return [s.advantage for s in generation_samples(rt, 0)]


def test_the_designer_samples_follow_designer_scale_advantages(tmp_path):
    # The training stage reads the rewarded designs from the store and centres their
    # rewards, dividing by the spread unless designer.scale_advantages is off.
    rewards = DESIGN_REWARDS
    scaled = _designer_advantages(tmp_path)
    unscaled = _designer_advantages(tmp_path, scale_advantages=False)
    assert scaled == pytest.approx(group_advantages(rewards))
    mean = statistics.fmean(rewards)
    assert unscaled == pytest.approx([r - mean for r in rewards])
    assert unscaled[1] - unscaled[3] == pytest.approx(0.3)


def test_clip_advantages_bounds_each_advantage_and_none_leaves_them():
    from spade_tasks.regret import clip_advantages

    advs = [2.6, -0.2, -0.3, -2.1]
    assert clip_advantages(advs, None) == advs
    assert clip_advantages(advs, 1.0) == [1.0, -0.2, -0.3, -1.0]
    with pytest.raises(RewardError, match="positive"):
        clip_advantages(advs, 0.0)


def test_the_designer_samples_follow_designer_max_advantage(tmp_path):
    # One accepted design among rejected ones: centred, its advantage is about 2.5; the
    # clip cuts it to the bound and leaves the rejected designs' small ones as they are.
    clipped = _designer_advantages(tmp_path, scale_advantages=False, max_advantage=1.0)
    mean = statistics.fmean(DESIGN_REWARDS)
    assert clipped[0] == pytest.approx(1.0)
    assert clipped[1:] == pytest.approx([r - mean for r in DESIGN_REWARDS[1:]])

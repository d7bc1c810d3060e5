from spade_env import ReasoningGymEnv


class CountdownEnv(ReasoningGymEnv):
    """Countdown numbers: reach a target with arithmetic.

    The agent gets a set of numbers and a target and must write an arithmetic expression
    using each number once that evaluates to the target. One turn; the answer goes
    inside <answer>...</answer> and is scored by reasoning-gym's own ``score_answer``
    for the "countdown" dataset (reward 1 only for a fully correct answer). Part of the
    fixed-environment baseline pool."""

    dataset = "countdown"
    hint_text = ("Work backwards from the target: look for a product or sum of two numbers near "
                 "it, then fix the difference with the remaining numbers; use each number exactly "
                 "once.")

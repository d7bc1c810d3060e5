from spade_env import ReasoningGymEnv


class BasicArithmeticEnv(ReasoningGymEnv):
    """Evaluate an integer arithmetic expression.

    The agent gets one arithmetic expression with +, -, * and / over integers and must
    give its exact value. One turn; the answer goes inside <answer>...</answer> and is
    scored by reasoning-gym's own ``score_answer`` for the "basic_arithmetic" dataset
    (reward 1 only for a fully correct answer). Part of the fixed-environment baseline
    pool."""

    dataset = "basic_arithmetic"
    hint_text = ("Apply operator precedence: parentheses first, then * and / left to right, then +"
                 " and - left to right; keep every intermediate value exact.")

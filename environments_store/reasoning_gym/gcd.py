from spade_env import ReasoningGymEnv


class GcdEnv(ReasoningGymEnv):
    """Find the greatest common divisor of a few integers.

    The agent gets two or more positive integers and must give their greatest common
    divisor. One turn; the answer goes inside <answer>...</answer> and is scored by
    reasoning-gym's own ``score_answer`` for the "gcd" dataset (reward 1 only for a
    fully correct answer). Part of the fixed-environment baseline pool."""

    dataset = "gcd"
    hint_text = ("Use Euclid's algorithm: replace the larger number by its remainder modulo the "
                 "smaller until one is zero; fold over the numbers pairwise.")

from spade_env import ReasoningGymEnv


class ChainSumEnv(ReasoningGymEnv):
    """Add and subtract a chain of integers.

    The agent gets a chain of integers joined by + and - and must give the result. One
    turn; the answer goes inside <answer>...</answer> and is scored by reasoning-gym's
    own ``score_answer`` for the "chain_sum" dataset (reward 1 only for a fully correct
    answer). Part of the fixed-environment baseline pool."""

    dataset = "chain_sum"
    hint_text = ("Go strictly left to right, keeping a running total; double-check each carry and "
                 "borrow.")

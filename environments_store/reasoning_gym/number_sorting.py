from spade_env import ReasoningGymEnv


class NumberSortingEnv(ReasoningGymEnv):
    """Sort a list of decimal numbers.

    The agent gets a list of numbers and must return them sorted in the requested order,
    in the list-of-strings format the question shows. One turn; the answer goes inside
    <answer>...</answer> and is scored by reasoning-gym's own ``score_answer`` for the
    "number_sorting" dataset (reward 1 only for a fully correct answer). Part of the
    fixed-environment baseline pool."""

    dataset = "number_sorting"
    hint_text = ("Compare the numbers by value, not as text (negative numbers first when "
                 "ascending), and copy each number exactly as written.")

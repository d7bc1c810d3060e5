from spade_env import ReasoningGymEnv


class WordSortingEnv(ReasoningGymEnv):
    """Sort a list of words by their character codes.

    The agent gets a list of words and must return them sorted in ascending or
    descending ASCII/Unicode order, comma-separated. One turn; the answer goes inside
    <answer>...</answer> and is scored by reasoning-gym's own ``score_answer`` for the
    "word_sorting" dataset (reward 1 only for a fully correct answer). Part of the
    fixed-environment baseline pool."""

    dataset = "word_sorting"
    hint_text = ("Compare words character by character by code point: uppercase letters come "
                 "before lowercase ones; keep the requested direction and the comma-separated "
                 "format.")

from spade_env import ReasoningGymEnv


class LetterCountingEnv(ReasoningGymEnv):
    """Count how often a letter occurs in a text.

    The agent gets a short text and a letter and must count the letter"s occurrences.
    One turn; the answer goes inside <answer>...</answer> and is scored by reasoning-
    gym"s own ``score_answer`` for the "letter_counting" dataset (reward 1 only for a
    fully correct answer). Part of the fixed-environment baseline pool."""

    dataset = "letter_counting"
    hint_text = ("Go word by word and count the letter in each, case-insensitively, then add the "
                 "counts.")

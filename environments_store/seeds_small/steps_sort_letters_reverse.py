from spade_env import QuizEnv, chain, sort_letters, reverse

WORDS = ["kitchen", "elephant", "blanket", "lantern", "ribbon", "iceberg", "diamond", "sponge"]


class SortLettersReverseEnv(QuizEnv):
    """A word with its letters sorted, then spelled backwards."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, sort_letters, reverse)]

    def hint(self):
        return "Work on paper: one step, then the next, on what the first left."

from spade_env import QuizEnv, chain, no_repeats, rotate

WORDS = ["napkin", "pumpkin", "zipper", "jacket", "raisin", "quarry", "walrus", "octopus"]


class NoRepeatsRotateEnv(QuizEnv):
    """A word without repeated letters, then with its first letter moved to the end."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, no_repeats, rotate)]

    def hint(self):
        return "Work on paper: one step, then the next, on what the first left."

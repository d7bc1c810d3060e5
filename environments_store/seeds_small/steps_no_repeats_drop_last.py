from spade_env import QuizEnv, chain, no_repeats, drop_last

WORDS = ["dolphin", "napkin", "saddle", "iceberg", "peanut", "blanket", "velvet", "hammock"]


class NoRepeatsDropLastEnv(QuizEnv):
    """A word without repeated letters, then without its last letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, no_repeats, drop_last)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

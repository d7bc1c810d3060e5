from spade_env import QuizEnv, chain, drop_vowels, reverse

WORDS = ["planet", "garden", "silver", "rocket", "basket", "window", "marble", "candle"]


class VowellessBackwardsEnv(QuizEnv):
    """A word without its vowels, spelled backwards."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_vowels, reverse)]

    def hint(self):
        return "Cross out the vowels first, then read what is left from right to left."

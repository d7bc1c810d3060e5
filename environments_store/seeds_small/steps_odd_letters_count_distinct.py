from spade_env import QuizEnv, chain, odd_letters, count_distinct

WORDS = ["raisin", "orchard", "pumpkin", "magnet", "peanut", "blanket", "pillow", "sponge"]


class OddLettersCountDistinctEnv(QuizEnv):
    """The number of different letters of a word cut to its odd-placed letters."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, odd_letters, count_distinct)]

    def hint(self):
        return "The second step works on what the first step gives, not on the word."

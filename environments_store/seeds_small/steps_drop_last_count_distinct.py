from spade_env import QuizEnv, chain, drop_last, count_distinct

WORDS = ["blanket", "cactus", "pillow", "glacier", "giraffe", "raisin", "marble", "dolphin"]


class DropLastCountDistinctEnv(QuizEnv):
    """The number of different letters of a word without its last letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_last, count_distinct)]

    def hint(self):
        return "Write the word after the first step before doing the second."

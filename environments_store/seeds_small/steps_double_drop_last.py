from spade_env import QuizEnv, chain, double, drop_last

WORDS = ["iceberg", "wizard", "insect", "pumpkin", "scarf", "velvet", "dolphin", "feather"]


class DoubleDropLastEnv(QuizEnv):
    """A word written twice, then without its last letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, double, drop_last)]

    def hint(self):
        return "The second step works on what the first step gives, not on the word."

from spade_env import QuizEnv, chain, double, drop_first

WORDS = ["tunnel", "walrus", "bakery", "feather", "pillow", "kitchen", "pumpkin", "harvest"]


class DoubleDropFirstEnv(QuizEnv):
    """A word written twice, then without its first letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, double, drop_first)]

    def hint(self):
        return "The second step works on what the first step gives, not on the word."

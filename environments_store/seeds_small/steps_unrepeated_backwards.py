from spade_env import QuizEnv, chain, no_repeats, reverse

WORDS = ["balloon", "pepper", "coffee", "letter", "mississippi", "banana", "committee", "bookkeeper"]


class UnrepeatedBackwardsEnv(QuizEnv):
    """A word with each repeated letter dropped, spelled backwards."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, no_repeats, reverse)]

    def hint(self):
        return "Keep a letter only the first time you meet it, then read the result from the end."

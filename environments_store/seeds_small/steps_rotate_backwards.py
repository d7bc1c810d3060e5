from spade_env import QuizEnv, chain, rotate, reverse

WORDS = ["castle", "jungle", "pirate", "saddle", "temple", "button", "carpet", "hammer"]


class RotateBackwardsEnv(QuizEnv):
    """A word with its first letter moved to the end, then reversed."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, rotate, reverse)]

    def hint(self):
        return "Write the word after each step before doing the next one."

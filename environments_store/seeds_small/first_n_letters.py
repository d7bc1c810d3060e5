from spade_env import QuizEnv

WORDS = ["planet", "rabbit", "silver", "candle", "forest", "button", "meadow", "pencil", "turtle"]


class FirstNLettersEnv(QuizEnv):
    """The first few letters of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        n = rng.randint(2, 3)
        question = f"Spell only the opening {n} letters from '{word}', joined together."
        answer = word[:n]
        return [(question, answer)]

    def hint(self):
        return "Read the word from its start and stop after the count asked."

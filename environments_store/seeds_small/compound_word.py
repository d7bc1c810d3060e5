from spade_env import QuizEnv

WORDS = ["rain", "flower", "light", "house", "boat", "fire", "place", "work", "book", "snow"]


class CompoundWordEnv(QuizEnv):
    """Two words joined into one, the second after the first."""

    def questions(self, rng):
        first, second = rng.sample(WORDS, 2)
        question = f"Write '{first}' and '{second}' as one word, the second after the first."
        answer = first + second
        return [(question, answer)]

    def hint(self):
        return "Copy the first word and attach the second to its end with no space."

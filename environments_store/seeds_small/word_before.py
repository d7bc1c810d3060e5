from spade_env import QuizEnv

WORDS = ["monday", "friday", "sunday", "april", "june", "summer", "winter", "morning", "evening"]


class WordBeforeEnv(QuizEnv):
    """The word that comes right before another in a list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 6)
        i = rng.randint(1, len(shown) - 1)
        listed = ", ".join(shown)
        question = f"Here is a list: {listed}. Which word comes right before '{shown[i]}'?"
        answer = shown[i - 1]
        return [(question, answer)]

    def hint(self):
        return "Find the named word in the list and step one place to the left."

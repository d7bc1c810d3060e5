from spade_env import QuizEnv

WORDS = ["bread", "cheese", "butter", "honey", "yogurt", "cereal", "pasta", "salad", "soup", "noodle"]


class LongerThanEnv(QuizEnv):
    """How many words are longer than a given length."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        n = rng.randint(3, 6)
        return [(f"How many of these words have more than {n} letters: {', '.join(shown)}?",
                 str(sum(len(w) > n for w in shown)))]

    def hint(self):
        return "Measure every word and count those whose length beats the number."

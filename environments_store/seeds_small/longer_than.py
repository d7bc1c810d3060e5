from spade_env import QuizEnv

WORDS = ["bread", "cheese", "butter", "honey", "yogurt", "cereal", "pasta", "salad", "soup", "noodle"]


class LongerThanEnv(QuizEnv):
    """How many words are longer than a given length."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        n = len(rng.choice(shown))
        listed = ", ".join(shown)
        question = f"How many of these have more than {n} letters: {listed}?"
        answer = str(sum(len(w) > n for w in shown))
        return [(question, answer)]

    def hint(self):
        return "Measure each word and count those longer than the number."

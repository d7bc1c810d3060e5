from spade_env import QuizEnv

WORDS = ["paint", "brush", "color", "canvas", "sketch", "easel", "pastel", "marker", "crayon", "ink"]


class SharedLettersEnv(QuizEnv):
    """How many different letters two words share."""

    def questions(self, rng):
        a, b = rng.sample(WORDS, 2)
        question = f"How many different letters are in both '{a}' and '{b}'?"
        answer = str(len(set(a) & set(b)))
        return [(question, answer)]

    def hint(self):
        return "List the first word's letters and tick those in the second."

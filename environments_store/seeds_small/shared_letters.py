from spade_env import QuizEnv

WORDS = ["paint", "brush", "color", "canvas", "sketch", "easel", "pastel", "marker", "crayon", "ink"]


class SharedLettersEnv(QuizEnv):
    """How many different letters two words share."""

    def questions(self, rng):
        a, b = rng.sample(WORDS, 2)
        return [(f"How many different letters occur in both '{a}' and '{b}'?",
                 str(len(set(a) & set(b))))]

    def hint(self):
        return "List the distinct letters of the first word and tick those found in the second."

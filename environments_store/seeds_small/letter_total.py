from spade_env import QuizEnv

WORDS = ["river", "mountain", "valley", "forest", "meadow", "canyon", "island", "desert", "glacier", "harbor"]


class LetterTotalEnv(QuizEnv):
    """The total number of letters in a few words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(2, 4))
        listed = ", ".join(shown)
        question = f"How many letters do these words have in all: {listed}?"
        answer = str(sum(len(w) for w in shown))
        return [(question, answer)]

    def hint(self):
        return "Count each word's letters on its own, then add the counts up."

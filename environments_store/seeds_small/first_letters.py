from spade_env import QuizEnv

WORDS = ["house", "engine", "lizard", "paper", "music", "ocean", "tulip", "anchor", "violet"]


class FirstLettersEnv(QuizEnv):
    """The string formed by the first letters of several words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 5))
        listed = ", ".join(shown)
        question = f"Join the first letters of these words: {listed}."
        answer = "".join(w[0] for w in shown)
        return [(question, answer)]

    def hint(self):
        return "Write each word's first letter, left to right, as one word."

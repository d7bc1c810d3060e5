from spade_env import QuizEnv

WORDS = ["house", "engine", "lizard", "paper", "music", "ocean", "tulip", "anchor", "violet"]


class FirstLettersEnv(QuizEnv):
    """The string formed by the first letters of several words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 5))
        return [(f"Join the first letters of these words, in order: {', '.join(shown)}.",
                 "".join(w[0] for w in shown))]

    def hint(self):
        return "Take the opening letter of each word from left to right and write them together."

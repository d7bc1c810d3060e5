from spade_env import QuizEnv

WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow", "clock", "curtain", "bench"]


class MissingWordEnv(QuizEnv):
    """The word left out of a second list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        answer = rng.choice(shown)
        rest = [w for w in shown if w != answer]
        rng.shuffle(rest)
        first = ", ".join(shown)
        second = ", ".join(rest)
        question = f"First list: {first}. Second list: {second}."
        question += " Which word of the first is missing from the second?"
        return [(question, answer)]

    def hint(self):
        return "Cross off matching items pairwise; one remains unmatched."

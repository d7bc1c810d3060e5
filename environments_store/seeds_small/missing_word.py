from spade_env import QuizEnv

WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow", "clock", "curtain", "bench"]


class MissingWordEnv(QuizEnv):
    """The word left out of a second list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        answer = rng.choice(shown)
        rest = [w for w in shown if w != answer]
        rng.shuffle(rest)
        return [(f"First list: {', '.join(shown)}. Second list: {', '.join(rest)}. Which word of the first list is missing from the second?", answer)]

    def hint(self):
        return "Cross off matching items pairwise; one remains unmatched."

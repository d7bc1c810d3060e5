from spade_env import QuizEnv

WORDS = ["river", "stone", "tree", "cloud", "hill", "lake", "field", "road", "bridge", "tower"]


class HyphenJoinEnv(QuizEnv):
    """A few words joined into one with hyphens."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 4))
        listed = ", ".join(shown)
        question = f"Join these words with hyphens, in the order shown: {listed}."
        answer = "-".join(shown)
        return [(question, answer)]

    def hint(self):
        return "Copy the words left to right and put a hyphen between each pair."

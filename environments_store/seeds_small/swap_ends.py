from spade_env import QuizEnv

WORDS = ["planet", "comet", "galaxy", "rocket", "orbit", "meteor", "nebula", "saturn", "crater", "eclipse"]


class SwapEndsEnv(QuizEnv):
    """A word with its first and last letters swapped."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Swap the first and last letters of the word '{word}'."
        answer = word[-1] + word[1:-1] + word[0]
        return [(question, answer)]

    def hint(self):
        return "Keep the inner letters in place and exchange the two ends."

from spade_env import QuizEnv

WORDS = ["planet", "comet", "galaxy", "rocket", "orbit", "meteor", "nebula", "saturn", "crater", "eclipse"]


class SwapEndsEnv(QuizEnv):
    """A word with its first and last letters swapped."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"Swap the first and the last letter of the word '{word}'. What do you get?",
                 word[-1] + word[1:-1] + word[0])]

    def hint(self):
        return "Keep the inner letters where they are and exchange only the two ends."

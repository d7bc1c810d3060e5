from spade_env import QuizEnv, chain, reverse, swap_ends

WORDS = ["jacket", "orchard", "tunnel", "pillow", "anchor", "hammock", "noodle", "lobster"]


class ReverseSwapEndsEnv(QuizEnv):
    """A word spelled backwards, then with its ends swapped."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, reverse, swap_ends)]

    def hint(self):
        return "Work on paper: one step, then the next, on what the first left."

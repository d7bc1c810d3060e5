from spade_env import QuizEnv, chain, odd_letters, swap_ends

WORDS = ["dolphin", "marble", "wizard", "thimble", "scarf", "mustard", "elephant", "saddle"]


class OddLettersSwapEndsEnv(QuizEnv):
    """A word cut to its odd-placed letters, then with its ends swapped."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, odd_letters, swap_ends)]

    def hint(self):
        return "The second step works on what the first step gives, not on the word."

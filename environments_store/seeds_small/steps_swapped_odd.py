from spade_env import QuizEnv, chain, swap_ends, odd_letters

WORDS = ["lantern", "fossil", "cactus", "velvet", "goblin", "mitten", "parrot", "sketch"]


class SwappedOddEnv(QuizEnv):
    """Every other letter of a word with its ends swapped."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, swap_ends, odd_letters)]

    def hint(self):
        return "Swap the ends, write the new word, then keep the 1st, 3rd, 5th letters."

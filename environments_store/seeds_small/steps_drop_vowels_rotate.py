from spade_env import QuizEnv, chain, drop_vowels, rotate

WORDS = ["giraffe", "harvest", "pillow", "hammock", "feather", "cactus", "velvet", "thimble"]


class DropVowelsRotateEnv(QuizEnv):
    """A word without its vowels, then with its first letter moved to the end."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_vowels, rotate)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

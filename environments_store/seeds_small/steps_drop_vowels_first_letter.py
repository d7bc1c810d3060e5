from spade_env import QuizEnv, chain, drop_vowels, first_letter

WORDS = ["jigsaw", "yogurt", "jacket", "wizard", "kettle", "bakery", "cactus", "thimble"]


class DropVowelsFirstLetterEnv(QuizEnv):
    """The first letter of a word without its vowels."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_vowels, first_letter)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

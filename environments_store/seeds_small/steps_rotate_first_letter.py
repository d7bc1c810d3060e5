from spade_env import QuizEnv, chain, rotate, first_letter

WORDS = ["anchor", "mustard", "jacket", "kettle", "glacier", "yogurt", "pumpkin", "bakery"]


class RotateFirstLetterEnv(QuizEnv):
    """The first letter of a word with its first letter moved to the end."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, rotate, first_letter)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

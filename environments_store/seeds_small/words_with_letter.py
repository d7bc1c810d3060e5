from spade_env import QuizEnv

WORDS = ["apple", "grape", "lemon", "mango", "peach", "cherry", "melon", "plum", "banana", "kiwi", "orange"]


class WordsWithLetterEnv(QuizEnv):
    """The words that contain a given letter."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        letter = rng.choice(rng.choice(shown))
        return [(f"Which of these words contain the letter '{letter}': {', '.join(shown)}? List them in the order shown, separated by commas.",
                 [w for w in shown if letter in w])]

    def hint(self):
        return "Check the words one by one and keep those holding the letter, in order."

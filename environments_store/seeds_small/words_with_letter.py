from spade_env import QuizEnv

WORDS = ["apple", "grape", "lemon", "mango", "peach", "cherry", "melon", "plum", "banana", "kiwi", "orange"]


class WordsWithLetterEnv(QuizEnv):
    """The words that contain a given letter."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        letter = rng.choice(rng.choice(shown))
        listed = ", ".join(shown)
        question = f"Which of these words contain '{letter}': {listed}?"
        question += " List them in the order shown, separated by commas."
        answer = [w for w in shown if letter in w]
        return [(question, answer)]

    def hint(self):
        return "Check the words one by one and keep those with the letter."

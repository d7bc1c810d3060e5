from spade_env import QuizEnv

WORDS = ["letter", "banana", "window", "garden", "pepper", "balloon", "kitten", "summer", "apple"]


class DistinctLettersEnv(QuizEnv):
    """How many different letters a word has."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"How many different letters does the word '{word}' have?"
        question += " Count a repeated letter only once."
        answer = str(len(set(word)))
        return [(question, answer)]

    def hint(self):
        return "Go through the word and note each letter the first time it appears."

from spade_env import QuizEnv

WORDS = ["audio", "rhythm", "banana", "strength", "idea", "crypt", "queue", "plant", "ocean", "stretch"]


class MostVowelsEnv(QuizEnv):
    """The word with the most vowels."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        answer = min(shown, key=lambda w: (-sum(c in "aeiou" for c in w), w))
        listed = ", ".join(shown)
        question = f"Which of these words has the most vowels: {listed}?"
        question += " On a tie, give the one first in alphabetical order."
        return [(question, answer)]

    def hint(self):
        return "Count a, e, i, o and u in each word, then compare."

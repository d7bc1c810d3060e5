from spade_env import QuizEnv

WORDS = ["education", "rhythm", "banana", "computer", "sky", "audio", "strength", "piano", "queue", "music"]


class CountVowelsEnv(QuizEnv):
    """Count the vowels of three words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        listed = ", ".join(shown)
        question = f"Count the vowels (a, e, i, o, u) of each word: {listed}."
        question += " Give the three counts in order, separated by commas."
        answer = [str(sum(c in "aeiou" for c in w)) for w in shown]
        return [(question, answer)]

    def hint(self):
        return "Spell out one word at a time and mark its vowels."

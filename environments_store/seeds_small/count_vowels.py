from spade_env import QuizEnv

WORDS = ["education", "rhythm", "banana", "computer", "sky", "audio", "strength", "piano", "queue", "music"]


class CountVowelsEnv(QuizEnv):
    """Count the vowels of three words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        return [(f"How many vowels (a, e, i, o, u) does each of these words have: {', '.join(shown)}? Give the three counts in order, separated by commas.",
                 [str(sum(c in "aeiou" for c in w)) for w in shown])]

    def hint(self):
        return "Spell out one word at a time and mark its vowels before counting them."

from spade_env import QuizEnv

WORDS = ["strength", "banana", "rhythm", "piano", "window", "castle", "jungle", "orange", "planet"]


class CountConsonantsEnv(QuizEnv):
    """Count the consonants of one word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"How many consonants (letters other than a, e, i, o, u) does '{word}' have?"
        answer = str(sum(c not in "aeiou" for c in word))
        return [(question, answer)]

    def hint(self):
        return "Spell the word out and count every letter that is not a vowel."

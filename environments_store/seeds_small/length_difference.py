from spade_env import QuizEnv

WORDS = ["cat", "horse", "elephant", "mouse", "tiger", "rabbit", "crocodile", "goat", "kangaroo"]


class LengthDifferenceEnv(QuizEnv):
    """How many more letters the longer of two words has than the shorter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        others = [w for w in WORDS if len(w) != len(word)] or [w for w in WORDS if w != word]
        other = rng.choice(others)
        question = f"By how many letters do the lengths of '{word}' and '{other}' differ?"
        answer = str(abs(len(word) - len(other)))
        return [(question, answer)]

    def hint(self):
        return "Count the letters of both words and subtract the smaller count."

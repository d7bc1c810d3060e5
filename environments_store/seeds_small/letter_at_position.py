from spade_env import QuizEnv

WORDS = ["mountain", "bridge", "castle", "forest", "lantern", "meadow", "harbor", "valley", "thunder"]


class LetterAtPositionEnv(QuizEnv):
    """The letter at a given position of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        k = rng.randint(1, len(word))
        question = f"What is letter number {k} of the word '{word}'?"
        answer = word[k - 1]
        return [(question, answer)]

    def hint(self):
        return "Spell the word out, numbering its letters from one."

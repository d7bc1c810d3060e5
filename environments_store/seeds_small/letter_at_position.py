from spade_env import QuizEnv

WORDS = ["mountain", "bridge", "castle", "forest", "lantern", "meadow", "harbor", "valley", "thunder"]


class LetterAtPositionEnv(QuizEnv):
    """The letter at a given position of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        k = rng.randint(1, len(word))
        return [(f"What is letter number {k} of the word '{word}'?", word[k - 1])]

    def hint(self):
        return "Spell the word out one letter per line, numbering the lines from one."

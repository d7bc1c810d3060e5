from spade_env import QuizEnv

WORDS = ["violin", "guitar", "piano", "drum", "flute", "trumpet", "cello", "harp", "banjo", "oboe"]


class NthWordEnv(QuizEnv):
    """The word at a given place in a list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(4, 6))
        k = rng.randint(1, len(shown))
        return [(f"Here is a list: {', '.join(shown)}. Which word is number {k} in it, counting from 1?", shown[k - 1])]

    def hint(self):
        return "Point at the words from the left and count until you reach the number."

from spade_env import QuizEnv

WORDS = ["horse", "elephant", "wolf", "rabbit", "giraffe", "mouse", "penguin", "crocodile", "deer"]


class SortByLengthEnv(QuizEnv):
    """Three words written from the shortest to the longest."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        listed = ", ".join(shown)
        question = f"Write these words from shortest to longest: {listed}."
        question += " Equal lengths go alphabetically; separate the words with commas."
        answer = sorted(shown, key=lambda w: (len(w), w))
        return [(question, answer)]

    def hint(self):
        return "Count the letters of each word, then order the words by those counts."

from spade_env import QuizEnv

WORDS = ["violin", "guitar", "piano", "drum", "flute", "trumpet", "cello", "harp", "banjo", "oboe"]


class NthWordEnv(QuizEnv):
    """The word at a given place in a list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(4, 6))
        k = rng.randint(1, len(shown))
        listed = ", ".join(shown)
        question = f"Here is a list: {listed}. Which word is number {k} in it?"
        question += " Count from 1."
        answer = shown[k - 1]
        return [(question, answer)]

    def hint(self):
        return "Count the words from the left until you reach the number."

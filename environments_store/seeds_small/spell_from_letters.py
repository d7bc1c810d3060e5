from spade_env import QuizEnv

WORDS = ["cloud", "river", "mountain", "forest", "meadow", "valley", "island", "desert", "canyon"]


class SpellFromLettersEnv(QuizEnv):
    """The word spelled by a sequence of separated letters."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        letters = list(word)
        shown = rng.choice([", ", " "]).join(letters)
        question = f"Which word do these letters spell, in this order: {shown}?"
        answer = "".join(letters)
        return [(question, answer)]

    def hint(self):
        return "Read the letters from left to right and join them without gaps."

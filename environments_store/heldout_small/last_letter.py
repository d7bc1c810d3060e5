from spade_env import QuizEnv

WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "clock", "mirror", "rug", "stool"]


class LastLetterEnv(QuizEnv):
    """The last letter of a word.

    One word is shown and the agent must name the letter it ends with."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"What is the last letter of the word '{word}'?", word[-1])]

    def hint(self):
        return "Read the word to its end and take the final letter."

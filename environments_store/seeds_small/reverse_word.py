from spade_env import QuizEnv

WORDS = ["garden", "pencil", "rocket", "window", "silver", "planet", "orange", "basket"]


class ReverseWordEnv(QuizEnv):
    """Reverse spelling of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Spell the word '{word}' backwards."
        answer = word[::-1]
        return [(question, answer)]

    def hint(self):
        return "Write the letters down from the last one to the first one."

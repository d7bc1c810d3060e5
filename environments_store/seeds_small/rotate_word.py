from spade_env import QuizEnv

WORDS = ["garden", "pencil", "rocket", "window", "silver", "planet", "orange", "basket", "marble"]


class RotateWordEnv(QuizEnv):
    """A word with its first letter moved to its end."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Move the first letter of '{word}' to the end of the word. What do you get?"
        answer = word[1:] + word[0]
        return [(question, answer)]

    def hint(self):
        return "Drop the opening letter, keep the rest in order, and add that letter at the end."

import random
from spade_env import extract_boxed

WORDS = ["garden", "pencil", "rocket", "window", "silver", "planet", "orange", "basket"]


class ReverseWordEnv:
    """Reverse spelling of a word.

    A word is drawn from a list and the agent must spell it backwards,
    answering once as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.word = rng.choice(WORDS)
        self.answer = self.word[::-1]
        self.done = False
        return f"Spell the word '{self.word}' backwards. Answer as \\boxed{{...}}.", {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {}
        if guess.lower() == self.answer:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def hint(self):
        return "Write the letters down from the last one to the first one."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

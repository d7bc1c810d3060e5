import random
from spade_env import extract_boxed

WORDS = ["mountain", "bridge", "castle", "forest", "lantern", "meadow", "harbor", "valley", "thunder"]


class LetterAtPositionEnv:
    """The letter at a given position of a word.

    A word and a position are drawn and the agent must name the letter found
    there, counting from one, answering once as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.word = rng.choice(WORDS)
        k = rng.randint(1, len(self.word))
        self.answer = self.word[k - 1]
        self.done = False
        return (f"What is letter number {k} of the word '{self.word}'? "
                "Answer with the single letter as \\boxed{...}."), {}

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
        return "Spell the word out one letter per line, numbering the lines from one."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

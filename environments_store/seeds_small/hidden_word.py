from spade_env import extract_boxed
import random  # after spade_env: the designer's prefill opens with that import

WORDS = ["crane", "brick", "flame", "stone", "cloud", "grass", "plant", "shore"]


class HiddenWordEnv:
    """Guess the hidden word from a list."""

    max_turns = 5

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.secret = rng.choice(WORDS)
        self.turn = 0
        self.done = False
        shown = ", ".join(rng.sample(WORDS, len(WORDS)))
        size = len(self.secret)
        text = f"One of these words is hidden: {shown}. It has {size} letters."
        text += f" Guess as \\boxed{{...}}, {self.max_turns} tries."
        return text, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.done = self.turn >= self.max_turns
        text = action if isinstance(action, str) else ""
        guess = extract_boxed(text)
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, False, truncated, {}
        if guess.lower() == self.secret:
            self.done = True
            return "Correct!", 1.0, True, False, {}
        pairs = zip(guess.lower(), self.secret)
        marks = " ".join(c if c == s else "_" for c, s in pairs)
        feedback = f"Wrong. Letters in the right place: {marks}"
        return feedback, 0.0, False, truncated, {}

    def hint(self):
        return "Cross out any candidate disagreeing on revealed positions."

    def oracle(self):
        return f"\\boxed{{{self.secret}}}"

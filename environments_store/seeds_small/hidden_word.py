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
        return (f"One of these words is hidden: {', '.join(rng.sample(WORDS, len(WORDS)))}. It has {len(self.secret)} letters. Guess as \\boxed{{...}}, {self.max_turns} tries."), {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.done = self.turn >= self.max_turns
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, False, truncated, {}
        if guess.lower() == self.secret:
            self.done = True
            return "Correct!", 1.0, True, False, {}
        marks = " ".join(c if c == s else "_" for c, s in zip(guess.lower(), self.secret))
        return f"Wrong. Letters in the right place: {marks}", 0.0, False, truncated, {}

    def hint(self):
        return "Cross out any candidate disagreeing on revealed positions."

    def oracle(self):
        return f"\\boxed{{{self.secret}}}"

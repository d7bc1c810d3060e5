import random

from spade_env import extract_boxed


class HigherLowerEnv:
    """Number guessing with higher/lower feedback and a limited number of guesses.

    A secret integer is drawn from a range whose upper end varies per episode (up
    to 127, so a binary search needs at most 7 guesses). After each guess the
    agent learns whether the secret is higher or lower. Guesses are written as
    \\boxed{N}; a correct guess within the limit solves the episode."""

    max_turns = 8

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.high = rng.randint(60, 127)
        self.secret = rng.randint(1, self.high)
        self.lo, self.hi = 1, self.high  # what the feedback so far allows; used by the oracle
        self.turn = 0
        self.total = 0.0
        self.done = False
        obs = (f"I am thinking of a whole number from 1 to {self.high}. You have "
               f"{self.max_turns} guesses. After each guess I say 'higher' or 'lower'. "
               "Write each guess as \\boxed{N}.")
        return obs, {}

    def _penalty(self):
        # Keep the episode's return at or above -1 however many bad actions come.
        p = max(-0.1, -1.0 - self.total)
        self.total += p
        return p

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.turn >= self.max_turns
        self.done = truncated
        left = self.max_turns - self.turn
        raw = extract_boxed(action if isinstance(action, str) else "")
        try:
            guess = int(raw.strip()) if raw is not None else None
        except ValueError:
            guess = None
        if guess is None or not 1 <= guess <= self.high:
            return (f"Invalid guess: write a whole number from 1 to {self.high} as \\boxed{{N}}. "
                    f"Guesses left: {left}."), self._penalty(), False, truncated, {}
        if guess == self.secret:
            self.done = True
            self.total += 1.0
            return f"Correct! The number was {self.secret}.", 1.0, True, False, {}
        if guess < self.secret:
            self.lo = max(self.lo, guess + 1)
            word = "higher"
        else:
            self.hi = min(self.hi, guess - 1)
            word = "lower"
        return f"{guess} is wrong: the number is {word}. Guesses left: {left}.", 0.0, False, truncated, {}

    def hint(self):
        return ("Keep track of the smallest and largest numbers still possible and always "
                "guess the middle of that interval.")

    def oracle(self):
        return f"\\boxed{{{self.secret}}}"

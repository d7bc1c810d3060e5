import random

from spade_env import extract_boxed


class CodeBreakerEnv:
    """Mastermind-style code breaking with exact and misplaced-digit feedback.

    A secret code of four digits from 1 to 6 (repeats allowed) is hidden. After
    each guess, written as \\boxed{1234}, the agent learns how many digits are
    right and in the right place, and how many are right but in the wrong place.
    It has ten guesses to find the code."""

    max_turns = 10

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.code = "".join(str(rng.randint(1, 6)) for _ in range(4))
        self.turn = 0
        self.total = 0.0
        self.done = False
        obs = ("Break a secret code of 4 digits, each from 1 to 6 (digits may repeat). After "
               "each guess I tell you how many digits are correct and in the correct position, "
               "and how many are correct but in a different position. You have "
               f"{self.max_turns} guesses. Write a guess as \\boxed{{DDDD}}, e.g. four digits.")
        return obs, {}

    def _score(self, guess):
        exact = sum(g == c for g, c in zip(guess, self.code))
        common = sum(min(guess.count(d), self.code.count(d)) for d in "123456")
        return exact, common - exact

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.turn >= self.max_turns
        self.done = truncated
        left = self.max_turns - self.turn
        raw = extract_boxed(action if isinstance(action, str) else "")
        guess = raw.replace(" ", "") if raw is not None else ""
        if len(guess) != 4 or any(ch not in "123456" for ch in guess):
            penalty = max(-0.1, -1.0 - self.total)
            self.total += penalty
            return (f"Invalid guess: write exactly four digits from 1 to 6 inside \\boxed{{}}. "
                    f"Guesses left: {left}."), penalty, False, truncated, {}
        if guess == self.code:
            self.done = True
            self.total += 1.0
            return f"Correct! The code was {self.code}.", 1.0, True, False, {}
        exact, near = self._score(guess)
        return (f"{guess}: {exact} correct in position, {near} correct in a different position. "
                f"Guesses left: {left}."), 0.0, False, truncated, {}

    def hint(self):
        return ("Spend the first guesses learning which digits occur (e.g. 1122, 3344, 5566), "
                "then only play codes consistent with every piece of feedback so far.")

    def oracle(self):
        return f"\\boxed{{{self.code}}}"

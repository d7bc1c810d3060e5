import random
from spade_env import extract_boxed

WORDS = ["banana", "letter", "coffee", "giraffe", "pepper", "balloon", "address", "committee", "bottle", "cheese"]


class CountLetterEnv:
    """Count how often a letter occurs in each of three words.

    Three words and one of their letters are drawn; the agent must give the
    letter's count in each word, in order, separated by commas, as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 3)
        letter = rng.choice("".join(shown))
        self.answer = [str(w.count(letter)) for w in shown]
        self.done = False
        return (f"How many times does the letter '{letter}' occur in each of these words: "
                f"{', '.join(shown)}? Answer with the three counts in order, separated by commas, "
                "as \\boxed{...}."), {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {}
        if [c.strip() for c in guess.split(",")] == self.answer:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def hint(self):
        return "Take the words one at a time and tally the letter as you spell each out."

    def oracle(self):
        return f"\\boxed{{{', '.join(self.answer)}}}"

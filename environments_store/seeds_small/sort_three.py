import random
from spade_env import extract_boxed

WORDS = ["zebra", "monkey", "bear", "wolf", "eagle", "snake", "otter", "moose", "camel", "hawk", "lion"]


class SortThreeEnv:
    """Sort three words alphabetically.

    Three words are shown and the agent must list them in alphabetical order,
    separated by commas, answering once as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 3)
        self.answer = sorted(shown)
        self.done = False
        return (f"Sort these words alphabetically: {', '.join(shown)}. "
                "Answer with the sorted words separated by commas as \\boxed{...}."), {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {}
        if [w.strip().lower() for w in guess.split(",")] == self.answer:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def hint(self):
        return "Find the word that comes first, then the next among those left."

    def oracle(self):
        return f"\\boxed{{{', '.join(self.answer)}}}"

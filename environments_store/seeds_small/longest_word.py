import random
from spade_env import extract_boxed

WORDS = ["cat", "horse", "elephant", "dog", "rabbit", "giraffe", "owl", "penguin", "fox", "dolphin", "tortoise", "bee"]


class LongestWordEnv:
    """The longest or shortest of three words.

    Three words are shown and the agent must name the longest one, or the shortest;
    ties go to the word that comes first alphabetically. Answer as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 3)
        which = rng.choice(["longest", "shortest"])
        # The tie rule keeps the answer well defined for any word list.
        self.answer = min(shown, key=lambda w: (-len(w) if which == "longest" else len(w), w))
        self.done = False
        return (f"Which of these words is the {which}: {', '.join(shown)}? If several are equally "
                "long, give the one first in alphabetical order. Answer as \\boxed{...}."), {}

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
        return "Tally characters per candidate; on ties, go alphabetically."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

import random
from spade_env import extract_boxed

WORDS = ["apple", "cherry", "melon", "grape", "lemon", "peach", "plum", "mango", "kiwi", "olive", "banana"]


class FirstAlphabeticalEnv:
    """First or last of two words in alphabetical order.

    Two words are shown and the agent must name the one that comes first, or
    the one that comes last, in dictionary order, as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 2)
        which = rng.choice(["first", "last"])
        self.answer = min(shown) if which == "first" else max(shown)
        self.done = False
        return (f"Which of these words comes {which} in alphabetical order: {', '.join(shown)}? "
                "Answer with the word as \\boxed{...}."), {}

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
        return "Compare initial letters; break ties on subsequent letters."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

import random
from spade_env import extract_boxed

WORDS = ["house", "engine", "lizard", "paper", "music", "ocean", "tulip", "anchor", "violet"]


class FirstLettersEnv:
    """The string formed by the first letters of several words.

    Three to five words are shown in order and the agent must join their first
    letters into one string, answering once as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, rng.randint(3, 5))
        self.answer = "".join(w[0] for w in shown)
        self.done = False
        return (f"Join the first letters of these words, in order: {', '.join(shown)}. "
                "Answer with the joined letters as \\boxed{...}."), {}

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
        return "Take the opening letter of each word from left to right and write them together."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

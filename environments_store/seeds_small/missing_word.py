import random
from spade_env import extract_boxed

WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow", "clock", "curtain", "bench"]


class MissingWordEnv:
    """The word left out of a second list.

    Five words are shown, then the same words shuffled with one left out; the
    agent must name the missing word, answering once as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 5)
        self.answer = rng.choice(shown)
        rest = [w for w in shown if w != self.answer]
        rng.shuffle(rest)
        self.done = False
        return (f"First list: {', '.join(shown)}. Second list: {', '.join(rest)}. Which word of "
                "the first list is missing from the second? Answer as \\boxed{...}."), {}

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
        return "Cross off matching items pairwise; one remains unmatched."

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

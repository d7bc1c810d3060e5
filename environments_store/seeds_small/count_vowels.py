import random
from spade_env import extract_boxed

WORDS = ["education", "rhythm", "banana", "computer", "sky", "audio", "strength", "piano", "queue", "music"]


class CountVowelsEnv:
    """Count the vowels of three words.

    Three words are shown and the agent must give how many vowels (a, e, i, o, u;
    not y) each one has, in order, separated by commas, as \\boxed{...}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 3)
        self.answer = [str(sum(c in "aeiou" for c in w)) for w in shown]
        self.done = False
        return (f"How many vowels (a, e, i, o, u) does each of these words have: {', '.join(shown)}? "
                "Answer with the three counts in order, separated by commas, "
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
        return "Spell out one word at a time and mark its vowels before counting them."

    def oracle(self):
        return f"\\boxed{{{', '.join(self.answer)}}}"

import random
from spade_env import extract_boxed

WORDS = ["red", "blue", "green", "yellow", "purple", "black", "white", "brown", "pink", "gray", "orange", "silver"]


class NextInListEnv:
    """The word that follows another in a list.

    Six words are shown once; in each of three rounds, name the word right after a given one."""

    max_turns = 3

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        shown = rng.sample(WORDS, 6)
        self.questions = [(f"Which word comes right after '{shown[i]}'?", shown[i + 1])
                          for i in rng.sample(range(5), 3)]
        self.turn = 0
        return f"Remember: {', '.join(shown)}. {self.questions[0][0]} Answer as \\boxed{{...}}.", {}

    def step(self, action):
        if self.turn >= self.max_turns:
            return "The episode is over.", 0.0, True, False, {}
        guess = extract_boxed(action if isinstance(action, str) else "")
        answer = self.questions[self.turn][1]
        self.turn += 1
        if guess is None:
            reward, note = -0.1, "No \\boxed{...} answer found."
        else:
            reward, note = (1 / 3, "Correct!") if guess.lower() == answer else (0.0, "Wrong.")
        if self.turn >= self.max_turns:
            return f"{note} That was the last question.", reward, True, False, {}
        return f"{note} {self.questions[self.turn][0]}", reward, False, False, {}

    def hint(self):
        return "Locate the named item and move one position rightward."

    def oracle(self):
        return f"\\boxed{{{self.questions[min(self.turn, 2)][1]}}}"

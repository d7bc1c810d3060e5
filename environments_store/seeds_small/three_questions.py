import random
from spade_env import extract_boxed

WORDS = ["summer", "winter", "autumn", "spring", "rain", "snow", "breeze", "storm", "sunny", "frost"]


class ThreeQuestionsEnv:
    """Three questions about one word.

    Its length, first letter and last letter are asked in random order, one per turn, 1/3 each."""

    max_turns = 3

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        word = rng.choice(WORDS)
        self.questions = rng.sample([("its length", str(len(word))), ("its first letter", word[0]),
                                     ("its last letter", word[-1])], 3)
        self.turn = 0
        return f"The word: '{word}'. What is {self.questions[0][0]}? Answer as \\boxed{{...}}.", {}

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
        return f"{note} What is {self.questions[self.turn][0]}?", reward, False, False, {}

    def hint(self):
        return "Count the letters of the word, then look at both of its ends."

    def oracle(self):
        return f"\\boxed{{{self.questions[min(self.turn, 2)][1]}}}"

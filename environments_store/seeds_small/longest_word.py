from spade_env import QuizEnv

WORDS = ["cat", "horse", "elephant", "dog", "rabbit", "giraffe", "owl", "penguin", "fox", "dolphin", "tortoise", "bee"]


class LongestWordEnv(QuizEnv):
    """The longest or shortest of three words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        which = rng.choice(["longest", "shortest"])
        sign = -1 if which == "longest" else 1
        # The tie rule keeps the answer well defined for any word list.
        answer = min(shown, key=lambda w: (sign * len(w), w))
        listed = ", ".join(shown)
        question = f"Which of these words is the {which}: {listed}?"
        question += " On a tie, give the one first in alphabetical order."
        return [(question, answer)]

    def hint(self):
        return "Tally characters per candidate; on ties, go alphabetically."

from spade_env import QuizEnv

WORDS = ["cat", "horse", "elephant", "dog", "rabbit", "giraffe", "owl", "penguin", "fox", "dolphin", "tortoise", "bee"]


class LongestWordEnv(QuizEnv):
    """The longest or shortest of three words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        which = rng.choice(["longest", "shortest"])
        # The tie rule keeps the answer well defined for any word list.
        answer = min(shown, key=lambda w: (-len(w) if which == "longest" else len(w), w))
        return [(f"Which of these words is the {which}: {', '.join(shown)}? If several are equally long, give the one first in alphabetical order.", answer)]

    def hint(self):
        return "Tally characters per candidate; on ties, go alphabetically."

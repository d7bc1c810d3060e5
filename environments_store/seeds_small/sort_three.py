from spade_env import QuizEnv

WORDS = ["zebra", "monkey", "bear", "wolf", "eagle", "snake", "otter", "moose", "camel", "hawk", "lion"]


class SortThreeEnv(QuizEnv):
    """Sort three words alphabetically."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        listed = ", ".join(shown)
        question = f"Sort these words alphabetically: {listed}."
        question += " Give the sorted words separated by commas."
        answer = sorted(shown)
        return [(question, answer)]

    def hint(self):
        return "Pick the word that comes first, then the next of the rest."

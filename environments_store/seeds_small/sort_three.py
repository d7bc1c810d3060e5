from spade_env import QuizEnv

WORDS = ["zebra", "monkey", "bear", "wolf", "eagle", "snake", "otter", "moose", "camel", "hawk", "lion"]


class SortThreeEnv(QuizEnv):
    """Sort three words alphabetically."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        return [(f"Sort these words alphabetically: {', '.join(shown)}. Give the sorted words separated by commas.", sorted(shown))]

    def hint(self):
        return "Find the word that comes first, then the next among those left."

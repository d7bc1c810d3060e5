from spade_env import QuizEnv

WORDS = ["monday", "tuesday", "friday", "sunday", "morning", "evening", "noon", "midnight", "dawn", "dusk"]


class ReverseListEnv(QuizEnv):
    """A list of words in reverse order."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 4))
        return [(f"Write these words in reverse order, separated by commas: {', '.join(shown)}.",
                 shown[::-1])]

    def hint(self):
        return "Start from the end of the list and walk back to its beginning."

from spade_env import QuizEnv

WORDS = ["monday", "tuesday", "friday", "sunday", "morning", "evening", "noon", "midnight", "dawn", "dusk"]


class ReverseListEnv(QuizEnv):
    """A list of words in reverse order."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 4))
        listed = ", ".join(shown)
        question = f"Write these words in reverse order: {listed}."
        question += " Separate them with commas."
        answer = shown[::-1]
        return [(question, answer)]

    def hint(self):
        return "Start from the end of the list and walk back to the start."

from spade_env import QuizEnv, chain, sort_letters, first_letter

WORDS = ["thunder", "pocket", "yellow", "sunset", "rhythm", "monster", "twist", "puzzle"]


class SortedFirstEnv(QuizEnv):
    """The earliest letter of a word once its letters are sorted."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, sort_letters, first_letter)]

    def hint(self):
        return "After sorting, the first letter is the earliest in the alphabet."

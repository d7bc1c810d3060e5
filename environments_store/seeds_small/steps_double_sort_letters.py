from spade_env import QuizEnv, chain, double, sort_letters

WORDS = ["engine", "napkin", "elephant", "kitchen", "harvest", "vintage", "octopus", "dolphin"]


class DoubleSortLettersEnv(QuizEnv):
    """A word written twice, then with its letters sorted."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, double, sort_letters)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

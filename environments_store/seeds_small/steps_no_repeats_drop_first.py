from spade_env import QuizEnv, chain, no_repeats, drop_first

WORDS = ["octopus", "hammock", "noodle", "feather", "engine", "falcon", "ribbon", "giraffe"]


class NoRepeatsDropFirstEnv(QuizEnv):
    """A word without repeated letters, then without its first letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, no_repeats, drop_first)]

    def hint(self):
        return "Do the steps in order and write the word down after each one."

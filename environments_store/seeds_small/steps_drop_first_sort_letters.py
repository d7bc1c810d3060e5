from spade_env import QuizEnv, chain, drop_first, sort_letters

WORDS = ["sponge", "cabbage", "walrus", "velvet", "zipper", "orchard", "jacket", "falcon"]


class DropFirstSortLettersEnv(QuizEnv):
    """A word without its first letter, then with its letters sorted."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_first, sort_letters)]

    def hint(self):
        return "Write the word after the first step before doing the second."

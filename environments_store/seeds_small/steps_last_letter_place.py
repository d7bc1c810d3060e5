from spade_env import QuizEnv, chain, last_letter, letter_place

WORDS = ["honey", "cloud", "stamp", "forest", "bridge", "meadow", "pencil", "bottom"]


class LastLetterPlaceEnv(QuizEnv):
    """The alphabet place of a word"s last letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, last_letter, letter_place)]

    def hint(self):
        return "Look only at the final letter, then count from a."

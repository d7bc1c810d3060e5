from spade_env import QuizEnv, chain, first_letter, letter_place

WORDS = ["orange", "tiger", "violin", "harbor", "kitten", "lemon", "quiet", "walnut"]


class FirstLetterPlaceEnv(QuizEnv):
    """The alphabet place of a word"s first letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, first_letter, letter_place)]

    def hint(self):
        return "Count through the alphabet from a until you reach the letter."

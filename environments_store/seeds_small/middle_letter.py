from spade_env import QuizEnv

WORDS = ["castle", "dragon", "knight", "wizard", "tower", "shield", "sword", "crown", "throne", "armor"]


class MiddleLetterEnv(QuizEnv):
    """The middle letter of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"What is the middle letter of the word '{word}'? If it has an even number of letters, give the left one of the two in the middle.",
                 word[(len(word) - 1) // 2])]

    def hint(self):
        return "Count the letters, halve the count, and walk in from the start."

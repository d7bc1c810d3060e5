from spade_env import QuizEnv

WORDS = ["castle", "dragon", "knight", "wizard", "tower", "shield", "sword", "crown", "throne", "armor"]


class MiddleLetterEnv(QuizEnv):
    """The middle letter of a word."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"What is the middle letter of the word '{word}'?"
        question += " With an even count, give the left one of the two."
        answer = word[(len(word) - 1) // 2]
        return [(question, answer)]

    def hint(self):
        return "Count the letters, halve the count, walk in from the start."

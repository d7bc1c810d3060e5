from spade_env import QuizEnv

WORDS = ["elephant", "triangle", "computer", "blanket", "harvest", "painter", "cabinet", "monster"]


class EverySecondLetterEnv(QuizEnv):
    """The letters of a word at odd places, joined."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Take the letters at places 1, 3, 5 and so on of the word '{word}'."
        question += " Join them into one string."
        answer = word[::2]
        return [(question, answer)]

    def hint(self):
        return "Keep the first letter, skip the next, and keep going to the end."

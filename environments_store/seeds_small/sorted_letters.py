from spade_env import QuizEnv

WORDS = ["listen", "silent", "stone", "notes", "heart", "earth", "night", "thing", "below", "elbow"]


class SortedLettersEnv(QuizEnv):
    """The letters of a word in alphabetical order."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Write the letters of '{word}' in alphabetical order."
        question += " Write them as one word."
        answer = "".join(sorted(word))
        return [(question, answer)]

    def hint(self):
        return "Write the earliest letter of the alphabet first, and repeat."

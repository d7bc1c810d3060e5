from spade_env import QuizEnv

WORDS = ["listen", "silent", "stone", "notes", "heart", "earth", "night", "thing", "below", "elbow"]


class SortedLettersEnv(QuizEnv):
    """The letters of a word in alphabetical order."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"Write the letters of the word '{word}' in alphabetical order, as one word.",
                 "".join(sorted(word)))]

    def hint(self):
        return "Find the earliest letter of the alphabet first, write it, and repeat."

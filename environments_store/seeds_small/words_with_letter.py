from spade_env import QuizEnv

WORDS = ["apple", "grape", "lemon", "mango", "peach", "cherry", "melon", "plum", "banana", "kiwi", "orange"]


class WordsWithLetterEnv(QuizEnv):
    """How many words contain a given letter.

    Five words and a letter from one of them are shown; the agent must say how
    many of the five words contain that letter."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 5)
        letter = rng.choice(rng.choice(shown))
        return [(f"How many of these words contain the letter '{letter}': {', '.join(shown)}?",
                 str(sum(letter in w for w in shown)))]

    def hint(self):
        return "Check the words one by one and keep a tally of those holding the letter."

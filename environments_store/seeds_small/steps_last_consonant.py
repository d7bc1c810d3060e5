from spade_env import QuizEnv, chain, drop_vowels, reverse, first_letter

WORDS = ["banana", "piano", "tomato", "radio", "cargo", "studio", "volcano", "zebra"]


class LastConsonantEnv(QuizEnv):
    """The last consonant of a word, found in three steps."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [chain(word, drop_vowels, reverse, first_letter)]

    def hint(self):
        return "Without the vowels, the first letter of the reversed word is the last consonant."

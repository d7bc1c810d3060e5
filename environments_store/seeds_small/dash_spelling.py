from spade_env import QuizEnv

WORDS = ["candle", "lantern", "torch", "lamp", "beacon", "flame", "spark", "glow", "ember"]


class DashSpellingEnv(QuizEnv):
    """Spell a word with a dash between its letters."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Spell the word '{word}' with a dash between each two letters."
        answer = "-".join(word)
        return [(question, answer)]

    def hint(self):
        return "Write the letters in order and put a dash after each letter except the last."

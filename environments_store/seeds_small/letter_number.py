from spade_env import QuizEnv

WORDS = ["garden", "pocket", "winter", "candle", "marble", "jacket", "violin", "basket", "forest"]


class LetterNumberEnv(QuizEnv):
    """The place of a letter in the alphabet."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        letter = rng.choice(word)
        question = f"At which place in the alphabet is the letter '{letter}'? Count 'a' as 1."
        answer = str("abcdefghijklmnopqrstuvwxyz".index(letter) + 1)
        return [(question, answer)]

    def hint(self):
        return "Say the alphabet from the start and count until you reach the letter."

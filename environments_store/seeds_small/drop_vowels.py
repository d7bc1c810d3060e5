from spade_env import QuizEnv

WORDS = ["butter", "garden", "window", "market", "pencil", "candle", "basket", "ladder", "silver", "tunnel"]


class DropVowelsEnv(QuizEnv):
    """A word with its vowels taken out."""

    def questions(self, rng):
        word = rng.choice([w for w in WORDS if set(w) - set("aeiou")] or ["rhythm"])
        return [(f"Remove every vowel (a, e, i, o, u) from the word '{word}'. What is left?",
                 "".join(c for c in word if c not in "aeiou"))]

    def hint(self):
        return "Go letter by letter and keep only the consonants, in their order."

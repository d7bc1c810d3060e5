from spade_env import QuizEnv

WORDS = ["butter", "garden", "window", "market", "pencil", "candle", "basket", "ladder", "silver", "tunnel"]


class DropVowelsEnv(QuizEnv):
    """A word with its vowels taken out.

    One word is shown; the agent must write it without the letters a, e, i, o
    and u."""

    def questions(self, rng):
        word = rng.choice([w for w in WORDS if set(w) - set("aeiou")] or ["rhythm"])
        return [(f"Remove every vowel (a, e, i, o, u) from the word '{word}'. What is left?",
                 "".join(c for c in word if c not in "aeiou"))]

    def hint(self):
        return "Go letter by letter and keep only the consonants, in their order."

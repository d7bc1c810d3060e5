from spade_env import QuizEnv

WORDS = ["butter", "garden", "window", "market", "pencil", "candle", "basket", "ladder", "silver", "tunnel"]


class DropVowelsEnv(QuizEnv):
    """A word with its vowels taken out."""

    def questions(self, rng):
        words = [w for w in WORDS if set(w) - set("aeiou")] or ["rhythm"]
        word = rng.choice(words)
        question = f"Remove the vowels (a, e, i, o, u) from '{word}'."
        answer = "".join(c for c in word if c not in "aeiou")
        return [(question, answer)]

    def hint(self):
        return "Go letter by letter and keep only the consonants."

from spade_env import QuizEnv

WORDS = ["banana", "letter", "coffee", "pepper", "balloon", "cheese", "puzzle", "bottle", "window"]


class WithoutLetterEnv(QuizEnv):
    """A word with every copy of one of its letters removed."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        letter = rng.choice(word)
        question = f"Remove every '{letter}' from the word '{word}'. What is left?"
        answer = word.replace(letter, "")
        return [(question, answer)]

    def hint(self):
        return "Copy the word letter by letter, skipping each copy of the given letter."

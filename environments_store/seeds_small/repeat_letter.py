from spade_env import QuizEnv

WORDS = ["kitten", "marble", "jungle", "pocket", "zipper", "violin", "basket", "window", "garden"]


class RepeatLetterEnv(QuizEnv):
    """A letter of a word written a given number of times as one string."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        letter = rng.choice(word)
        n = rng.randint(2, 5)
        question = f"Write the letter '{letter}' {n} times in a row, with no spaces."
        answer = letter * n
        return [(question, answer)]

    def hint(self):
        return "Write the letter once, then again until you have the count asked."

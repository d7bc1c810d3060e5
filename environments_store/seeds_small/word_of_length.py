from spade_env import QuizEnv

WORDS = ["bread", "cheese", "butter", "honey", "yogurt", "rice", "pasta", "soup", "noodle", "pear"]


class WordOfLengthEnv(QuizEnv):
    """The word that has a given number of letters."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        others = [w for w in WORDS if len(w) != len(word)]
        shown = rng.sample(others, min(3, len(others))) + [word]
        rng.shuffle(shown)
        question = f"Which of these words has exactly {len(word)} letters: {', '.join(shown)}?"
        return [(question, word)]

    def hint(self):
        return "Count the letters of each word and pick the one matching the number."

from spade_env import QuizEnv

WORDS = ["summer", "winter", "autumn", "spring", "rain", "snow", "breeze", "storm", "sunny", "frost"]


class ThreeQuestionsEnv(QuizEnv):
    """Three questions about one word."""

    max_turns = 3

    def questions(self, rng):
        word = rng.choice(WORDS)
        asked = rng.sample([("its length", str(len(word))), ("its first letter", word[0]),
                            ("its last letter", word[-1])], 3)
        asked = [(f"What is {what}?", answer) for what, answer in asked]
        asked[0] = (f"The word: '{word}'. {asked[0][0]}", asked[0][1])
        return asked

    def hint(self):
        return "Count the letters of the word, then look at both of its ends."

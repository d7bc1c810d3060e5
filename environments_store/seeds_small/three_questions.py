from spade_env import QuizEnv

WORDS = ["summer", "winter", "autumn", "spring", "rain", "snow", "breeze", "storm", "sunny", "frost"]


class ThreeQuestionsEnv(QuizEnv):
    """Three questions about one word."""

    max_turns = 3

    def questions(self, rng):
        word = rng.choice(WORDS)
        facts = [("its length", str(len(word)))]
        facts.append(("its first letter", word[0]))
        facts.append(("its last letter", word[-1]))
        asked = []
        for what, answer in rng.sample(facts, 3):
            asked.append((f"What is {what}?", answer))
        question, answer = asked[0]
        asked[0] = (f"The word: '{word}'. {question}", answer)
        return asked

    def hint(self):
        return "Count the letters of the word, then look at both of its ends."

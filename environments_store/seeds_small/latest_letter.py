from spade_env import QuizEnv

WORDS = ["planet", "garden", "bridge", "castle", "market", "forest", "candle", "window", "jacket"]


class LatestLetterEnv(QuizEnv):
    """The letter of a word that comes last in the alphabet."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        question = f"Which letter of the word '{word}' comes last in the alphabet?"
        answer = max(word)
        return [(question, answer)]

    def hint(self):
        return "Compare the letters pairwise and keep the one nearer to z."

from spade_env import QuizEnv

WORDS = ["sun", "moon", "cloud", "planet", "comet", "star", "galaxy", "orbit", "meteor", "sky"]


class WordLengthEnv(QuizEnv):
    """The number of letters in one word.

    One word is shown and the agent must say how many letters it has."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"How many letters are in the word '{word}'?", str(len(word)))]

    def hint(self):
        return "Count the letters one at a time from the first to the last."

from spade_env import QuizEnv

WORDS = ["red", "blue", "green", "yellow", "purple", "orange", "black", "white", "pink", "brown"]


class WordCountEnv(QuizEnv):
    """The number of words in a list.

    Two to seven colour words are shown and the agent must say how many there are."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(2, 7))
        return [(f"How many words are in this list: {', '.join(shown)}?", str(len(shown)))]

    def hint(self):
        return "Count the commas and add one."

from spade_env import QuizEnv

WORDS = ["apple", "river", "candle", "pepper", "window", "garden", "rocket", "pillow", "basket", "violet"]


class RepeatWordEnv(QuizEnv):
    """Say a word back.

    One word is shown and the agent must write it back unchanged: the floor of the
    suite, what an agent that follows the answer format gets right."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        return [(f"Write the word '{word}' back exactly.", word)]

    def hint(self):
        return "Copy the quoted word letter by letter."

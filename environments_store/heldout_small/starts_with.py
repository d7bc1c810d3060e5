from spade_env import QuizEnv

WORDS = ["bread", "cheese", "grape", "honey", "lemon", "melon", "olive", "peach", "salad", "toast"]


class StartsWithEnv(QuizEnv):
    """The word that starts with a given letter.

    Three words with different first letters are shown and the agent must name the
    one that starts with the letter asked for."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)  # the words' first letters all differ
        word = rng.choice(shown)
        return [(f"Which of these words starts with '{word[0]}': {', '.join(shown)}?", word)]

    def hint(self):
        return "Look only at the first letter of each word."

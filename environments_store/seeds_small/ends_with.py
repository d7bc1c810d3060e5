from spade_env import QuizEnv

WORDS = ["bread", "cheese", "grape", "honey", "lemon", "melon", "olive", "peach", "salad", "toast"]


class EndsWithEnv(QuizEnv):
    """The one shown word that ends with a given letter."""

    def questions(self, rng):
        word = rng.choice(WORDS)
        others = [w for w in WORDS if w[-1] != word[-1]]
        shown = rng.sample(others, min(3, len(others))) + [word]
        shown = rng.sample(shown, len(shown))
        listed = ", ".join(shown)
        question = f"Which of these words ends with the letter '{word[-1]}': {listed}?"
        answer = word
        return [(question, answer)]

    def hint(self):
        return "Look only at the final letter of each word."

from spade_env import QuizEnv

WORDS = ["copper", "silver", "iron", "nickel", "zinc", "cobalt", "tin", "gold", "lead", "chrome"]


class PlaceInListEnv(QuizEnv):
    """The place a named word takes in a shown list."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(4, 6))
        word = rng.choice(shown)
        listed = ", ".join(shown)
        question = f"Here is a list: {listed}. At which place, counting from 1, is '{word}'?"
        answer = str(shown.index(word) + 1)
        return [(question, answer)]

    def hint(self):
        return "Count the words from the left until you meet the named one."

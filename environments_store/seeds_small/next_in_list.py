from spade_env import QuizEnv

WORDS = ["red", "blue", "green", "yellow", "purple", "black", "white", "brown", "pink", "gray", "orange", "silver"]


class NextInListEnv(QuizEnv):
    """The word that follows another in a list."""

    max_turns = 3

    def questions(self, rng):
        shown = rng.sample(WORDS, 6)
        asked = []
        for i in rng.sample(range(5), 3):
            question = f"Which word comes right after '{shown[i]}'?"
            asked.append((question, shown[i + 1]))
        listed = ", ".join(shown)
        question, answer = asked[0]
        asked[0] = (f"Remember: {listed}. {question}", answer)
        return asked

    def hint(self):
        return "Locate the named item and move one position rightward."

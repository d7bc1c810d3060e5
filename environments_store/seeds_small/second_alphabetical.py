from spade_env import QuizEnv

WORDS = ["apple", "cherry", "melon", "grape", "lemon", "peach", "mango", "olive", "banana"]


class SecondAlphabeticalEnv(QuizEnv):
    """The word that comes second in alphabetical order."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 4))
        listed = ", ".join(shown)
        question = f"Which of these words comes second in alphabetical order: {listed}?"
        answer = sorted(shown)[1]
        return [(question, answer)]

    def hint(self):
        return "Find the alphabetically first word, then the earliest of the rest."

from spade_env import QuizEnv

WORDS = ["apple", "cherry", "melon", "grape", "lemon", "peach", "plum", "mango", "kiwi", "olive", "banana"]


class FirstAlphabeticalEnv(QuizEnv):
    """First or last of two words in alphabetical order."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 2)
        which = rng.choice(["first", "last"])
        answer = min(shown) if which == "first" else max(shown)
        listed = ", ".join(shown)
        question = f"Which word comes {which} alphabetically: {listed}?"
        return [(question, answer)]

    def hint(self):
        return "Compare initial letters; break ties on subsequent letters."

from spade_env import QuizEnv

WORDS = ["banana", "letter", "coffee", "giraffe", "pepper", "balloon", "bottle", "cheese"]


class LetterInAllEnv(QuizEnv):
    """How often a letter occurs in several words taken together."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 4)
        letter = rng.choice("".join(shown))
        listed = ", ".join(shown)
        question = f"How many times does '{letter}' occur in these words in total: {listed}?"
        answer = str(sum(w.count(letter) for w in shown))
        return [(question, answer)]

    def hint(self):
        return "Tally the letter word by word and add the tallies into one total."

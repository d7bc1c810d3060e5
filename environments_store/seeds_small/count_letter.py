from spade_env import QuizEnv

WORDS = ["banana", "letter", "coffee", "giraffe", "pepper", "balloon", "address", "committee", "bottle", "cheese"]


class CountLetterEnv(QuizEnv):
    """Count how often a letter occurs in each of three words."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 3)
        letter = rng.choice("".join(shown))
        listed = ", ".join(shown)
        question = f"How often does '{letter}' occur in each of: {listed}?"
        question += " Give the three counts in order, separated by commas."
        answer = [str(w.count(letter)) for w in shown]
        return [(question, answer)]

    def hint(self):
        return "Take the words one at a time and tally the letter."

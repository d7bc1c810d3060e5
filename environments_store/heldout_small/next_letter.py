from spade_env import QuizEnv

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


class NextLetterEnv(QuizEnv):
    """The letter after another in the alphabet.

    A letter from a to y is shown and the agent must name the one that follows it."""

    def questions(self, rng):
        i = rng.randrange(len(ALPHABET) - 1)
        return [(f"Which letter comes right after '{ALPHABET[i]}' in the alphabet?",
                 ALPHABET[i + 1])]

    def hint(self):
        return "Say the alphabet from 'a' up to the letter shown, then one more."

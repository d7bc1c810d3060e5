from spade_env import QuizEnv


class AddSmallEnv(QuizEnv):
    """The sum of two small numbers.

    Two numbers from 1 to 9 are shown and the agent must give their sum."""

    def questions(self, rng):
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        return [(f"What is {a} + {b}?", str(a + b))]

    def hint(self):
        return "Start from the larger number and count up by the smaller one."

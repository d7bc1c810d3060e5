import random

from spade_env import extract_boxed, math_equal


class NextTermEnv:
    """Integer sequence puzzle: find the hidden rule and give the next term.

    The sequence comes from one of several rule families (quadratic, affine
    recurrence, two interleaved arithmetic sequences, Fibonacci-like sums, an
    alternating add/multiply pattern). Seven terms are shown; the agent answers
    the eighth in one turn with \\boxed{N}."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.done = False
        family = rng.choice(["quadratic", "affine", "interleaved", "fibonacci", "alternating"])
        n_terms = 8
        if family == "quadratic":
            a, b, c = rng.randint(1, 4), rng.randint(-5, 6), rng.randint(-9, 9)
            seq = [a * n * n + b * n + c for n in range(1, n_terms + 1)]
        elif family == "affine":
            r, c, x = rng.randint(2, 3), rng.randint(-4, 5), rng.randint(1, 6)
            seq = [x]
            while len(seq) < n_terms:
                seq.append(r * seq[-1] + c)
        elif family == "interleaved":
            s1, d1, s2, d2 = rng.randint(1, 20), rng.randint(2, 7), rng.randint(30, 60), -rng.randint(1, 5)
            seq = [s1 + d1 * (i // 2) if i % 2 == 0 else s2 + d2 * (i // 2) for i in range(n_terms)]
        elif family == "fibonacci":
            seq = [rng.randint(1, 5), rng.randint(2, 9)]
            k = rng.randint(0, 2)
            while len(seq) < n_terms:
                seq.append(seq[-1] + seq[-2] + k)
        else:
            add, mul, x = rng.randint(2, 9), rng.randint(2, 3), rng.randint(1, 5)
            seq = [x]
            while len(seq) < n_terms:
                seq.append(seq[-1] + add if len(seq) % 2 == 1 else seq[-1] * mul)
        self.answer = seq[-1]
        shown = ", ".join(str(v) for v in seq[:-1])
        obs = (f"Here are the first seven terms of an integer sequence: {shown}, ...\n"
               "What is the next term? Answer with \\boxed{N}.")
        return obs, {"family": family}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {"correct": False}
        if math_equal(guess, str(self.answer)):
            return "Correct!", 1.0, True, False, {"correct": True}
        return "Incorrect.", 0.0, True, False, {"correct": False}

    def hint(self):
        return ("Look at the differences and ratios between consecutive terms, and also at "
                "every second term on its own; one of these views shows a simple pattern.")

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

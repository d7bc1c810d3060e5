import random
import string

from spade_env import extract_boxed


class StringPipelineEnv:
    """String transformation pipeline: apply a list of edits to a word in order.

    A random lowercase word goes through four operations chosen from: reverse,
    rotate left by k, Caesar shift by k, swap adjacent pairs, and upper-case the
    vowels. The agent must give the final string exactly (case-sensitive) in one
    turn with \\boxed{STRING}."""

    max_turns = 1

    def _apply(self, op, k, s):
        if op == "reverse":
            return s[::-1]
        if op == "rotate":
            k %= len(s)
            return s[k:] + s[:k]
        if op == "caesar":
            out = []
            for ch in s:
                base = "a" if ch.islower() else "A"
                out.append(chr((ord(ch) - ord(base) + k) % 26 + ord(base)))
            return "".join(out)
        if op == "swap_pairs":
            chars = list(s)
            for i in range(0, len(chars) - 1, 2):
                chars[i], chars[i + 1] = chars[i + 1], chars[i]
            return "".join(chars)
        return "".join(ch.upper() if ch.lower() in "aeiou" else ch for ch in s)

    def _describe(self, op, k):
        return {
            "reverse": "Reverse the string.",
            "rotate": f"Rotate the string left by {k} positions (the first {k} characters move to the end).",
            "caesar": f"Shift every letter {k} places forward in the alphabet (z wraps to a, case kept).",
            "swap_pairs": "Swap characters 1 and 2, 3 and 4, and so on (an odd last character stays).",
            "vowels_up": "Make every vowel (a, e, i, o, u) upper-case.",
        }[op]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.done = False
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(7, 9)))
        ops = rng.sample(["reverse", "rotate", "caesar", "swap_pairs", "vowels_up"], 4)
        steps = [(op, rng.randint(1, 5) if op in ("rotate", "caesar") else 0) for op in ops]
        s = word
        for op, k in steps:
            s = self._apply(op, k, s)
        self.answer = s
        obs = (f"Start with the string '{word}'. Apply these steps in order:\n"
               + "\n".join(f"{i + 1}. {self._describe(op, k)}" for i, (op, k) in enumerate(steps))
               + "\nGive the final string exactly, case included, as \\boxed{STRING}.")
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {"correct": False}
        if guess.strip().strip("'\"") == self.answer:
            return "Correct!", 1.0, True, False, {"correct": True}
        return "Incorrect.", 0.0, True, False, {"correct": False}

    def hint(self):
        return ("Write the string down after every single step and index its characters, "
                "rather than doing several steps in your head at once.")

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

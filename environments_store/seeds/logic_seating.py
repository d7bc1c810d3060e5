import itertools
import random

from spade_env import extract_boxed


class SeatingLogicEnv:
    """Seating-order logic puzzle: deduce who sits where from a set of clues.

    Five people sit in a row of seats numbered 1 to 5 from left to right. The
    agent gets a minimal set of clues (adjacency, order, fixed seats, distances)
    that determines exactly one arrangement, and must answer in one turn with the
    full order as \\boxed{Name1, Name2, Name3, Name4, Name5}."""

    max_turns = 1

    POOL = ["Ana", "Ben", "Cleo", "Dev", "Ema", "Finn", "Gia", "Hugo", "Ines", "Jon"]

    def _holds(self, clue, order):
        kind, a, b = clue
        pa = order.index(a) + 1
        if kind == "seat":
            return pa == b
        if kind == "not_end":
            return pa not in (1, len(order))
        pb = order.index(b) + 1
        return {
            "left_of": pa + 1 == pb,
            "somewhere_left": pa < pb,
            "not_adjacent": abs(pa - pb) > 1,
            "one_between": abs(pa - pb) == 2,
        }[kind]

    def _text(self, clue):
        kind, a, b = clue
        return {
            "seat": f"{a} sits in seat {b}.",
            "not_end": f"{a} does not sit at either end of the row.",
            "left_of": f"{a} sits immediately to the left of {b}.",
            "somewhere_left": f"{a} sits somewhere to the left of {b}.",
            "not_adjacent": f"{a} and {b} do not sit next to each other.",
            "one_between": f"Exactly one person sits between {a} and {b}.",
        }[kind]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.done = False
        people = rng.sample(self.POOL, 5)
        self.order = people[:]
        rng.shuffle(self.order)
        perms = list(itertools.permutations(people))
        clues = []
        while True:
            kind = rng.choice(["seat", "not_end", "left_of", "somewhere_left",
                               "not_adjacent", "one_between", "somewhere_left", "left_of"])
            a, b = rng.sample(people, 2)
            clue = (kind, a, self.order.index(a) + 1 if kind == "seat" else b)
            if not self._holds(clue, self.order) or clue in clues:
                continue
            clues.append(clue)
            if sum(all(self._holds(c, p) for c in clues) for p in perms) == 1:
                break
        # Drop clues that are not needed, so every remaining clue matters.
        for clue in list(clues):
            rest = [c for c in clues if c != clue]
            if sum(all(self._holds(c, p) for c in rest) for p in perms) == 1:
                clues = rest
        rng.shuffle(clues)
        obs = (
            f"Five people ({', '.join(sorted(people))}) sit in a row of seats numbered 1 to 5 "
            "from left to right. Clues:\n"
            + "\n".join(f"{i + 1}. {self._text(c)}" for i, c in enumerate(clues))
            + "\nGive the seating order from seat 1 to seat 5, as "
            "\\boxed{Name1, Name2, Name3, Name4, Name5}."
        )
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        guess = extract_boxed(action if isinstance(action, str) else "")
        if guess is None:
            return "No \\boxed{...} answer found.", -0.1, True, False, {"correct": False}
        names = [n.strip().lower() for n in guess.replace(";", ",").split(",") if n.strip()]
        if names == [n.lower() for n in self.order]:
            return "Correct!", 1.0, True, False, {"correct": True}
        return "Incorrect.", 0.0, True, False, {"correct": False}

    def hint(self):
        return ("Start from clues that fix a seat or tie two people together as a block, place "
                "those first, then test the remaining positions against every clue.")

    def oracle(self):
        return "\\boxed{" + ", ".join(self.order) + "}"

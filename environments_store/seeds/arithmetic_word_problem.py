import random

from spade_env import extract_boxed, math_equal


class ShoppingChangeEnv:
    """Multi-step shopping arithmetic: compute the change after offers and a coupon.

    A shopper buys several items at integer prices. One item has a "every Nth one
    free" offer and a coupon takes a flat amount off when the bill after the offer
    exceeds a threshold. The agent must work out the change from a given payment
    and answer in one turn with \\boxed{N}."""

    max_turns = 1

    NAMES = ["Ada", "Bruno", "Chiara", "Dmitri", "Esi", "Farid", "Greta", "Hiro"]
    ITEMS = ["notebook", "pen", "mug", "lamp", "scarf", "candle", "plant", "puzzle",
             "towel", "bowl"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.done = False
        name = rng.choice(self.NAMES)
        items = rng.sample(self.ITEMS, 3)
        prices = [rng.randint(2, 15) for _ in items]
        qtys = [rng.randint(2, 9) for _ in items]
        nth = rng.randint(3, 5)
        paid_first = qtys[0] - qtys[0] // nth
        subtotal = paid_first * prices[0] + sum(p * q for p, q in zip(prices[1:], qtys[1:]))
        threshold = subtotal + rng.choice([-12, -7, -3, 4, 9])  # coupon applies about half the time
        coupon = rng.choice([5, 8, 10])
        total = subtotal - (coupon if subtotal > threshold else 0)
        payment = (total // 50 + 1 + rng.randint(0, 1)) * 50
        self.answer = payment - total
        lines = [f"{name} buys {q} {it}s at ${p} each." for it, p, q in zip(items, prices, qtys)]
        obs = (
            " ".join(lines)
            + f" The shop has an offer on {items[0]}s: every {nth}th one is free"
            + f" (so for every {nth} {items[0]}s you pay for {nth - 1})."
            + f" A coupon takes ${coupon} off the bill if the bill after the offer is more than ${threshold}."
            + f" {name} pays with ${payment}. How many dollars of change does {name} get?"
            + " Answer with \\boxed{N} where N is a whole number."
        )
        return obs, {}

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
        return ("First count how many of the offered item are actually paid for, then add up "
                "the subtotal, check the coupon condition strictly, and subtract from the payment.")

    def oracle(self):
        return f"\\boxed{{{self.answer}}}"

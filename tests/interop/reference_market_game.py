# Reference-code multi-turn game form: `random` and `re` used without being imported,
# __init__ with a max_turns parameter that calls reset(), reset(seed) seeding the global
# generator, \boxed{} actions, and no solution(): feasibility stays unverified.


class MarketStallGameEnv:
    """Sell apples at a market stall: raise or lower the price each day to find the best price."""

    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.cash = 0
        self.price = 0
        self.reset()

    def reset(self, seed=None):
        if seed is not None:
            random.seed(seed)
        self.turn_count = 0
        self.cash = 0
        self.price = random.randint(3, 6)
        self.demand = random.randint(14, 20)
        self.best = max(p * (self.demand - p) for p in range(self.demand + 1))
        return (f"Find the price with the best takings of a day. Price: {self.price}. "
                "Actions: \\boxed{hold}, \\boxed{raise}, \\boxed{lower}"), {}

    def step(self, action):
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        if not m:
            return "Use \\boxed{action} format.", 0.0, False, self.turn_count >= self.max_turns, {}
        cmd = m.group(1).strip().lower()
        if cmd == "raise":
            self.price += 1
        elif cmd == "lower":
            self.price = max(1, self.price - 1)
        sold = max(0, self.demand - self.price)
        if sold * self.price == self.best:
            return f"Sold {sold}. Takings {sold * self.price}. Best price found!", 1.0, True, False, {}
        truncated = self.turn_count >= self.max_turns
        return f"Sold {sold}. Takings {sold * self.price}. Price {self.price}.", 0.0, False, truncated, {}

    def close(self):
        pass

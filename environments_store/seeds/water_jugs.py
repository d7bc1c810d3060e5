import random
from collections import deque

from spade_env import extract_boxed


class WaterJugsEnv:
    """Two-jug measuring puzzle: get an exact amount of water into one jug.

    Two jugs with different integer capacities start empty. Each turn the agent
    fills a jug from the tap, empties it, or pours one into the other until the
    source is empty or the target full. Commands are \\boxed{fill A},
    \\boxed{empty B}, \\boxed{pour A B}, ... The episode is solved as soon as either
    jug holds exactly the target amount."""

    max_turns = 16

    def _moves(self, state):
        a, b = state
        ca, cb = self.caps
        pour_ab = min(a, cb - b)
        pour_ba = min(b, ca - a)
        return {
            "fill A": (ca, b), "fill B": (a, cb), "empty A": (0, b), "empty B": (a, 0),
            "pour A B": (a - pour_ab, b + pour_ab), "pour B A": (a + pour_ba, b - pour_ba),
        }

    def _plan(self, start):
        """Shortest command list from start to any state holding the target."""
        prev, queue = {start: None}, deque([start])
        while queue:
            s = queue.popleft()
            if self.target in s:
                path = []
                while prev[s] is not None:
                    s, move = prev[s]
                    path.append(move)
                return path[::-1]
            for move, nxt in self._moves(s).items():
                if nxt not in prev:
                    prev[nxt] = (s, move)
                    queue.append(nxt)
        return None

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        while True:
            ca, cb = rng.sample(range(3, 14), 2)
            self.caps = (ca, cb)
            self.target = rng.randint(1, max(ca, cb) - 1)
            if self.target in (ca, cb):
                continue
            plan = self._plan((0, 0))
            if plan is not None and 4 <= len(plan) <= 10:
                break
        self.state, self.turn, self.total, self.done = (0, 0), 0, 0.0, False
        obs = (f"Jug A holds up to {ca} litres and jug B up to {cb} litres; both start empty. "
               f"Get exactly {self.target} litres into either jug. Each turn send one command: "
               "\\boxed{fill X}, \\boxed{empty X} or \\boxed{pour X Y}, where X and Y are A or B "
               "(pouring stops when X is empty or Y is full). "
               f"You have {self.max_turns} commands.")
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.turn >= self.max_turns
        self.done = truncated
        raw = extract_boxed(action if isinstance(action, str) else "")
        command = " ".join(raw.replace("->", " ").replace(",", " ").split()) if raw else ""
        command = " ".join(w.lower() if w.lower() in ("fill", "empty", "pour") else w.upper()
                           for w in command.split())
        moves = self._moves(self.state)
        if command not in moves:
            penalty = max(-0.1, -1.0 - self.total)
            self.total += penalty
            return ("Unknown command. Use \\boxed{fill A}, \\boxed{empty B}, \\boxed{pour A B} "
                    f"and so on. Jugs: A={self.state[0]}, B={self.state[1]}."), penalty, False, truncated, {}
        self.state = moves[command]
        a, b = self.state
        if self.target in self.state:
            self.done = True
            self.total += 1.0
            return f"A={a}, B={b}: you measured {self.target} litres!", 1.0, True, False, {}
        return f"Done: {command}. Jugs now: A={a}, B={b}.", 0.0, False, truncated, {}

    def hint(self):
        return ("Repeatedly fill one jug and pour it into the other, emptying the other when "
                "it is full; track both amounts after each step and try both jugs as the source.")

    def oracle(self):
        plan = self._plan(self.state)
        return f"\\boxed{{{plan[0]}}}" if plan else "\\boxed{fill A}"

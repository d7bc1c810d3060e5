import itertools
import random
from collections import deque

from spade_env import extract_boxed


class HanoiRestackEnv:
    """Tower of Hanoi from a scrambled legal position: restack every disk on peg C.

    Four disks (1 smallest to 4 largest) start in a random legal arrangement on
    pegs A, B and C. Each turn the agent moves the top disk of one peg onto
    another with \\boxed{X Y}; a larger disk may never sit on a smaller one. The
    episode is solved when all four disks are on peg C."""

    max_turns = 20
    PEGS = "ABC"
    DISKS = 4

    def _stacks(self, state):
        # state[d] is the peg of disk d+1; a peg's stack lists disks bottom to top.
        return {p: sorted((d + 1 for d, q in enumerate(state) if q == p), reverse=True)
                for p in self.PEGS}

    def _move(self, state, src, dst):
        stacks = self._stacks(state)
        if src == dst or not stacks[src]:
            return None
        disk = stacks[src][-1]
        if stacks[dst] and stacks[dst][-1] < disk:
            return None
        new = list(state)
        new[disk - 1] = dst
        return tuple(new)

    def _plan(self, start):
        goal = ("C",) * self.DISKS
        prev, queue = {start: None}, deque([start])
        while queue:
            s = queue.popleft()
            if s == goal:
                path = []
                while prev[s] is not None:
                    s, move = prev[s]
                    path.append(move)
                return path[::-1]
            for src, dst in itertools.permutations(self.PEGS, 2):
                nxt = self._move(s, src, dst)
                if nxt is not None and nxt not in prev:
                    prev[nxt] = (s, f"{src} {dst}")
                    queue.append(nxt)
        return []

    def _show(self):
        stacks = self._stacks(self.state)
        return "\n".join(f"{p}: {' '.join(map(str, stacks[p])) or '(empty)'}" for p in self.PEGS)

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        while True:
            self.state = tuple(rng.choice(self.PEGS) for _ in range(self.DISKS))
            if 6 <= len(self._plan(self.state)) <= 14:
                break
        self.turn, self.total, self.done = 0, 0.0, False
        obs = ("Tower of Hanoi with disks 1 (smallest) to 4 (largest). Pegs, listed bottom to top:\n"
               + self._show()
               + "\nMove all disks onto peg C. Each turn move the top disk of peg X onto peg Y "
               "with \\boxed{X Y} (X, Y in A, B, C); never put a larger disk on a smaller one. "
               f"You have {self.max_turns} moves.")
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.turn >= self.max_turns
        self.done = truncated
        raw = extract_boxed(action if isinstance(action, str) else "") or ""
        pegs = [ch for ch in raw.upper() if ch in self.PEGS]
        nxt = self._move(self.state, pegs[0], pegs[1]) if len(pegs) == 2 else None
        if nxt is None:
            penalty = max(-0.1, -1.0 - self.total)
            self.total += penalty
            return ("Illegal or unreadable move; write \\boxed{X Y} moving a top disk onto an "
                    "empty peg or a larger disk.\n" + self._show()), penalty, False, truncated, {}
        self.state = nxt
        if self.state == ("C",) * self.DISKS:
            self.done = True
            self.total += 1.0
            return "All disks are on peg C. Solved!", 1.0, True, False, {}
        return f"Moved {pegs[0]} to {pegs[1]}.\n" + self._show(), 0.0, False, truncated, {}

    def hint(self):
        return ("Work from the largest disk down: find the largest disk not yet on C, clear "
                "everything above it and on C onto the third peg, then move it.")

    def oracle(self):
        plan = self._plan(self.state)
        return f"\\boxed{{{plan[0]}}}" if plan else "\\boxed{A C}"

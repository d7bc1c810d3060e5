import random
from collections import deque

from spade_env import extract_boxed


class MazeKeysEnv:
    """Grid maze with a locked door: fetch the key, then reach the goal.

    The agent moves on a 7x7 map with walls (#). The only way to the goal (G)
    goes through a locked door (D), which opens once the agent has picked up the
    key (K) by stepping on it. The full map is shown every turn; each move is
    \\boxed{up|down|left|right}. Reaching G solves the episode."""

    max_turns = 20
    SIZE = 7
    MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}

    def _bfs(self, start, has_key):
        """Distance map over (cell, has_key) states from a start state."""
        dist = {(start, has_key): 0}
        prev = {}
        queue = deque([(start, has_key)])
        while queue:
            pos, key = queue.popleft()
            for name, (dr, dc) in self.MOVES.items():
                nxt = (pos[0] + dr, pos[1] + dc)
                if not self._free(nxt, key):
                    continue
                state = (nxt, key or nxt == self.key)
                if state not in dist:
                    dist[state] = dist[(pos, key)] + 1
                    prev[state] = ((pos, key), name)
                    queue.append(state)
        return dist, prev

    def _free(self, cell, key):
        r, c = cell
        if not (0 <= r < self.SIZE and 0 <= c < self.SIZE) or cell in self.walls:
            return False
        return cell != self.door or key

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        cells = [(r, c) for r in range(self.SIZE) for c in range(self.SIZE)]
        while True:
            # A full wall line with the door as its only gap makes the key necessary.
            line, vertical = rng.randint(2, self.SIZE - 3), rng.random() < 0.5
            barrier = [(r, line) if vertical else (line, r) for r in range(self.SIZE)]
            self.door = rng.choice(barrier)
            side = (lambda cell: cell[1] < line) if vertical else (lambda cell: cell[0] < line)
            if rng.random() < 0.5:
                near, far = side, (lambda cell, s=side: not s(cell))
            else:
                near, far = (lambda cell, s=side: not s(cell)), side
            self.walls = {c for c in barrier if c != self.door}
            open_cells = [c for c in cells if c not in self.walls and c != self.door]
            self.walls |= set(rng.sample(open_cells, rng.randint(5, 9)))
            free = [c for c in open_cells if c not in self.walls]
            here = [c for c in free if near(c)]
            there = [c for c in free if far(c)]
            if len(here) < 2 or not there:
                continue
            self.start, self.key = rng.sample(here, 2)
            self.goal = rng.choice(there)
            dist, _ = self._bfs(self.start, False)
            best = min((d for (p, _k), d in dist.items() if p == self.goal), default=None)
            if best is not None and 6 <= best <= 16:
                break
        self.pos, self.has_key = self.start, False
        self.turn, self.total, self.done = 0, 0.0, False
        obs = ("Find your way to G on this map. # is a wall, D a locked door that opens only "
               "once you carry the key K (step on K to pick it up), A is you.\n"
               + self._render()
               + "\nMove one cell per turn with \\boxed{DIRECTION}, DIRECTION one of up, down, "
               f"left, right. You have {self.max_turns} moves.")
        return obs, {}

    def _render(self):
        rows = []
        for r in range(self.SIZE):
            row = ""
            for c in range(self.SIZE):
                cell = (r, c)
                if cell == self.pos:
                    row += "A"
                elif cell in self.walls:
                    row += "#"
                elif cell == self.goal:
                    row += "G"
                elif cell == self.key and not self.has_key:
                    row += "K"
                elif cell == self.door and not self.has_key:
                    row += "D"
                else:
                    row += "."
            rows.append(row)
        status = "You carry the key." if self.has_key else "You do not have the key."
        return "\n".join(rows) + "\n" + status

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        truncated = self.turn >= self.max_turns
        self.done = truncated
        raw = extract_boxed(action if isinstance(action, str) else "")
        move = raw.strip().lower() if raw is not None else ""
        if move not in self.MOVES:
            penalty = max(-0.1, -1.0 - self.total)
            self.total += penalty
            return ("Invalid move: answer with \\boxed{up}, \\boxed{down}, \\boxed{left} or "
                    "\\boxed{right}.\n" + self._render()), penalty, False, truncated, {}
        dr, dc = self.MOVES[move]
        nxt = (self.pos[0] + dr, self.pos[1] + dc)
        if not self._free(nxt, self.has_key):
            return "Blocked; you stay where you are.\n" + self._render(), 0.0, False, truncated, {}
        self.pos = nxt
        if nxt == self.key:
            self.has_key = True
        if nxt == self.goal:
            self.done = True
            self.total += 1.0
            return "You reached the goal!", 1.0, True, False, {}
        return f"Moved {move}.\n" + self._render(), 0.0, False, truncated, {}

    def hint(self):
        return ("Plan two legs before moving: the shortest route from A to K, then from K "
                "through the door D to G; rows count downward, so 'up' decreases the row.")

    def oracle(self):
        dist, prev = self._bfs(self.pos, self.has_key)
        targets = [s for s in dist if s[0] == self.goal]
        if not targets:
            return "\\boxed{up}"
        state = min(targets, key=lambda s: dist[s])
        move = "up"
        while state in prev:
            state, move = prev[state]
        return f"\\boxed{{{move}}}"

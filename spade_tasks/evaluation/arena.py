"""Single-player TextArena games played as multi-turn episodes, scored by the game's reward.

Each item is one (game, seed). Every turn the model sees TextArena's standard game
system prompt and the game's accumulated observation (its default LLM observation
wrapper), as TextArena's own agents do. The response of an item is its list of
actions; ``score`` replays them in a fresh game with the same seed, so scoring needs no
model. Only games that need no download (no nltk corpora) and draw randomness only in
``reset`` are used, which is what makes the replay exact.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

from spade_tasks.evaluation.suites import Item, Suite, register_suite

GAMES = ("GuessTheNumber-v0", "TowerOfHanoi-v0", "Mastermind-v0", "FrozenLake-v0", "LightsOut-v0")
SEEDS_PER_GAME = 10
"""Seeds per game in the full suite (50 episodes)."""


@contextmanager
def _own_random_state():
    # TextArena seeds and draws from the global ``random`` module; keep the caller's
    # stream untouched by evaluation.
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


class TextArena(Suite):
    name = "textarena"
    multi_turn = True
    requires = ("textarena",)
    package = "textarena"

    def load(self, limit, seed):
        self.check_available()
        per = SEEDS_PER_GAME if limit is None else -(-limit // len(GAMES))
        items = [Item(self.name, f"{game}/{seed + i}", game, {"game": game, "seed": seed + i})
                 for i in range(per) for game in GAMES]
        return items if limit is None else items[:limit]

    def start(self, item: Item):
        """A fresh game of ``item``, reset with its seed."""
        import textarena

        env = textarena.make(item.data["game"])
        with _own_random_state():
            env.reset(num_players=1, seed=item.data["seed"])
        return env

    def play(self, items, backend, params, max_turns=None):
        """Play every item's game; one generate call per turn for all games still running.
        ``max_turns`` caps turns on top of each game's own limit (an unfinished game scores 0)."""
        from textarena.agents.basic_agents import STANDARD_GAME_PROMPT

        envs = [self.start(it) for it in items]
        actions: list[list[str]] = [[] for _ in items]
        live = list(range(len(items)))
        turn = 0
        while live and (max_turns is None or turn < max_turns):
            convs = [[{"role": "system", "content": STANDARD_GAME_PROMPT},
                      {"role": "user", "content": envs[i].get_observation()[1]}] for i in live]
            outs = backend.generate(convs, params)
            still = []
            for i, out in zip(live, outs):
                actions[i].append(out.text)
                with _own_random_state():
                    done, _ = envs[i].step(out.text)
                if not done:
                    still.append(i)
            live, turn = still, turn + 1
        return actions

    def score(self, item, response):
        """The game's reward for the replayed ``response`` (a list of actions), clipped to
        [0, 1]; 1.0 is a win, a game left unfinished scores 0."""
        env = self.start(item)
        done = False
        for action in response:
            with _own_random_state():
                done, _ = env.step(action)
            if done:
                break
        if not done:
            return 0.0
        rewards, _ = env.close()
        return min(1.0, max(0.0, float(rewards[0])))


register_suite(TextArena())

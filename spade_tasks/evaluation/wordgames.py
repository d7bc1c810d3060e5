"""Small word and number games held out from training: a suite the 135M agent scores on.

The reasoning-gym suite asks more than the embedded 135M agent can do (it answers
none of it, before or after training), so it cannot tell two of its checkpoints apart.
These games are of the size the small seeds are (``environments_store/seeds_small``),
with rules none of them has, from saying a word back (what following the answer format
alone earns) to naming the word that starts with a letter. Item ``game/seed`` is the
first question of ``environments_store/heldout_small/<game>.py`` reset with ``seed``,
asked as the rollout asks it: the agent's system prompt, the question, and the answer
opened with ``\\boxed{`` (``configs/cpu-tiny.yaml``'s ``rollout.prefill``). It is scored
by the game's own ``step``: 1 for a right answer, 0 otherwise.

The programs are the project's own, reviewed files (like reasoning-gym's generators),
so they run in this process; designed programs never do.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from spade_tasks.config import REPO_ROOT
from spade_tasks.evaluation.suites import Item, Suite, register_suite
from spade_tasks.llm.base import with_prefill
from spade_tasks.sandbox.harness import ENVLIB

GAMES_DIR = REPO_ROOT / "environments_store" / "heldout_small"
SEEDS_PER_GAME = 16
"""Items per game in the full suite (8 games, 128 items)."""
PREFILL = "\\boxed{"
MAX_NEW_TOKENS = 48
"""The answer itself, as the small config's rollout caps it: past the box, text is not read."""


def _envlib():
    """``spade_env``, the library the programs import, loaded from its file once."""
    if "spade_env" not in sys.modules:
        spec = importlib.util.spec_from_file_location("spade_env", ENVLIB / "spade_env.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["spade_env"] = module
        spec.loader.exec_module(module)
    return sys.modules["spade_env"]


@lru_cache(maxsize=None)
def game_classes(folder: Path = GAMES_DIR) -> dict[str, type]:
    """Each program's ``QuizEnv`` subclass, by file stem, in name order."""
    quiz = _envlib().QuizEnv
    out: dict[str, type] = {}
    for path in sorted(folder.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"spade_heldout_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[path.stem] = next(v for v in vars(module).values()
                              if isinstance(v, type) and issubclass(v, quiz) and v is not quiz)
    return out


class WordGames(Suite):
    name = "word-games"

    def load(self, limit, seed):
        games = game_classes()
        # Round-robin over games, so a small limit still spans them.
        pairs = [(g, seed + i) for i in range(SEEDS_PER_GAME) for g in games]
        items = []
        for game, s in pairs if limit is None else pairs[:limit]:
            env = games[game]()
            question, _ = env.reset(s)
            items.append(Item(self.name, f"{game}/{s}", question,
                              {"game": game, "seed": s, "answer": env.oracle()}))
        return items

    def conversation(self, item):
        from spade_tasks.rollout import agent_system_prompt

        return with_prefill([{"role": "system", "content": agent_system_prompt()},
                             {"role": "user", "content": item.prompt}], PREFILL)

    def play(self, items, backend, params, max_turns=None):
        params = replace(params, max_new_tokens=min(params.max_new_tokens, MAX_NEW_TOKENS))
        return super().play(items, backend, params, max_turns)

    def score(self, item, response):
        env = game_classes()[item.data["game"]]()
        env.reset(item.data["seed"])
        _, reward, *_ = env.step(PREFILL + (response or ""))
        return float(reward >= 1.0)


register_suite(WordGames())

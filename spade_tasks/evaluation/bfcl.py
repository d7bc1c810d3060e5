"""BFCL v4 multi-turn (base category), with the ``bfcl-eval`` package's data, function
backends and checker.

Inference follows BFCL's prompting handler: BFCL's default system prompt (classic
style, Python call format, JSON function docs), then per user turn the model answers
with ``[f(a=1), g(b='x')]`` call lists, each executed on BFCL's backend classes, its
results fed back as ``tool`` messages, until it answers with no decodable call (at most
BFCL's limit of 20 steps per user turn). ``score`` is BFCL's
``multi_turn_checker``: after every turn, the state of the model's backend instances must
equal the ground truth's, and the ground truth's execution results must appear among
the model's.

Safety: BFCL ``eval``s call strings in-process. We never pass it model text: a response
is parsed with ``ast``, and only calls of the involved classes' public methods with
literal arguments are re-serialised (``name(repr(arg), key=repr(value))``) and executed.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import uuid
from functools import cache
from importlib import resources

from spade_tasks import pysyntax
from spade_tasks.evaluation.suites import Item, Suite, register_suite, seeded_subset

CATEGORY = "multi_turn_base"
STEP_LIMIT = 20
"""BFCL's MAXIMUM_STEP_LIMIT: model steps per user turn before the episode is cut."""


class DecodeError(ValueError):
    """Model text that is not a list of plain function calls with literal arguments."""


def decode_calls(text: str) -> list[tuple[str, str]]:
    """``(name, canonical call string)`` of each call in a BFCL Python-format answer.

    Mirrors BFCL's ``default_decode_execute_prompting`` (strip backticks, add missing
    brackets), but accepts only ``name(literal, key=literal)`` calls, which are safe to
    hand to BFCL's ``eval``.
    """
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text += "]"
    try:
        tree = pysyntax.parse(text, mode="eval").body
    except (SyntaxError, ValueError) as e:
        raise DecodeError(f"not a call list: {e}") from None
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    calls = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise DecodeError("every element must be a plain function call")
        try:
            args = [repr(ast.literal_eval(a)) for a in node.args]
            kwargs = [f"{k.arg}={ast.literal_eval(k.value)!r}" for k in node.keywords if k.arg]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise DecodeError(f"non-literal argument in a call to {node.func.id}") from None
        if len(kwargs) != len(node.keywords):
            raise DecodeError("**kwargs are not allowed")
        calls.append((node.func.id, f"{node.func.id}({', '.join(args + kwargs)})"))
    return calls


def system_prompt(functions: list[dict]) -> str:
    """BFCL's default system prompt (``DEFAULT_SYSTEM_PROMPT_FORMAT``) for ``functions``."""
    from bfcl_eval.constants.default_prompts import (
        OUTPUT_FORMAT_MAPPING,
        PARAM_TYPE_MAPPING,
        PROMPT_STYLE_TEMPLATES,
        PROMPT_TEMPLATE_MAPPING,
    )

    style = PROMPT_STYLE_TEMPLATES["classic"]
    return PROMPT_TEMPLATE_MAPPING["plaintext"].format(
        persona=style["persona"], task=style["task"],
        tool_call_format=style["tool_call_no_tag"].format(
            output_format=OUTPUT_FORMAT_MAPPING["python"], param_types=PARAM_TYPE_MAPPING["python"]),
        multiturn_behavior=style["multiturn_behavior"],
        available_tools=style["available_tools"].format(
            format="json", functions=json.dumps(functions, indent=4)),
    )


@cache
def _func_docs(class_name: str) -> tuple[dict, ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    path = resources.files("bfcl_eval") / "data" / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


@cache
def _public_methods(class_name: str) -> frozenset[str]:
    import importlib

    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
    return frozenset(n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_"))


def _read_jsonl(*parts: str) -> list[dict]:
    path = resources.files("bfcl_eval").joinpath("data", *parts)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class _Instances:
    """BFCL keeps backend instances in its executor module's globals, keyed by a model
    name; a fresh name per use isolates episodes, and ``drop`` frees them."""

    def __init__(self):
        self.name = f"spade_{uuid.uuid4().hex[:12]}"

    def drop(self) -> None:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

        for key in [k for k in vars(multi_turn_utils) if k.startswith(self.name)]:
            delattr(multi_turn_utils, key)


class BFCLMultiTurn(Suite):
    name = "bfcl-multi-turn"
    multi_turn = True
    requires = ("bfcl_eval",)
    package = "bfcl-eval"

    def load(self, limit, seed):
        self.check_available()
        entries = _read_jsonl(f"BFCL_v4_{CATEGORY}.json")
        answers = {a["id"]: a["ground_truth"] for a in _read_jsonl("possible_answer", f"BFCL_v4_{CATEGORY}.json")}
        items = []
        for i in seeded_subset(len(entries), limit, seed):
            e = entries[i]
            # As BFCL's populate_test_cases_with_predefined_functions: every function
            # of every involved class is offered.
            functions = [f for c in e["involved_classes"] for f in _func_docs(c)]
            items.append(Item(self.name, e["id"], e["question"][0][0]["content"], {
                "entry": e, "functions": functions, "ground_truth": answers[e["id"]],
                "allowed": frozenset().union(*(_public_methods(c) for c in e["involved_classes"])),
            }))
        return items

    def _execute(self, item: Item, calls: list[tuple[str, str]], inst: _Instances) -> list[str]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        e = item.data["entry"]
        known = [c for n, c in calls if n in item.data["allowed"]]
        results = iter(execute_multi_turn_func_call(
            known, e["initial_config"], e["involved_classes"], inst.name, e["id"])[0])
        # An unknown name gets the error BFCL's eval would give, without evaluating it.
        return [next(results) if n in item.data["allowed"]
                else f"Error during execution: name '{n}' is not defined" for n, _ in calls]

    def play(self, items, backend, params, max_turns=None):
        """Raw model texts per user turn per step (``list[list[str]]`` for each item).

        ``max_turns`` caps model calls per episode on top of BFCL's step limit; an
        episode cut before its last user turn fails, as a force-quit one does in BFCL."""
        inst = [_Instances() for _ in items]
        msgs = [[{"role": "system", "content": system_prompt(it.data["functions"])},
                 *copy.deepcopy(it.data["entry"]["question"][0])] for it in items]
        texts: list[list[list[str]]] = [[[]] for _ in items]
        turn, steps, calls_made = [0] * len(items), [0] * len(items), [0] * len(items)
        live = list(range(len(items)))
        try:
            while live:
                outs = backend.generate([msgs[i] for i in live], params)
                still = []
                for i, out in zip(live, outs):
                    it = items[i]
                    msgs[i].append({"role": "assistant", "content": out.text})
                    texts[i][-1].append(out.text)
                    calls_made[i] += 1
                    if max_turns is not None and calls_made[i] >= max_turns:
                        continue
                    try:
                        calls = decode_calls(out.text)
                    except DecodeError:
                        calls = []
                    if calls:
                        for (_, call), result in zip(calls, self._execute(it, calls, inst[i])):
                            msgs[i].append({"role": "tool", "name": call, "content": result})
                        steps[i] += 1
                        if steps[i] <= STEP_LIMIT:
                            still.append(i)
                        # else: BFCL force-quits the whole episode; the missing turns fail it.
                        continue
                    turn[i], steps[i] = turn[i] + 1, 0
                    questions = it.data["entry"]["question"]
                    if turn[i] < len(questions):
                        msgs[i].extend(copy.deepcopy(questions[turn[i]]))
                        texts[i].append([])
                        still.append(i)
                live = still
        finally:
            for x in inst:
                x.drop()
        return texts

    def score(self, item, response):
        """BFCL's multi-turn check of ``response`` (raw texts per turn per step): 1.0 or 0.0."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
            multi_turn_checker,
            multi_turn_irrelevance_checker,
        )

        ground_truth = item.data["ground_truth"]
        if len(response) != len(ground_truth):
            return 0.0  # BFCL: a force-terminated episode fails
        decoded = []
        for turn in response:
            steps = []
            for text in turn:
                # As BFCL's runner: undecodable or empty steps are skipped.
                try:
                    calls = [c for n, c in decode_calls(text) if n in item.data["allowed"]]
                except DecodeError:
                    continue
                if calls:
                    steps.append(calls)
            decoded.append(steps)
        if not multi_turn_irrelevance_checker(decoded, ground_truth)["valid"]:
            return 0.0
        inst = _Instances()
        try:
            result = multi_turn_checker(decoded, ground_truth, item.data["entry"], CATEGORY, inst.name)
        finally:
            inst.drop()
        return float(result["valid"])


register_suite(BFCLMultiTurn())

"""Helpers that environment programs may import inside the sandbox.

``from spade_env import ToolEnv, extract_boxed, math_equal``

- ``ToolEnv``: base class for multi-turn tool-use environments. It owns ``step()``:
  the ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` protocol, dispatch to
  ``tool_<name>`` methods, ``<answer>...</answer>`` submission, format errors, turn limit,
  follow-up user messages with success criteria (BFCL multi-turn style), and OpenAI
  function-format tool schemas. ``ToolUseBaseEnv`` is the same class under the name the
  SPADE reference code's programs use.
- ``GemEnv`` and GEM's constants and parsers: the names that GEM text games import
  from ``gem.core`` and ``gem.utils``, for programs converted by ``spade import``.
- ``QuizEnv``: base class of a game of questions with one right answer each, asked one
  a turn; a subclass only draws its questions (``questions(rng)``) and gives a hint.
- ``ReasoningGymEnv``: base class of a one-turn environment over a Reasoning Gym
  dataset (the fixed-environment baseline's wrapped generators); a subclass only names
  the dataset and its hint.
- Word steps: ``chain(word, step, ...)`` returns a ``QuizEnv`` question and its answer
  for a word put through named steps (``reverse``, ``drop_vowels``, ``count_letters``,
  ...), each told and computed in one place.
- Answer helpers: ``extract_boxed``, ``extract_answer_tag``, ``normalize_answer``,
  ``parse_number``, ``math_equal``.

Standard library only: the sandbox runs Python with ``-I -S``, so nothing from
site-packages is importable here. The one exception is ``ReasoningGymEnv``, which
imports ``reasoning_gym`` when an episode starts: the sandbox binds that package only
for programs whose imports name ``ReasoningGymEnv`` or ``reasoning_gym``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import json
import random
import re
import typing
from fractions import Fraction

__all__ = [
    "QuizEnv",
    "ReasoningGymEnv",
    "ToolEnv",
    "ToolUseBaseEnv",
    "extract_boxed",
    "extract_answer_tag",
    "normalize_answer",
    "parse_number",
    "math_equal",
    "FORMAT_PENALTY",
    "GemEnv",
    "TextArenaGameReward",
    "LanguageGameReward",
    "TERMINAL_STATE",
    "extract_last_boxed_answer",
    "extract_last_tagged_answer",
    "answer_parse",
    "answer_verify",
    "chain",
    "WordStep",
]

FORMAT_PENALTY = -0.1  # the reference code's per-action penalty for a malformed action
RETURN_FLOOR = -1.0  # the harness floors an episode's return here; we never go below it

# --------------------------------------------------------------------------- answers


_PLACEHOLDER = re.compile(r"[\s.\u2026]*")


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (nested braces allowed), else None.

    A box holding nothing but dots or an ellipsis (``\\boxed{...}``, the placeholder of
    an environment's own instructions) or nothing at all is not an answer: copied back,
    it scores as malformed, never as a well-formed wrong answer (a small agent learned to
    write exactly that placeholder every turn)."""
    if not isinstance(text, str):
        return None
    start = text.rfind("\\boxed")
    while start != -1:
        i = start + len("\\boxed")
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        content = text[i + 1 : j].strip()
                        if not _PLACEHOLDER.fullmatch(content):
                            return content
                        break
        # An unclosed, brace-less or placeholder \boxed is not an answer; try an earlier one.
        start = text.rfind("\\boxed", 0, start)
    return None


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def extract_answer_tag(text: str) -> str | None:
    """The stripped content of the last ``<answer>...</answer>``, else None."""
    if not isinstance(text, str):
        return None
    found = _ANSWER_TAG.findall(text)
    return found[-1].strip() if found else None


_LATEX_NOISE = re.compile(r"\\[,;:! ]|\\(?:left|right)\b|\\displaystyle")
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")


def normalize_answer(s: object) -> str:
    """Lower-cased, whitespace-collapsed answer text without common wrappers.

    Removes ``$`` signs, ``\\text{..}`` wrappers, LaTeX spacing, a ``\\boxed{}``
    around the whole answer, a leading ``x =``, surrounding quotes and trailing
    punctuation, so that cosmetic differences do not decide correctness.
    """
    t = "" if s is None else str(s)
    t = t.strip()
    boxed = extract_boxed(t)
    if boxed is not None and t.startswith("\\boxed"):
        t = boxed
    t = _TEXT_WRAP.sub(r"\1", t)
    t = _LATEX_NOISE.sub("", t)
    t = t.replace("$", "")
    t = re.sub(r"^[A-Za-z]\s*=\s*(?=\S)", "", t.strip())
    t = t.strip().strip("\"'`").strip()
    t = t.rstrip(".;:").strip()
    return re.sub(r"\s+", " ", t).lower()


_FRAC = re.compile(r"^(-?)\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_number(s: object) -> Fraction | None:
    """An exact number from answer text, else None.

    Accepts integers (``1,234``), decimals, scientific notation, ``a/b``,
    ``\\frac{a}{b}`` (also ``\\dfrac``/``\\tfrac``) and a trailing ``%`` (as a
    percentage: ``50%`` is 1/2).
    """
    t = normalize_answer(s).replace(" ", "")
    if not t:
        return None
    percent = t.endswith("%") or t.endswith("\\%")
    if percent:
        t = t[:-2] if t.endswith("\\%") else t[:-1]
    # A comma counts as a thousands separator only between digit groups of three.
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?", t):
        t = t.replace(",", "")
    value = None
    m = _FRAC.match(t)
    if m:
        num, den = parse_number(m.group(2)), parse_number(m.group(3))
        if num is not None and den:
            value = num / den * (-1 if m.group(1) else 1)
    elif "/" in t:
        num_s, _, den_s = t.partition("/")
        if _NUMBER.match(num_s) and _NUMBER.match(den_s):
            den = Fraction(den_s)
            value = Fraction(num_s) / den if den else None
    elif _NUMBER.match(t):
        value = Fraction(t)
    if value is not None and percent:
        value /= 100
    return value


def math_equal(a: object, b: object, tol: float = 0.0) -> bool:
    """True when two answers are the same number (within ``tol``) or the same text.

    Numbers compare exactly (``"3/4" == "0.75" == "\\frac{3}{4}"``, ``"1,000" ==
    "1000"``) unless ``tol`` > 0 allows an absolute difference; anything that is not
    a number on both sides compares by ``normalize_answer``.
    """
    if a is None or b is None:
        return False
    x, y = parse_number(a), parse_number(b)
    if x is not None and y is not None:
        return x == y or abs(float(x - y)) <= tol
    return normalize_answer(a) == normalize_answer(b)


# --------------------------------------------------------------------------- tool use

_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", tuple: "array", dict: "object"}


def _json_schema(annotation: object) -> dict:
    """A JSON schema for a parameter's type annotation (unknown types: no constraint)."""
    if annotation is inspect.Parameter.empty or annotation is typing.Any:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        schema = {"enum": list(args)}
        kinds = {_JSON_TYPES.get(type(a)) for a in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        return _json_schema(rest[0]) if len(rest) == 1 else {}
    if origin in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args and args[0] is not Ellipsis:
            item = _json_schema(args[0])
            if item:
                schema["items"] = item
        return schema
    if origin is dict:
        return {"type": "object"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    return {}


def _doc_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {argument: description}) from a Google-style docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description, params, in_args = [], {}, False
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)", stripped)
            if m and line.startswith((" ", "\t")):
                params[m.group(1)] = m.group(2)
            elif stripped and not line.startswith((" ", "\t")):
                in_args = False  # another section (Returns:, ...) ends the argument list
            continue
        description.append(stripped)
    return " ".join(x for x in description if x).strip(), params


def _render(item: object) -> str:
    """One solution item as the protocol text an agent would send."""
    if isinstance(item, dict) and "name" in item:
        call = {"name": item["name"], "arguments": item.get("arguments") or {}}
        return "<tool_call>" + json.dumps(call) + "</tool_call>"
    text = str(item)
    if "<answer>" in text.lower() or "<tool_call>" in text.lower():
        return text
    return f"<answer>{text}</answer>"


class ToolEnv:
    """Base class for multi-turn tool-use environments.

    A subclass writes:

    - ``reset(self, seed=None, options=None) -> (observation, info)``: build the
      episode from ``random.Random(seed)`` and set ``self.expected_answer`` (or
      override ``check_answer``). Episode bookkeeping (turn counter, call history,
      return) is cleared automatically before the subclass's ``reset`` body runs, so
      it need not call ``super().reset()``; calling ``self.begin_episode()`` itself
      is harmless. Put ``self.describe_tools()`` in the observation when the chat
      template does not show tools natively.
    - ``tool_<name>(self, **arguments)``: one method per tool; its docstring (first
      paragraph, plus an ``Args:`` section) and type annotations become the
      OpenAI function schema from ``tool_schemas()``. Return a str, or anything
      JSON-serialisable. Raising is fine: the agent gets the error as a format error.
    - ``solution(self) -> list``: the whole play from reset, tool calls as
      ``{"name": ..., "arguments": {...}}`` followed by the final answer string.
      The default ``oracle()`` plays item ``turn_count`` of it on each turn.
      (Or override ``oracle()`` directly.)
    - optionally ``hint(self) -> str`` and ``check_answer(self, answer) -> bool``.

    Follow-up user messages (multi-turn, the BFCL multi-turn form): in ``reset`` set
    ``self.user_messages`` (instructions, the first one in the observation) and
    ``self.message_criteria`` (one callable per message, called with ``self._state``,
    or with no argument, returning True once that instruction is carried out). After
    every successful tool call the current criterion is checked; when it holds, the
    next message is appended to the tool's result. An ``<answer>`` is accepted only
    once every criterion has held (and ``check_answer`` agrees; without an
    ``expected_answer`` the answer is ``done``). ``solution()`` plays the whole
    sequence: every message's calls, then the answer.

    ``step(action)`` rewards: a tool call 0.0; ``<answer>`` ends the episode with 1.0
    if ``check_answer`` accepts it, else 0.0; a malformed action (no tag, bad JSON,
    unknown tool, bad arguments, a tool raising) -0.1, never taking the return below
    -1. The episode is truncated after ``max_turns`` turns.

    For the SPADE reference code's programs: ``ToolUseBaseEnv`` is this class;
    ``self._expected_answer``, ``self._tools`` (explicit schemas), ``self._state``,
    ``self._call_history``, ``self.turn_count``, ``_check_answer``, ``get_tools``,
    ``execute_tool`` and a ``solution()`` returning one string all work, and so do
    their multi-turn programs: ``self._user_messages``, ``self._message_criteria``,
    ``self._current_msg`` and their own ``_advance_if_done()`` called inside tools.
    """

    max_turns = 10
    answer_tolerance = 0.01  # numeric slack in the default check, as in the reference code

    def __init__(self, max_turns: int | None = None, **kwargs):
        # None keeps the class attribute, so a subclass's `max_turns = 6` is not
        # overridden by a constructor default.
        if max_turns is not None:
            self.max_turns = max_turns
        self._tools: dict = {}
        self._state: dict = {}
        self._expected_answer = None
        self.begin_episode()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "reset" in cls.__dict__:
            cls.reset = _episode_reset(cls.__dict__["reset"])

    # ---------------------------------------------------------------- episode

    def begin_episode(self) -> None:
        """Clear the per-episode bookkeeping (runs automatically before reset)."""
        self.turn_count = 0
        self._call_history: list = []
        self._return = 0.0
        self._done = False
        self._plan = None
        # Follow-up messages belong to one episode: a reset must not inherit the last
        # episode's progress (the validator's episode_isolation check plays twice).
        self._user_messages: list = []
        self._message_criteria: list = []
        self._current_msg = 0
        if not hasattr(self, "_tools"):  # a subclass __init__ that skipped ours
            self._tools, self._state, self._expected_answer = {}, {}, None

    def reset(self, seed=None, options=None):
        """Build the episode; subclasses must override."""
        raise NotImplementedError("a ToolEnv subclass must implement reset()")

    @property
    def expected_answer(self):
        """The answer ``check_answer`` compares against (same as ``_expected_answer``)."""
        return self._expected_answer

    @expected_answer.setter
    def expected_answer(self, value):
        self._expected_answer = value

    def check_answer(self, answer: str) -> bool:
        """Whether a submitted answer is right; the default compares to expected_answer."""
        return bool(self._check_answer(answer))

    def _check_answer(self, answer: str) -> bool:
        # Kept as the reference code's override point; check_answer delegates here.
        if self._expected_answer is None:
            # A multi-turn task without a final question ends with "done".
            return bool(self._user_messages) and normalize_answer(answer) == "done"
        return math_equal(answer, self._expected_answer, tol=self.answer_tolerance)

    # ---------------------------------------------------------------- follow-up messages

    @property
    def user_messages(self) -> list:
        """The episode's user instructions, revealed one at a time (multi-turn)."""
        return self._user_messages

    @user_messages.setter
    def user_messages(self, value) -> None:
        self._user_messages = list(value)

    @property
    def message_criteria(self) -> list:
        """One success test per user message (see the class docstring)."""
        return self._message_criteria

    @message_criteria.setter
    def message_criteria(self, value) -> None:
        self._message_criteria = list(value)

    @property
    def current_message(self) -> int:
        """Index of the instruction being worked on (== len(user_messages) when all hold)."""
        return self._current_msg

    def messages_done(self) -> bool:
        """True when there are no follow-up messages or every criterion has held."""
        msgs = getattr(self, "_user_messages", None) or []
        return self._current_msg >= len(msgs)

    def _criterion_met(self, index: int) -> bool:
        criteria = getattr(self, "_message_criteria", None) or []
        if index >= len(criteria):
            return False
        criterion = criteria[index]
        try:
            takes_state = _positional_arity(criterion) >= 1
            return bool(criterion(self._state) if takes_state else criterion())
        except Exception:  # a criterion that fails on this state is not met
            return False

    def _advance_if_done(self) -> str:
        """Check the current message's criterion; on success move to the next message
        and return the text that announces it (else ""). The reference code's programs
        define their own and call it inside their tools; ours call it after each tool."""
        msgs = getattr(self, "_user_messages", None) or []
        if self._current_msg >= len(msgs) or not self._criterion_met(self._current_msg):
            return ""
        self._current_msg += 1
        if self._current_msg >= len(msgs):
            what = "<answer>done</answer>" if self._expected_answer is None else "<answer>...</answer>"
            return f"\n\n[All requests are complete] Submit your final answer with {what}."
        return (f"\n\n[Request {self._current_msg} of {len(msgs)} is complete] "
                f"Next request: {msgs[self._current_msg]}")

    # ---------------------------------------------------------------- tools

    def available_tools(self) -> list[str]:
        """Names of the tools this environment offers (its ``tool_*`` methods).

        ``tool_schemas`` is this class's own method, so no tool may be named "schemas".
        """
        return sorted(
            n[len("tool_"):] for n in dir(type(self))
            if n.startswith("tool_") and n not in _RESERVED and callable(getattr(self, n, None))
        )

    def tool_schemas(self) -> list[dict]:
        """The tools in OpenAI function format, for ``apply_chat_template(tools=...)``.

        An entry in ``self._tools`` (the reference code's explicit schemas) wins over
        what the method's docstring and annotations say.
        """
        declared = getattr(self, "_tools", None) or {}
        schemas = []
        for name in self.available_tools():
            method = getattr(self, "tool_" + name)
            description, arg_docs = _doc_parts(method.__doc__)
            properties, required = {}, []
            for p in inspect.signature(method).parameters.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                prop = _json_schema(_annotation(method, p))
                if p.name in arg_docs:
                    prop["description"] = arg_docs[p.name]
                properties[p.name] = prop
                if p.default is p.empty:
                    required.append(p.name)
            parameters = {"type": "object", "properties": properties, "required": required}
            info = declared.get(name) if isinstance(declared, dict) else None
            if isinstance(info, dict):
                description = info.get("description", description)
                parameters = info.get("parameters", parameters)
            schemas.append({"type": "function", "function": {
                "name": name, "description": description, "parameters": parameters}})
        return schemas

    def get_tools(self) -> list[dict]:
        """The reference code's name for ``tool_schemas()``."""
        return self.tool_schemas()

    def describe_tools(self) -> str:
        """A plain-text list of the tools and the action protocol, for observations."""
        lines = ["Tools:"]
        for schema in self.tool_schemas():
            fn = schema["function"]
            props = fn["parameters"].get("properties", {})
            args = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in props.items())
            lines.append(f"- {fn['name']}({args}): {fn['description']}")
        lines.append(
            'Call a tool with <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
            "(one per turn). Submit the final answer with <answer>...</answer>; "
            "you get one submission."
        )
        return "\n".join(lines)

    def _obs_suffix(self) -> str:
        # The reference code's programs append this to observations; tools reach the
        # agent through describe_tools() or the chat template instead.
        return ""

    def execute_tool(self, name: str, arguments: dict) -> dict:
        """Run one tool: ``{"output": str, "returncode": 0 | 1}`` (reference-code API)."""
        try:
            return {"output": self._call_tool(name, arguments), "returncode": 0}
        except _ActionError as e:
            return {"output": str(e), "returncode": 1}

    def _call_tool(self, name: object, arguments: object) -> str:
        if not isinstance(name, str) or name not in self.available_tools():
            available = ", ".join(self.available_tools())
            raise _ActionError(f"Unknown tool {str(name)[:60]!r}. Available tools: {available}.")
        if isinstance(arguments, str):  # OpenAI messages carry arguments as a JSON string
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                raise _ActionError("Format error: 'arguments' is not valid JSON.") from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _ActionError("Format error: 'arguments' must be a JSON object.")
        method = getattr(self, "tool_" + name)
        try:
            inspect.signature(method).bind(**arguments)
        except TypeError as e:
            raise _ActionError(f"Bad arguments for {name}: {e}.") from None
        try:
            result = method(**arguments)
        except Exception as e:  # the agent's call failed: tell it why, as a format error
            raise _ActionError(f"Error calling {name}: {type(e).__name__}: {str(e)[:300]}") from None
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        self._call_history.append({"name": name, "arguments": arguments, "result": text})
        return text

    # ---------------------------------------------------------------- protocol

    def step(self, action):
        """Play one agent turn; see the class docstring for the rewards."""
        if self._done:
            return "The episode is over; call reset().", 0.0, False, True, {}
        self.turn_count += 1
        text = action if isinstance(action, str) else ""
        text = _THINK.sub("", text)  # reasoning is not an action
        info: dict = {"turn": self.turn_count}
        answer = extract_answer_tag(text)
        if answer is not None:
            self._done = True
            try:
                correct = self.messages_done() and bool(self.check_answer(answer))
            except Exception:  # a buggy checker must not crash the episode
                correct = False
            reward = 1.0 if correct else 0.0
            self._return += reward
            info["correct"] = correct
            obs = "Correct!" if correct else "Incorrect."
            if not self.messages_done():
                obs += (f" Request {self._current_msg + 1} of {len(self._user_messages)} "
                        "was not complete.")
            return obs, reward, True, False, info
        try:
            obs = self._dispatch(text)
            reward = 0.0
        except _ActionError as e:
            obs = str(e)
            reward = max(FORMAT_PENALTY, RETURN_FLOOR - self._return)
            info["format_error"] = True
        self._return += reward
        truncated = self.turn_count >= self.max_turns
        if truncated:
            self._done = True
            obs += "\n\nOut of turns: the episode ends without an answer."
        return obs, reward, False, truncated, info

    def _dispatch(self, text: str) -> str:
        calls = _TOOL_CALL.findall(text)
        if not calls:
            raise _ActionError(
                'Format error: call a tool with <tool_call>{"name": "TOOL", "arguments": '
                "{...}}</tool_call> or submit with <answer>...</answer>."
            )
        try:
            call = json.loads(calls[0])
        except ValueError:
            raise _ActionError("Format error: the <tool_call> content is not valid JSON.") from None
        if not isinstance(call, dict) or "name" not in call:
            raise _ActionError('Format error: a tool call is a JSON object with "name" and "arguments".')
        before = self._current_msg
        obs = self._call_tool(call["name"], call.get("arguments", {}))
        if self._current_msg == before:  # the tool did not check its criterion itself
            obs += self._advance_if_done()
        if len(calls) > 1:
            obs += "\n(Only the first tool call of a turn is run.)"
        return obs if obs else "(empty result)"

    # ---------------------------------------------------------------- oracle

    def solution(self):
        """The whole play from reset: tool-call dicts, then the answer string."""
        raise NotImplementedError("a ToolEnv subclass must implement solution() or oracle()")

    def oracle(self) -> str:
        """The next action of a player who knows ``solution()``, as protocol text."""
        if self._plan is None:
            # Fixed at the first call of the episode: solution() describes the play
            # from reset, and later tool calls may change the state it reads.
            self._plan = _plan_items(self, self.solution())
        if not self._plan:
            return "<answer></answer>"
        return _render(self._plan[min(self.turn_count, len(self._plan) - 1)])


_RESERVED = {"tool_", "tool_schemas"}


class _ActionError(Exception):
    """A malformed agent action; its message is the observation the agent gets."""


def _annotation(method, p):
    # String annotations (from __future__ import annotations) resolve in the
    # method's module; an unresolvable one just gives no type constraint.
    if isinstance(p.annotation, str):
        try:
            return typing.get_type_hints(method).get(p.name, p.empty)
        except Exception:
            return p.empty
    return p.annotation


def _episode_reset(reset):
    """Wrap a subclass's reset so bookkeeping is cleared first and options is optional."""
    try:
        params = inspect.signature(reset).parameters
        takes_options = "options" in params or any(
            p.kind is p.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):
        takes_options = True

    @functools.wraps(reset)
    def wrapper(self, seed=None, options=None, **kwargs):
        ToolEnv.begin_episode(self)
        if takes_options:
            return reset(self, seed=seed, options=options, **kwargs)
        return reset(self, seed=seed, **kwargs)  # the reference code's reset(seed=None)

    wrapper._spade_wrapped = True
    return wrapper


_CALL_TEXT = re.compile(r"\b([A-Za-z_]\w*)\(([^()]*)\)")
_KWARG = re.compile(r"(\w+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,]+)")
_TAG = re.compile(r"<tool_call>.*?</tool_call>|<answer>.*?</answer>", re.DOTALL | re.IGNORECASE)
_FINAL = re.compile(r"<answer>(.*?)</answer>|ANSWER\s*:", re.DOTALL | re.IGNORECASE)


def _plan_items(env: ToolEnv, sol) -> list:
    """solution() as a list of items; a reference-style string is parsed best effort.

    The reference code writes the play as prose: ``"1. cd(path='docs') 2. mkdir(name=
    'temp') ANSWER: x"`` or, in its multi-turn programs, ``"... 5. <answer>done</answer>"``.
    Calls of known tools are taken in order, then the final answer."""
    if isinstance(sol, (list, tuple)):
        return list(sol)
    text = str(sol)
    if re.search(r"<tool_call>", text, re.IGNORECASE):
        return _TAG.findall(text)
    final = _FINAL.search(text)
    calls_part = text[:final.start()] if final else text
    names = set(env.available_tools())
    items: list = []
    for name, args in _CALL_TEXT.findall(calls_part):
        if name in names:
            items.append({"name": name, "arguments": _call_arguments(args)})
    if final and final.group(1) is not None:
        items.append(final.group(1).strip())
    elif final:
        items.append(text[final.end():].strip())
    elif env.expected_answer is not None:
        items.append(str(env.expected_answer))
    elif env.user_messages:
        items.append("done")
    return items


def _call_arguments(args: str) -> dict:
    """Keyword arguments of a call written as text: Python literals where they parse."""
    import ast  # only the reference code's prose solutions need it

    try:
        call = ast.parse(f"f({args})", mode="eval").body
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError):
        return {k: _literal(v) for k, v in _KWARG.findall(args)}


def _positional_arity(fn) -> int:
    """How many positional arguments ``fn`` takes (a large number for *args)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 1 << 30
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _literal(v: str):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(v, v)


# The SPADE reference code's programs subclass this name without importing it.
ToolUseBaseEnv = ToolEnv


# --------------------------------------------------------------------------- other formats
# Names that programs written for other frameworks import, so that `spade import` can
# point their imports here instead of editing their bodies. Written from those
# frameworks' documented behaviour, not copied.


def answer_parse(text: object) -> object:
    """Stands in for ``math_verify.parse`` (the reference code's games import it): the
    text itself, compared later by ``answer_verify``."""
    return text


def answer_verify(gold: object, target: object) -> bool:
    """Stands in for ``math_verify.verify``: ``math_equal`` on the two answers."""
    return math_equal(gold, target)


TERMINAL_STATE = "<|TERMINAL_STATE|>"  # GEM's marker observation of a finished episode


class TextArenaGameReward:
    """GEM's reward constants for text games (``gem.utils.constants``)."""

    success_reward = 1.0
    success_internal_reward = 0.1
    internal_step_reward = 0.0
    fail_reward = 0.0
    invalid_action_reward = -0.05
    format_error_reward = -0.1


LanguageGameReward = TextArenaGameReward  # the name GEM's newer games import


def extract_last_boxed_answer(text: str) -> str | None:
    """GEM's parser: the content of the last ``\\boxed{...}``, else None."""
    return extract_boxed(text)


def extract_last_tagged_answer(text: str) -> str | None:
    """GEM's parser: the content of the last ``<answer>...</answer>``, else None."""
    return extract_answer_tag(text)


class GemEnv:
    """``gem.core.Env`` for GEM text games converted by ``spade import --format gem``.

    GEM seeds Python's ``random`` (and numpy's) from the seed handed to ``reset``
    through its ``make``/wrapper machinery, and its games draw from the global
    generators. Here every subclass's ``reset(seed)`` is wrapped to do that seeding
    first, so the same seed gives the same episode. ``options`` is accepted and
    ignored (GEM's reset has none)."""

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "reset" in cls.__dict__ and not getattr(cls.__dict__["reset"], "_spade_wrapped", False):
            cls.reset = _gem_reset(cls.__dict__["reset"])

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._np_random_seed = seed
        return None

    def sample_random_action(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _gem_reset(reset):
    @functools.wraps(reset)
    def wrapper(self, seed=None, options=None, **kwargs):
        if seed is not None:
            import random
            import sys

            random.seed(seed)
            np = sys.modules.get("numpy")  # only when the program imported numpy itself
            if np is not None:
                np.random.seed(seed % (1 << 32))
        return reset(self, seed, **kwargs)

    wrapper._spade_wrapped = True
    return wrapper


# --------------------------------------------------------------------------- quiz


NUDGE_OPTION = "spade_nudge"
"""The ``reset`` option by which the validator asks a ``QuizEnv`` to draw its questions
from a ``NudgedRandom`` (``answer_determined``)."""


WORDS_OPTION = "spade_words"
"""The ``reset`` option by which the duplicate rule asks a ``QuizEnv`` to draw its
questions from the list of words given: every module-level list or tuple of strings its
``questions`` reads is that list for the draw (``validation.answer_behaviour``)."""


@contextlib.contextmanager
def _tables_as(namespace: dict, words):
    """Within the block, every list or tuple of two or more strings bound at the top of
    ``namespace`` (a program's data tables, such as ``WORDS``) is ``words``, of the same
    type; yields how many were. Restored afterwards, also on error."""
    if words is None:
        yield 0
        return
    saved = {k: v for k, v in namespace.items()
             if not k.startswith("__") and isinstance(v, (list, tuple)) and len(v) >= 2
             and all(isinstance(x, str) for x in v)}
    try:
        for k, v in saved.items():
            namespace[k] = type(v)(words)
        yield len(saved)
    finally:
        namespace.update(saved)


class NudgedRandom(random.Random):
    """``random.Random(seed)`` whose draw number ``nudge`` (from 0) comes out otherwise.

    Every method of ``random.Random`` draws through ``random()`` or ``getrandbits()``,
    so changing one of those values changes one choice, sample, shuffle or number and
    leaves the draws before it alone. The validator nudges each draw in turn: a draw
    that changes a question's answer but not its text is hidden from the player, who
    can then only guess (``answer_determined``). ``draws`` counts the draws made."""

    def __init__(self, seed=None, nudge=-1):
        self.nudge, self.draws = nudge, 0
        super().__init__(seed)

    def _nudged(self):
        self.draws += 1
        return self.draws - 1 == self.nudge

    def random(self):
        x = super().random()
        return (x + 0.5) % 1.0 if self._nudged() else x

    def getrandbits(self, k):
        x = super().getrandbits(k)
        return x ^ (1 << (k - 1)) if self._nudged() and k > 0 else x


_SCALAR = (str, int, float)


def _python_form(text: str) -> str | None:
    """The kind of container ``text`` is the Python form of ("set" for ``"{'a', 'b'}"``,
    "dict"), or None."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return type(value).__name__ if isinstance(value, (set, dict)) else None


def _check_answer(answer) -> None:
    """An answer is a string or number, or a list or tuple of them: what a player can
    write. A set, a dict or another object would be scored on its Python form (a set's
    in an order no player can know: learn-s44 scored "Which word comes first ...?" on
    ``set(word)``), so it is an error of the program; so is a string that is such a
    form (learn-s45 scored ``str(set(shown))``)."""
    items = answer if isinstance(answer, (list, tuple)) else [answer]
    for item in items:
        if not isinstance(item, _SCALAR):
            raise TypeError(f"an answer is a string, a number or a list of them, not "
                            f"{type(item).__name__} ({item!r:.40})")
        form = _python_form(item) if isinstance(item, str) else None
        if form:
            raise TypeError(f"an answer is a string, a number or a list of them, not the "
                            f"text of a {form} ({item!r:.40})")


class QuizEnv:
    """Questions with one right answer each, asked one a turn, answered as ``\\boxed{...}``.

    A subclass writes ``questions(self, rng)``: ``max_turns`` pairs ``(question,
    answer)`` drawn from ``rng`` (``random.Random(seed)``), where an answer is a string
    or number, or a list of them answered in order and separated by commas (anything
    else raises at reset: ``_check_answer``). Matching ignores
    case and the spaces around each item. A right answer earns ``1/len(questions)``, a
    wrong one 0, a turn without a box ``FORMAT_PENALTY``; the episode ends after the
    last question. The subclass adds ``hint(self)``; ``oracle`` comes from here.

    Why a base class: a game of questions is the environment a small designer can
    write whole, and with the turn logic here its program is only the idea itself
    (what is asked, what is right), which is also what sets two programs apart."""

    max_turns = 1

    def questions(self, rng):
        raise NotImplementedError("a QuizEnv subclass draws its questions in questions(rng)")

    def reset(self, seed=None, options=None):
        options = options if isinstance(options, dict) else {}
        nudge, words = options.get(NUDGE_OPTION), options.get(WORDS_OPTION)
        rng = random.Random(seed) if nudge is None else NudgedRandom(seed, nudge)
        with _tables_as(type(self).questions.__globals__, words) as tables:
            self.asked = [(str(q), a) for q, a in self.questions(rng)]
        if not self.asked:
            raise ValueError("questions(rng) returned no questions")
        for _, answer in self.asked:
            _check_answer(answer)
        self.turn = 0
        info = {} if nudge is None else {"draws": rng.draws}
        if words is not None:
            info["tables"] = tables
        return self._ask(0), info

    def _ask(self, i):
        return f"{self.asked[i][0]} Answer as \\boxed{{...}}."

    @staticmethod
    def _items(answer):
        items = answer if isinstance(answer, (list, tuple)) else [answer]
        return [str(a).strip() for a in items]

    def _matches(self, guess, answer):
        if isinstance(answer, (list, tuple)):
            return [g.lower() for g in self._items(guess.split(","))] == [
                a.lower() for a in self._items(answer)]
        return guess.strip().lower() == str(answer).strip().lower()

    def step(self, action):
        if self.turn >= len(self.asked):
            return "The episode is over.", 0.0, True, False, {}
        guess = extract_boxed(action if isinstance(action, str) else "")
        answer = self.asked[self.turn][1]
        self.turn += 1
        if guess is None:
            reward, note = FORMAT_PENALTY, "No \\boxed{...} answer found."
        elif self._matches(guess, answer):
            reward, note = 1 / len(self.asked), "Correct!"
        else:
            reward, note = 0.0, "Wrong."
        if self.turn >= len(self.asked):
            return note, reward, True, False, {}
        return f"{note} {self._ask(self.turn)}", reward, False, False, {}

    def oracle(self):
        answer = self.asked[min(self.turn, len(self.asked) - 1)][1]
        return "\\boxed{" + ", ".join(self._items(answer)) + "}"


# --------------------------------------------------------------------------- word steps


class WordStep:
    """One operation on a word: how a player is told it and what it computes.

    Why: a small designer's quiz most often fails by asking one thing and scoring another
    (docs/learning.md). A step carries its instruction and its computation together, so
    a quiz built from steps (``chain``) asks exactly what it scores; which steps, in which
    order, on which words, is the designer's game. ``takes`` and ``gives`` are kinds of
    value ("word", "letter", "number"): a step only follows one that gives what it
    takes."""

    def __init__(self, name: str, told: str, compute, takes: str = "word",
                 gives: str = "word"):
        self.name, self.told, self.compute = name, told, compute
        self.takes, self.gives = takes, gives

    def __call__(self, value):
        """The step's result alone (``drop_vowels("garden")`` is "grdn"), for a question
        the program words itself; ``chain`` words it too."""
        return self.compute(value)

    def __repr__(self):
        return self.name


_VOWELS = "aeiou"


def _swap_ends(w: str) -> str:
    return w[-1] + w[1:-1] + w[0] if len(w) > 1 else w


def _keep_first_of_each(w: str) -> str:
    return "".join(dict.fromkeys(w))


STEPS = (
    WordStep("reverse", "spell it backwards", lambda w: w[::-1]),
    WordStep("drop_vowels", "remove every vowel (a, e, i, o, u) from it",
             lambda w: "".join(c for c in w if c not in _VOWELS)),
    WordStep("sort_letters", "put its letters in alphabetical order",
             lambda w: "".join(sorted(w))),
    WordStep("swap_ends", "swap its first and last letters", _swap_ends),
    WordStep("rotate", "move its first letter to the end", lambda w: w[1:] + w[:1]),
    WordStep("drop_first", "remove its first letter", lambda w: w[1:]),
    WordStep("drop_last", "remove its last letter", lambda w: w[:-1]),
    WordStep("odd_letters", "keep only its 1st, 3rd, 5th, ... letters", lambda w: w[::2]),
    WordStep("no_repeats", "keep each letter only where it first appears",
             _keep_first_of_each),
    WordStep("double", "write it twice with nothing between", lambda w: w + w),
    WordStep("first_letter", "take its first letter", lambda w: w[:1], gives="letter"),
    WordStep("last_letter", "take its last letter", lambda w: w[-1:], gives="letter"),
    WordStep("count_letters", "count its letters", len, gives="number"),
    WordStep("count_vowels", "count its vowels (a, e, i, o, u)",
             lambda w: sum(c in _VOWELS for c in w), gives="number"),
    WordStep("count_distinct", "count how many different letters it has",
             lambda w: len(set(w)), gives="number"),
    WordStep("letter_place", "give the letter's place in the alphabet (a = 1, b = 2, ...)",
             lambda c: ord(c) - ord("a") + 1, takes="letter", gives="number"),
)
globals().update({s.name: s for s in STEPS})
__all__ += [s.name for s in STEPS]

_ORDINALS = ("First", "Then", "Then", "Then", "Then")


def chain(word: str, *steps: WordStep) -> tuple[str, str]:
    """The question and answer of ``word`` put through ``steps`` in order: ``chain("garden",
    drop_vowels, reverse)`` asks "Take the word 'garden'. First remove every vowel ... from
    it. Then spell it backwards. What do you get?" and answers "ndrg". A letter counts as
    a word for the steps that take words. Raises on no steps, more than five, a step that
    cannot take what the one before gives, or a word that comes out empty."""
    if not steps or len(steps) > len(_ORDINALS):
        raise ValueError(f"chain takes 1 to {len(_ORDINALS)} steps, not {len(steps)}")
    if not isinstance(word, str) or not word.isalpha():
        raise ValueError(f"chain starts from a word of letters, not {word!r:.40}")
    value, kind, told = word.lower(), "word", []
    for i, step in enumerate(steps):
        if not isinstance(step, WordStep):
            raise TypeError(f"chain's steps are word steps such as reverse, not {step!r:.40}")
        if step.takes != kind and not (step.takes == "word" and kind == "letter"):
            raise TypeError(f"{step.name} takes a {step.takes}, but the step before it "
                            f"gives a {kind}")
        value, kind = step.compute(value), step.gives
        if value == "":
            raise ValueError(f"{step.name} leaves nothing of {word!r}")
        told.append(f"{_ORDINALS[i]} {step.told}." if len(steps) > 1 else
                    f"{step.told[0].upper()}{step.told[1:]}.")
    question = f"Take the word '{word.lower()}'. " + " ".join(told) + " What do you get?"
    return question, str(value)


# --------------------------------------------------------------------------- reasoning gym


class ReasoningGymEnv:
    """One question of a Reasoning Gym dataset, answered in one turn.

    A subclass sets ``dataset`` (a ``reasoning_gym.create_dataset`` name) and
    ``hint_text``. Seed ``s`` plays item 0 of a size-1 dataset generated from
    ``Random(s)``: one item per seed. The answer goes inside ``<answer>...</answer>``
    and is scored by the dataset's own ``score_answer`` (reward 1 only for a fully
    correct answer).
    """

    max_turns = 1
    dataset: str = ""
    """The Reasoning Gym dataset name."""
    hint_text: str = ""
    """The privileged hint: a strategy, never the answer."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Imported when a program defines its subclass, so under the sandbox's load
        # deadline rather than the first reset's (the import takes about a second), and
        # not at this module's top: programs that do not use this class must not need
        # the package (the sandbox binds it only for those that do).
        import reasoning_gym  # noqa: F401

    def reset(self, seed=None, options=None):
        import reasoning_gym

        seed = 0 if seed is None else int(seed)
        self.data = reasoning_gym.create_dataset(self.dataset, seed=seed, size=1)
        self.entry = self.data[0]
        self.done = False
        obs = (self.entry["question"]
               + "\n\nGive only the final answer inside <answer>...</answer>.")
        return obs, {}

    def step(self, action):
        from reasoning_gym.utils import extract_answer

        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        answer = extract_answer(action if isinstance(action, str) else "")
        if answer is None:
            return "No <answer>...</answer> found.", 0.0, True, False, {"correct": False}
        correct = self.data.score_answer(answer, self.entry) == 1.0
        reply = "Correct!" if correct else "Incorrect."
        return reply, float(correct), True, False, {"correct": correct}

    def hint(self):
        return self.hint_text

    def oracle(self):
        return "<answer>" + str(self.entry["answer"]) + "</answer>"

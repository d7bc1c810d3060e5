"""Privileged hints for the "with hint" rollouts.

A hint comes from the environment's own ``hint()`` where it defines one (called in the
sandbox after ``reset(seed)``), otherwise from the model reading the program's source
(the reference code's "self" mode), 1-3 sentences of strategy. A model-written hint
that contains the oracle's final answer for an episode seed is refused: a leaked answer
would turn regret into "how much does being told the answer help". A refused model hint
is regenerated once, then dropped. The oracle's answers come from playing the oracle in
the sandbox, never from running the program here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Literal

from spade_tasks.answers import answer_of, leaks
from spade_tasks.environments import EnvRecord
from spade_tasks.llm.base import Backend, SamplingParams
from spade_tasks.sandbox import Sandbox
from spade_tasks.validation import empty_policy, oracle_policy, play

PROMPTS = Path(__file__).parent / "prompts"
HINT_MAX_NEW_TOKENS = 96
HINT_SOURCE_CHARS = 6000
"""Source characters shown to the hint writer (a program's head holds its docstring,
reset and the rules; the cap keeps a long program inside a small model's context)."""
HINT_MAX_CHARS = 500

Source = Literal["env", "model", "dropped"]


@dataclass(frozen=True)
class HintResult:
    """One hint and where it came from; ``text`` is None when dropped."""

    text: str | None
    source: Source
    attempts: int = 1
    reason: str | None = None
    """Why an earlier attempt was refused, or why the hint was dropped."""


@dataclass(frozen=True)
class Probe:
    """What the sandbox tells about one (environment, seed): its hint() and oracle answer."""

    env_hint: str | None
    hint_error: str | None
    answer: str | None


def probe(sandbox: Sandbox, rec: EnvRecord, seed: int) -> Probe:
    """Reset with ``seed`` in a fresh worker, call hint() if defined, play the oracle."""
    policy = oracle_policy if rec.has_oracle else empty_policy
    turns = rec.max_turns if rec.has_oracle else 0
    p = play(sandbox, rec.source, rec.class_name, seed, policy, turns, with_hint=rec.has_hint)
    answer = answer_of(p.actions[-1]) if rec.has_oracle and p.solved and p.actions else None
    hint_error = p.error if rec.has_hint and p.hint is None else None
    return Probe(p.hint, hint_error, answer)


# -- model-written hints ---------------------------------------------------------------


def hint_prompt(rec: EnvRecord) -> list[dict]:
    """The chat messages asking the model for a strategy hint for one program."""
    source = rec.source
    if len(source) > HINT_SOURCE_CHARS:
        source = source[:HINT_SOURCE_CHARS] + "\n# ... (truncated)"
    system = (PROMPTS / "hint_system.txt").read_text(encoding="utf-8")
    user = Template((PROMPTS / "hint.txt").read_text(encoding="utf-8")).substitute(
        source=source, title=rec.title or rec.class_name)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def clean_hint(text: str) -> str:
    """The hint proper: no label, code fences or trailing chatter; at most 3 sentences."""
    text = re.sub(r"```.*?(```|$)", " ", text, flags=re.DOTALL)
    text = re.sub(r"^\s*(\*\*)?hint(\*\*)?\s*:\s*", "", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip()
    sentences = re.split(r"(?<=[.!?])\s+", text)
    return " ".join(sentences[:3])[:HINT_MAX_CHARS].strip()


def model_hints(backend: Backend, records: list[EnvRecord], seed: int,
                answers: dict[str, list[str]] | None = None,
                max_new_tokens: int = HINT_MAX_NEW_TOKENS,
                temperature: float = 0.7) -> dict[str, HintResult]:
    """One model-written hint per record, in one batched generate call (plus one more
    call for the hints refused as empty or leaking the answers in ``answers[env_id]``)."""
    answers = answers or {}
    out: dict[str, HintResult] = {}
    todo = list(records)
    reasons: dict[str, str] = {}
    for attempt in (1, 2):
        if not todo:
            break
        params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature,
                                seed=seed + attempt - 1)
        comps = backend.generate([hint_prompt(r) for r in todo], params)
        retry = []
        for rec, comp in zip(todo, comps):
            text = clean_hint(comp.text)
            leaked = leaks(text, answers.get(rec.env_id, ()))
            if not text:
                reasons[rec.env_id] = "empty: the model wrote no hint"
            elif leaked:
                reasons[rec.env_id] = f"leak: the hint contains the answer {leaked!r}"
            else:
                out[rec.env_id] = HintResult(text, "model", attempt, reasons.get(rec.env_id))
                continue
            retry.append(rec)
        todo = retry
    for rec in todo:
        out[rec.env_id] = HintResult(None, "dropped", 2, reasons[rec.env_id])
    return out


__all__ = ["HintResult", "Probe", "answer_of", "leaks", "probe", "hint_prompt", "clean_hint",
           "model_hints"]

"""Privileged hints for the "with hint" rollouts.

A hint comes from the environment's own ``hint()`` where it defines one (called in the
sandbox after ``reset(seed)``), otherwise from the model reading the program's source
(the reference code's "self" mode), 1-3 sentences of strategy. Either way a hint that
contains the oracle's final answer for an episode seed is refused: a leaked answer would
turn regret into "how much does being told the answer help", and the designer would be
rewarded for leaking it. A refused model hint is regenerated once, then dropped; a
refused ``hint()`` is replaced by a model hint. The oracle's answers come from playing
the oracle in the sandbox, never from running the program here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Literal

from spade_tasks.environments import EnvRecord
from spade_tasks.llm.base import Backend, SamplingParams
from spade_tasks.sandbox import Episode, Sandbox
from spade_tasks.validation import empty_policy, oracle_policy, play

PROMPTS = Path(__file__).parent / "prompts"
HINT_MAX_NEW_TOKENS = 96
HINT_SOURCE_CHARS = 6000
"""Source characters shown to the hint writer (a program's head holds its docstring,
reset and the rules; the cap keeps a long program inside a small model's context)."""
HINT_MAX_CHARS = 500
MIN_ANSWER_CHARS = 1

Source = Literal["env", "model", "dropped"]


@dataclass(frozen=True)
class HintResult:
    """One hint and where it came from; ``text`` is None when dropped."""

    text: str | None
    source: Source
    attempts: int = 1
    reason: str | None = None
    """Why an earlier attempt was refused, or why the hint was dropped."""


# -- leak check ----------------------------------------------------------------------

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")


def answer_of(action: str) -> str:
    """The answer inside an oracle's final action: ``<answer>``, ``\\boxed{}``, or the text."""
    for pat in (_ANSWER_TAG, _BOXED):
        found = pat.findall(action)
        if found:
            return found[-1].strip()
    return action.strip()


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().lower()


def leaks(hint: str, answers) -> str | None:
    """The first answer ``hint`` contains (whole-word, case- and space-insensitive)."""
    h = _norm(hint)
    for a in answers:
        a = _norm(a or "")
        if len(a) < MIN_ANSWER_CHARS:
            continue
        # Word boundaries only where the answer starts/ends with a word character, so
        # "7" is not found inside "17" but "(3, 4)" is still found as written.
        left = r"(?<!\w)" if a[0].isalnum() or a[0] == "_" else ""
        right = r"(?!\w)" if a[-1].isalnum() or a[-1] == "_" else ""
        if re.search(left + re.escape(a) + right, h):
            return a
    return None


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


def episode_hint(episode: Episode, answers=()) -> HintResult:
    """The environment's hint() for an episode already reset, refused if it leaks."""
    r = episode.hint()
    if not r.ok:
        return HintResult(None, "dropped", reason=f"hint(): {r.error}")
    text = (r.value or "").strip()
    if not text:
        return HintResult(None, "dropped", reason="hint(): empty text")
    leaked = leaks(text, answers)
    if leaked:
        return HintResult(None, "dropped", reason=f"leak: hint() contains the answer {leaked!r}")
    return HintResult(text, "env")


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


def prepare_hints(backend: Backend, sandbox: Sandbox, records: list[EnvRecord],
                  seeds: list[int], seed: int) -> dict[str, dict[int, HintResult]]:
    """Hints for every (environment, episode seed), before the rollouts.

    ``hint()`` where defined and clean; otherwise one model hint per environment (one
    batched call), checked against the oracle's answers on all of ``seeds``.
    """
    probes = {(r.env_id, s): probe(sandbox, r, s) for r in records for s in seeds}
    answers = {r.env_id: [probes[(r.env_id, s)].answer for s in seeds
                          if probes[(r.env_id, s)].answer] for r in records}
    out: dict[str, dict[int, HintResult]] = {r.env_id: {} for r in records}
    need_model: dict[str, list[int]] = {}
    refused: dict[tuple[str, int], str] = {}
    for r in records:
        for s in seeds:
            pr = probes[(r.env_id, s)]
            if r.has_hint:
                text = (pr.env_hint or "").strip()
                leaked = leaks(text, [pr.answer] if pr.answer else ())
                if text and not leaked:
                    out[r.env_id][s] = HintResult(text, "env")
                    continue
                refused[(r.env_id, s)] = (f"leak: hint() contains the answer {leaked!r}" if leaked
                                          else f"hint(): {pr.hint_error or 'empty text'}")
            need_model.setdefault(r.env_id, []).append(s)
    if need_model:
        recs = [r for r in records if r.env_id in need_model]
        written = model_hints(backend, recs, seed, answers)
        for env_id, ss in need_model.items():
            for s in ss:
                h = written[env_id]
                why = refused.get((env_id, s))
                if why:  # keep the reason the environment's own hint was not used
                    h = HintResult(h.text, h.source, h.attempts,
                                   "; ".join(x for x in (why, h.reason) if x))
                out[env_id][s] = h
    return out


__all__ = ["HintResult", "Probe", "answer_of", "leaks", "probe", "episode_hint",
           "hint_prompt", "clean_hint", "model_hints", "prepare_hints"]

"""The leak rule shared by the validator and the hint writer: the answer inside an
oracle's final action, and whether a hint contains one."""

from __future__ import annotations

import re

MIN_ANSWER_CHARS = 1

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

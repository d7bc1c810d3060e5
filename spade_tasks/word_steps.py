"""The sandbox's word steps (``spade_env.chain``), read on the host.

A question that ``chain`` wrote says exactly what to compute ("Take the word 'garden'.
First remove every vowel ... from it. Then spell it backwards. What do you get?"), so
the validator need not guess what it asks: it reads the steps back from the text the
player sees and computes the answer itself, with the host's own copy of the steps (a
program cannot change them from inside the sandbox). The question's wording is then
checked exactly, not by the lexicon of ``asked``.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from types import ModuleType

from spade_tasks.sandbox.harness import ENVLIB


@functools.cache
def envlib() -> ModuleType:
    """A host copy of the sandbox's ``spade_env`` (standard library only), apart from the
    module the sandbox imports."""
    spec = importlib.util.spec_from_file_location("spade_env_host", ENVLIB / "spade_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STEPS = {s.name: s for s in envlib().STEPS}
"""The word steps by name."""
_BY_TOLD = {s.told: s for s in STEPS.values()}
_QUESTION = re.compile(r"Take the word '([a-z]+)'\. (.+?) What do you get\?"
                       r"(?: Answer as \\boxed\{\.\.\.\}\.)?")


def read_chain(question: str) -> tuple[str, tuple[str, ...]] | None:
    """The word and the steps' names of a question exactly as ``chain`` words it (with or
    without ``QuizEnv``'s answer format); None for any other text."""
    m = _QUESTION.fullmatch(question.strip())
    if not m:
        return None
    word, told = m.group(1), m.group(2)
    ordinals = envlib()._ORDINALS
    # Steps are split where a sentence ends before an ordinal: a step's own text may hold
    # ". " ("keep only its 1st, 3rd, 5th, ... letters").
    parts = re.split(r"(?<=\.) (?=(?:" + "|".join(set(ordinals)) + r") )", told)
    if len(parts) == 1:
        text = parts[0].removesuffix(".")
        step = _BY_TOLD.get(text[:1].lower() + text[1:])
        return (word, (step.name,)) if step else None
    names = []
    for i, part in enumerate(parts):
        prefix = f"{ordinals[i]} " if i < len(ordinals) else None
        if prefix is None or not part.startswith(prefix) or not part.endswith("."):
            return None
        step = _BY_TOLD.get(part[len(prefix):-1])
        if step is None:
            return None
        names.append(step.name)
    return word, tuple(names)


def chain_answer(question: str) -> str | None:
    """What ``chain`` answers to ``question``, computed here; None where the text is not
    a chain's question or its steps do not go together."""
    read = read_chain(question)
    return None if read is None else answer_of_read(*read)


def answer_of_read(word: str, names: tuple[str, ...]) -> str | None:
    """What ``chain`` answers for ``word`` put through the named steps (``read_chain``'s
    result); None where the steps do not go together."""
    try:
        return envlib().chain(word, *(STEPS[n] for n in names))[1]
    except (ValueError, TypeError):
        return None


SHAPED_WORDS = ("apple", "banana", "letter", "queue", "rhythm", "idea", "strength",
                "moon", "zigzag", "orange", "sky", "bookkeeper", "eye", "planet")
"""Words of every shape (vowels at either end or none, letters repeated or not, short and
long) on which ``idle_step`` tries a chain with and without each step: a quiz's own
words may share a shape by chance (all start with a consonant, say)."""


def idle_step(names: tuple[str, ...]) -> int | None:
    """The place of the first step of the chain ``names`` whose removal changes no answer
    on ``SHAPED_WORDS`` (where the whole chain answers at all); None where every step
    counts, or the chain has one step."""
    full = [answer_of_read(w, names) for w in SHAPED_WORDS]
    for i in range(len(names) if len(names) > 1 else 0):
        shorter = names[:i] + names[i + 1:]
        pairs = [(a, answer_of_read(w, shorter)) for w, a in zip(SHAPED_WORDS, full)
                 if a is not None]
        if pairs and all(a == b for a, b in pairs):
            return i
    return None


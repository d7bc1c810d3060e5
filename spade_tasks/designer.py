"""The Environment Designer: prompt the model for environment programs, parse, validate
in the sandbox, and record every design (accepted or not) for training.

The flow's stages: ``design_stage`` (one batched generate call, parsed, recorded
unvalidated) -> ``validate_program`` per design (sandbox; a task each) ->
``apply_reports`` (the duplicate rule, then program files, ``environments``, ``designs``,
``validations``). ``spade design`` runs the same stages (``design_command.py``).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import random
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from spade_tasks import progress, pysyntax
from spade_tasks.config import Config, MemoryConfig, ValidationConfig
from spade_tasks.corpus import Document, documents_of
from spade_tasks.environments import (STORE_ROOT, EnvRecord, class_doc, env_id_of,
                                      record_from_meta, save_record, title_of, write_program)
from spade_tasks.llm.base import Backend, Completion, SamplingParams, with_prefill
from spade_tasks.memory import (MemoryEntry, PromptExamples, entries, features, game_shape,
                                init_memory, jaccard, prompt_examples)
from spade_tasks.records import Designs, Documents, Verdicts
from spade_tasks.sandbox import ProgramMeta, Sandbox
from spade_tasks.store import Store, queries
from spade_tasks.validation import (MIN_SHARED_QUESTIONS, PROBE_SEEDS, PROBE_WORDS, Report,
                                    answer_items, behaviour_of, env_class_name, read_draw,
                                    shared_questions, validate_source)

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

PROMPTS = Path(__file__).parent / "prompts"
SYSTEM_PROMPTS = {"games": "designer_games.txt", "tool_use": "designer_tool_use.txt"}
SHORT_SYSTEM_PROMPTS = {"games": "designer_games_short.txt"}
"""The contract in a few lines, for small models (``designer.prompt: short``)."""
EXAMPLE_CHARS = 3500
"""Code characters shown per positive example (two fit a small model's context)."""
VARIANT_PROMPT = "designer_variant.txt"
"""The task of a variant design: one memory program, and a different game to grow from it."""
REVISE_PROMPT = "designer_revise.txt"
"""The turn after a design whose program did not run: the error, and a request for the fix."""
REFUSED_PROMPT = "designer_refused.txt"
"""The turn after a design whose program ran but a check refused (``designer.revise_on:
rejections``): the check's reason, and a request for a game that passes."""
MAX_TITLES = 40
"""Titles of existing environments listed in the prompt (newest first)."""

NO_CODE = "parse: no python code block"


@dataclass
class Design:
    """One designer completion and what became of it."""

    design_idx: int
    doc_id: str | None
    setting: str
    prompt: list[dict]
    completion: Completion
    source: str | None
    """The parsed program; None when the completion holds no python block."""
    accepted: bool = False
    reasons: list[str] = field(default_factory=list)
    record: EnvRecord | None = None
    tier: str | None = None
    seconds: float = 0.0
    fingerprint: str | None = None
    """The validator's behaviour fingerprint of an accepted program."""
    parent_env_id: str | None = None
    """The memory program a variant design was asked to grow from; None for a plain one."""
    revises: int | None = None
    """The design (index) this one rewrites after it was rejected (``to_revise``); None
    for a first draft."""

    @property
    def env_id(self) -> str | None:
        return self.record.env_id if self.record else None


# -- prompt --------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n# ... (truncated)"


def _example_block(e: MemoryEntry) -> str:
    if e.played:
        stats = (f"no-hint win rate {e.win_rate_no_hint:.2f}, with hint "
                 f"{e.win_rate_hint:.2f}, regret {e.regret:.2f}")
    else:
        stats = "not yet played"
    return (f"### {e.record.title or e.record.class_name} ({stats})\n"
            f"```python\n{_clip(e.record.source.strip(), EXAMPLE_CHARS)}\n```")


def build_prompt(doc: Document | None, examples: PromptExamples, setting: str,
                 style: str = "full", parent: str | None = None) -> list[dict]:
    """The chat messages for one design: the setting's contract, then the task.

    What every design of a generation shares (contract, memory examples, titles) comes
    before the document, so the backend computes that long common prefix once for the
    whole batch (``TransformersBackend._share_prefixes``). A variant design (``parent``,
    a memory program's source) is shown that one program, asked to grow a different game
    out of it, in place of the examples, which ask for the opposite ("not a
    variation")."""
    files = SHORT_SYSTEM_PROMPTS if style == "short" else SYSTEM_PROMPTS
    system = (PROMPTS / files[setting]).read_text(encoding="utf-8")
    if doc is not None:
        document = ("Take the theme, setting, names and facts of your environment from this "
                    "text. The environment must stand on its own: its observations and "
                    "docstring never mention a text, an article or a document.\n"
                    f"<text>\n{doc.text.strip()}\n</text>")
    else:
        document = "Choose any theme you like for your environment."
    if parent is not None:
        ex = Template((PROMPTS / VARIANT_PROMPT).read_text(encoding="utf-8")).substitute(
            parent=_clip(parent.strip(), EXAMPLE_CHARS))
    elif examples.positives:
        shown = "\n\n".join(_example_block(e) for e in examples.positives)
        ex = ("Environments from the memory that challenged the agent at the right level "
              "(the hint helped most). Go beyond them: a new idea, not a variation.\n\n" + shown)
    else:
        ex = ""
    neg = ""
    if examples.negatives:
        neg = "Environments that missed the agent's level, avoid their kind:\n" + "\n".join(
            f"- {e.record.title or e.record.class_name} ({label}: no-hint win rate "
            f"{e.win_rate_no_hint:.2f})" for e, label in examples.negatives)
    titles = ""
    if examples.titles:
        titles = "Existing environments (do not write these again):\n" + "\n".join(
            f"- {t}" for t in examples.titles[:MAX_TITLES])
    user = Template((PROMPTS / "designer_task.txt").read_text(encoding="utf-8")).substitute(
        document=document, examples=ex, negatives=neg, titles=titles)
    user = re.sub(r"\n{3,}", "\n\n", user).strip()
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user}]


# -- parse ---------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _looks_like_env(code: str) -> bool:
    return bool(re.search(r"^\s*class\s+\w+", code, re.M)) and "def reset" in code


def _parses(code: str) -> bool:
    try:
        pysyntax.parse(code)
    except (SyntaxError, ValueError):  # ValueError: null bytes
        return False
    return True


def extract_program(text: str) -> str | None:
    """The program in a completion: the last fenced python block that parses and looks
    like an environment, else the last one that looks like one, else the last python
    block; an unclosed final block (a completion cut at the token limit) counts. A bare
    ``` fence counts only when it holds an environment class. None: no code block."""
    blocks = []
    for m in _FENCE.finditer(text):
        lang, code = m.group(1), m.group(2).strip("\n")
        if code.strip() and (lang or _looks_like_env(code)):
            blocks.append(code)
    if not blocks:
        return None
    for pick in (lambda c: _looks_like_env(c) and _parses(c), _looks_like_env):
        good = [c for c in blocks if pick(c)]
        if good:
            return good[-1] + "\n"
    return blocks[-1] + "\n"


# -- stages --------------------------------------------------------------------------


def variant_parents(pool: list[MemoryEntry], n: int, share: float,
                    seed: int) -> list[MemoryEntry | None]:
    """The memory program each of ``n`` designs grows a variant from, None for a plain
    design: the last ``round(share * n)`` designs get one each, drawn (seeded) from
    ``pool`` and spread over it before any repeats; none when the pool is empty."""
    k = round(share * n) if pool else 0
    rng = random.Random(seed)
    drawn: list[MemoryEntry] = []
    while len(drawn) < k:
        drawn += rng.sample(pool, min(len(pool), k - len(drawn)))
    return [None] * (n - k) + drawn


def _sampling(cfg: Config, seed: int) -> SamplingParams:
    """The designer's sampling: the model's, with the designer's own overrides."""
    overrides = {key: value for key, value in (("temperature", cfg.designer.temperature),
                                               ("top_p", cfg.designer.top_p),
                                               ("min_p", cfg.designer.min_p))
                 if value is not None}
    return SamplingParams.from_config(cfg.model, max_new_tokens=cfg.designer.max_new_tokens,
                                      seed=seed, **overrides)


def design(backend: Backend, docs: list[Document | None], examples: PromptExamples,
           cfg: Config, seed: int,
           parents: list[MemoryEntry | None] | None = None) -> list[Design]:
    """One completion per document (None: no document) in ONE batched generate call,
    each parsed into a program; a completion without code is already rejected.
    ``parents`` (one per document) makes a design a variant of that memory program."""
    setting = cfg.designer.setting
    parents = parents or [None] * len(docs)
    prompts = [with_prefill(build_prompt(d, examples, setting, cfg.designer.prompt,
                                         parent.record.source if parent else None),
                            cfg.designer.prefill)
               for d, parent in zip(docs, parents)]
    params = _sampling(cfg, seed)
    comps = backend.generate(prompts, params) if prompts else []
    out = []
    for i, (doc, prompt, comp) in enumerate(zip(docs, prompts, comps)):
        source = extract_program(comp.full_text)
        d = Design(i, doc.doc_id if doc else None, setting, prompt, comp, source,
                   parent_env_id=parents[i].env_id if parents[i] else None)
        if source is None:
            d.reasons = [NO_CODE]
        out.append(d)
    return out


def failure_of(reasons: list[str]) -> str | None:
    """The error a design's program met when it ran (an exception the validator caught, or
    a syntax error), worded for the designer; None when it ran (it was refused for what
    it does) or when there is no program at all (no code block: nothing to fix)."""
    first = reasons[0] if reasons else ""
    if first.startswith("parse: line "):  # "parse: line 13: unmatched ')'"
        line, _, error = first.removeprefix("parse: line ").partition(": ")
        return f"SyntaxError (line {line}): {error}"
    _, sep, error = first.partition("exception: ")
    return error.strip() if sep else None


def refusal_of(reasons: list[str]) -> str | None:
    """The reason a program that ran was refused (a duplicate, an answer the question
    gives away, ...), for the designer; None when it did not run (``failure_of``) or
    there is no program."""
    first = reasons[0] if reasons else ""
    if not first or first == NO_CODE or failure_of(reasons) is not None:
        return None
    return first


def revision_prompt(design: Design, error: str, prefill: str,
                    template: str = REVISE_PROMPT) -> list[dict]:
    """The design's conversation continued: its program as the designer's answer, then
    the error it met (or the check that refused it, ``template``) and a request for the
    whole program again (prefilled again)."""
    asked = [m for m in design.prompt if m["role"] != "assistant"]
    answer = f"```python\n{(design.source or '').strip()}\n```"
    fix = Template((PROMPTS / template).read_text(encoding="utf-8")).substitute(error=error)
    return with_prefill([*asked, {"role": "assistant", "content": answer},
                         {"role": "user", "content": fix.strip()}], prefill)


def to_revise(designs: list[Design], on: str = "errors") -> list[tuple[Design, str, str]]:
    """The rejected designs a revision round writes again, each with what it is told
    and the prompt that tells it: those whose program failed to run (``failure_of``),
    and with ``on="rejections"`` those refused by a check too (``refusal_of``)."""
    out = []
    for d in designs:
        if d.accepted:
            continue
        if (err := failure_of(d.reasons)) is not None:
            out.append((d, err, REVISE_PROMPT))
        elif on == "rejections" and (why := refusal_of(d.reasons)) is not None:
            out.append((d, why, REFUSED_PROMPT))
    return out


def revise(backend: Backend, failed: list[tuple[Design, str, str]], cfg: Config, seed: int,
           first_idx: int) -> list[Design]:
    """One revision of every design in ``failed`` (``to_revise``), in ONE batched
    generate call: the designer sees its program and the error (or refusal) and writes
    the program again. The revisions are new designs, numbered from ``first_idx``, each
    naming the design it ``revises``; they are validated like any design."""
    prompts = [revision_prompt(d, err, cfg.designer.prefill, template)
               for d, err, template in failed]
    params = _sampling(cfg, seed)
    comps = backend.generate(prompts, params) if prompts else []
    out = []
    for k, ((d, _, _), prompt, comp) in enumerate(zip(failed, prompts, comps)):
        source = extract_program(comp.full_text)
        r = Design(first_idx + k, d.doc_id, d.setting, prompt, comp, source,
                   parent_env_id=d.parent_env_id, revises=d.design_idx)
        if source is None:
            r.reasons = [NO_CODE]
        out.append(r)
    return out


# The fixed pool's Reasoning Gym generators are for the baseline, not for designs: a
# design that wraps one writes no task of its own, and the held-out evaluation suite
# draws on the same package, so the agent would train on its own test.
POOL_ONLY_NAMES = frozenset({"reasoning_gym", "ReasoningGymEnv"})


def pool_only_reason(source: str) -> str | None:
    """``"imports: ..."`` when a designed program uses what only the fixed pool may
    (``reasoning_gym`` or ``spade_env.ReasoningGymEnv``); None otherwise, and for programs
    that do not parse (the validator names that)."""
    try:
        tree = pysyntax.parse(source)
    except (SyntaxError, ValueError):
        return None
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            used |= {(node.module or "").split(".")[0], *(a.name for a in node.names)}
        elif isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
    hit = sorted(used & POOL_ONLY_NAMES)
    if hit:
        return (f"imports: {', '.join(hit)}: for the fixed pool only; a designed "
                "environment implements its own task")
    return None


def _validate_design(source: str, sandbox, vcfg: ValidationConfig) -> Report:
    """The validator's verdict on a designed program, after the designer-only rules."""
    why = pool_only_reason(source)
    if why:
        return Report(None, False, [why], sandbox.tier)
    return validate_source(source, sandbox, vcfg)


# -- the duplicate rule (after the validator: it needs the pool) -----------------------


RECORD_COLUMNS = [f.name for f in dataclasses.fields(EnvRecord)]
"""The ``environments`` columns an ``EnvRecord`` is read back from."""


def _records(rows: list[dict]) -> list[EnvRecord]:
    return [EnvRecord(**r) for r in rows]


def known_programs(store: Store, run: str, generation: int | None = None) -> list[EnvRecord]:
    """What a new design must differ from: every committed program (the seeds and the
    Reasoning Gym pool: what designers are shown and warm-started on, whether or not this
    run's store holds them), every environment the run's memory ever held (the pool,
    evicted entries too), and the environments of other generations designed in this run
    (the same generation's earlier attempt is a rerun, not a rival)."""
    known = _records(queries.rival_environments(store, run, generation, RECORD_COLUMNS))
    stored = {k.env_id for k in known}
    return known + [r for r in committed_programs() if r.env_id not in stored]


COMMITTED = ("seeds", "seeds_small", "reasoning_gym")
"""The folders of committed programs under the store (the run folders hold designs)."""


def text_record(path: Path, origin: str = "seed") -> EnvRecord:
    """The record of the program in ``path`` from its text alone (nothing run): enough
    for the text rules of ``duplicate_reason``."""
    source = path.read_text(encoding="utf-8")
    doc = class_doc(source)
    return EnvRecord(env_id_of(source), source, path.stem, title_of(doc), doc, 1,
                     False, False, origin, str(path))


def committed_programs(root: Path = STORE_ROOT) -> list[EnvRecord]:
    """Records of the programs committed under ``root`` (no run's designs), from their
    text alone (``text_record``)."""
    return [text_record(path)
            for path in sorted(p for folder in COMMITTED for p in (root / folder).glob("*.py"))]


def duplicate_reason(rec: EnvRecord, known: list[EnvRecord], threshold: float) -> str | None:
    """``"duplicate: ..."`` when ``rec`` is a known program: the same text (its env_id),
    the same game told differently (``memory.game_shape``), near the same text (shingle
    similarity >= ``threshold``, as the memory measures it), or the same behaviour (equal
    oracle transcripts on the validation seeds)."""
    mine = features(rec.source, rec.doc)
    shape = game_shape(rec.source)
    for k in known:
        name = f"{k.env_id} ({k.title or k.class_name})"
        if k.env_id == rec.env_id:
            return f"duplicate: the same program as {name}"
        if shape is not None and game_shape(k.source) == shape:
            return (f"duplicate: the same game as {name} (only data, names, numbers, "
                    "docstrings or hint differ)")
        if rec.fingerprint and k.fingerprint == rec.fingerprint:
            return f"duplicate: plays the same episodes as {name} (same oracle transcripts)"
        sim = jaccard(mine, features(k.source, k.doc))
        if sim >= threshold:
            return f"duplicate: text similarity {sim:.2f} to {name} (limit {threshold:.2f})"
    return None


_ANSWERS: dict[str, list | None] = {}
"""``answer_items`` by env_id (a hash of the program): known programs are asked again by
every generation's designs, and a program's answers never change."""


def _answers(rec: EnvRecord, sandbox: Sandbox) -> list | None:
    if "QuizEnv" not in rec.source:  # only a quiz takes the probe words
        return None
    if rec.env_id not in _ANSWERS:
        # Committed programs are known from their text alone: their class is read again.
        _ANSWERS[rec.env_id] = answer_items(
            sandbox, rec.source, env_class_name(rec.source) or rec.class_name)
    return _ANSWERS[rec.env_id]


def operations_of(items: list) -> set[str]:
    """The lexicon's operations (``asked.computed``) that give a quiz's answer from the
    words it shows on every one of its ``answer_items`` they apply to."""
    from spade_tasks import asked

    return {op.name for op in asked.computed(
        [read_draw("", shown, answer) for (shown, _), answer in items])}


def same_answers_reason(rec: EnvRecord, known: list[EnvRecord],
                        sandbox: Sandbox) -> str | None:
    """``"duplicate: ..."`` when ``rec`` is a quiz that computes what a known quiz does:
    over the same probe words it shows the same words and answers on every probe seed
    (``validation.answer_behaviour``), or it answers alike every question both ask over
    ``PROBE_DRAWS`` seeds, at least ``MIN_SHARED_QUESTIONS`` of them
    (``validation.shared_questions``: the same game drawn another way), or both compute
    one operation of the lexicon from the words they show (``operations_of``: a list
    of 4 reversed is the game of a list of 3 or 4 reversed, though two such draws
    seldom show the same words; learn-s43, generation 2). The same game in other code
    or other words, which the text rules of ``duplicate_reason`` cannot see."""
    mine = _answers(rec, sandbox)
    if mine is None:
        return None
    behaviour = behaviour_of(mine)
    computes = operations_of(mine)
    for k in known:
        theirs = _answers(k, sandbox) if k.env_id != rec.env_id else None
        if theirs is None:
            continue
        name = f"{k.env_id} ({k.title or k.class_name})"
        if behaviour_of(theirs) == behaviour:
            return (f"duplicate: the same game as {name}: over the same {len(PROBE_WORDS)} "
                    f"words it shows the same words and gives the same answers on "
                    f"{PROBE_SEEDS} seeds")
        shared = shared_questions(mine, theirs)
        if shared >= MIN_SHARED_QUESTIONS:
            return (f"duplicate: the same game as {name} drawn another way: the {shared} "
                    f"questions both ask over the same {len(PROBE_WORDS)} words get the "
                    f"same answers")
        both = computes & operations_of(theirs)
        if both:
            return (f"duplicate: the same game as {name}: over the same "
                    f"{len(PROBE_WORDS)} words both answer with {min(both)}, from the "
                    f"words they show")
    return None


def refuse_duplicates(store: Store, run: str, generation: int, designs: list[Design],
                      threshold: float, sandbox: Sandbox | None = None,
                      also_known: list[EnvRecord] = ()) -> list[Design]:
    """Apply the duplicate rule to the accepted designs, in order: each is compared with
    the known programs (and ``also_known``: a revision's rivals include the designs its
    generation accepted before it) and with the designs accepted before it in this
    batch, by text (``duplicate_reason``) and, given a ``sandbox``, by what a quiz
    computes (``same_answers_reason``). A duplicate is rejected (it earns the rejected
    reward, never regret)."""
    known = known_programs(store, run, generation) + list(also_known)
    out = []
    for d in designs:
        if d.accepted and d.record is not None:
            why = duplicate_reason(d.record, known, threshold)
            if why is None and sandbox is not None:
                why = same_answers_reason(d.record, known, sandbox)
            if why:
                d = replace(d, accepted=False, reasons=[why], record=None)
            else:
                known.append(d.record)
        out.append(d)
    return out


def record_designs(store: Store, run: str, generation: int, designs: list[Design],
                   root: Path = STORE_ROOT, dedup_threshold: float | None = None,
                   sandbox: Sandbox | None = None, only_these: bool = False,
                   also_known: list[EnvRecord] = ()) -> list[Design]:
    """Refuse duplicates, write accepted programs (content-addressed) and their
    ``environments`` rows (never over another's), and replace this generation's
    ``designs`` and ``validations`` rows (rerun-safe; ``only_these``: only the rows of
    these designs' indices, as a round of revisions does). ``dedup_threshold`` defaults
    to ``memory.dedup_threshold``'s default; ``sandbox`` runs the duplicate rule's
    quizzes."""
    threshold = MemoryConfig().dedup_threshold if dedup_threshold is None else dedup_threshold
    designs = refuse_duplicates(store, run, generation, designs, threshold, sandbox, also_known)
    out = []
    for d in designs:
        if d.accepted and d.record is not None:
            path = write_program(d.source, run, root)
            d = replace(d, record=replace(d.record, path=str(path)))
            save_record(store, d.record)
        out.append(d)
    key = {"run": run, "generation": generation}
    among = ("design_idx", [d.design_idx for d in out]) if only_these else None
    store.replace_rows("designs", key, [{
        "run": run, "generation": generation, "design_idx": d.design_idx, "doc_id": d.doc_id,
        "setting": d.setting, "prompt": json.dumps(d.prompt),
        "completion": d.completion.full_text,
        "prompt_token_ids": list(d.completion.prompt_token_ids),
        "token_ids": list(d.completion.token_ids), "logprobs": list(d.completion.logprobs),
        "env_id": d.env_id, "accepted": d.accepted, "reasons": list(d.reasons), "reward": None,
        "parent_env_id": d.parent_env_id, "revises": d.revises,
    } for d in out], among=among)
    store.replace_rows("validations", key, [{
        "run": run, "generation": generation, "design_idx": d.design_idx, "env_id": d.env_id,
        "accepted": d.accepted, "reasons": list(d.reasons), "tier": d.tier,
        "seconds": d.seconds,
    } for d in out], among=among)
    return out


__all__ = ["Design", "NO_CODE", "build_prompt", "extract_program", "design", "variant_parents",
           "failure_of", "refusal_of", "to_revise", "revision_prompt", "revise", "revise_stage",
           "record_designs", "text_record", "duplicate_reason", "same_answers_reason",
           "known_programs",
           "refuse_duplicates", "design_stage", "load_designs", "recorded_designs", "validate_program",
           "with_reports", "apply_reports"]


# -- the flow's stages -----------------------------------------------------------------


def design_stage(rt: StageRuntime, generation: int, documents: Documents) -> Designs:
    """Write this generation's designs (one per document) and record them unvalidated."""
    cfg = rt.cfg
    if cfg.designer.mode == "fixed":
        # The fixed-environment baseline: the pool is the fixed programs, nothing is designed.
        init_memory(rt.store, rt.run, rt.sandbox, cfg.validation, cfg.designer.fixed_pool,
                    allow_unverified=cfg.designer.allow_unverified_pool)
        return Designs()
    init_memory(rt.store, rt.run, rt.sandbox, cfg.validation, cfg.designer.seed_pool)
    seed = rt.seed(generation)
    if cfg.memory.enabled:
        examples = prompt_examples(rt.store, rt.run, cfg.designer.memory_examples, cfg.memory,
                                   seed)
    else:  # the no-memory ablation: no examples, no titles to avoid
        examples = PromptExamples([], [], [])
    # The documents' texts are the store's; the record says which, in sampling order.
    text_of = {d.doc_id: d for d in documents_of(rt.store, rt.run, generation)}
    docs = [text_of[i] for i in documents.doc_ids]
    docs = docs or [None] * cfg.designer.designs_per_generation  # the no-corpus ablation
    parents = variant_parents(entries(rt.store, rt.run), len(docs), cfg.designer.variants,
                              seed) if cfg.memory.enabled else None
    with progress.stage("design environments", total=len(docs)) as bar:
        designs = design(rt.backend(), docs, examples, cfg, seed, parents)
        bar.advance(len(designs), sum(len(d.completion.token_ids) for d in designs))
    record_designs(rt.store, rt.run, generation, designs)
    return Designs(design_ids=[d.design_idx for d in designs])


def revise_stage(rt: StageRuntime, generation: int, previous: Designs,
                 round_: int) -> Designs:
    """Revision round ``round_`` (from 0): every design of ``previous`` whose program
    failed to run (or, with ``designer.revise_on: rejections``, was refused) is written
    again by the designer, shown its program and the error or refusal (``revise``), and
    recorded unvalidated after the generation's designs so far."""
    done = recorded_designs(rt.store, rt.run, generation, previous)
    # Numbered after every row but this round's own: a rerun after a crash numbers its
    # revisions as the interrupted attempt did, and replaces those rows.
    mine = {d.design_idx for d in done}
    first_idx = 1 + max((r["design_idx"] for r in queries.designs_of(rt.store, rt.run, generation)
                         if r["revises"] not in mine), default=-1)
    seed = rt.seed(generation) + 7919 * (round_ + 1)  # not the first drafts' draws again
    failed = to_revise(done, rt.cfg.designer.revise_on)
    with progress.stage(f"revise environments (round {round_ + 1})", total=len(failed)) as bar:
        revised = revise(rt.backend(), failed, rt.cfg, seed, first_idx)
        bar.advance(len(revised), sum(len(d.completion.token_ids) for d in revised))
    record_designs(rt.store, rt.run, generation, revised, only_these=True)
    return Designs(design_ids=[d.design_idx for d in revised])


def load_designs(store: Store, run: str, generation: int) -> list[Design]:
    """This generation's designs as recorded (completions with their token ids)."""
    rows = queries.designs_of(store, run, generation)
    out = []
    for r in rows:
        comp = Completion(r["completion"], list(r["prompt_token_ids"]), list(r["token_ids"]),
                          list(r["logprobs"]), "recorded")
        d = Design(r["design_idx"], r["doc_id"], r["setting"], json.loads(r["prompt"]), comp,
                   extract_program(r["completion"]), parent_env_id=r["parent_env_id"],
                   revises=r.get("revises"))
        # As recorded: unvalidated (refused only for want of code) until the validation
        # stage records its verdict; a revision round reads the verdicts back.
        d.accepted, d.reasons = bool(r["accepted"]), list(r["reasons"] or [])
        if d.source is None:
            d.reasons = [NO_CODE]
        out.append(d)
    return out


def validate_program(source: str | None, sandbox_cfg, vcfg: ValidationConfig) -> dict:
    """Validate one program and return a plain, picklable report.

    Self-contained (builds its own sandbox from config), so the flow can run it on any
    task runner: a thread here or a Ray worker on another machine."""
    if source is None:
        return {"accepted": False, "reasons": [NO_CODE], "tier": None, "seconds": 0.0,
                "meta": None}
    t0 = time.perf_counter()
    report = _validate_design(source, Sandbox(sandbox_cfg), vcfg)
    meta = report.meta
    return {"accepted": report.accepted, "reasons": list(report.reasons), "tier": report.tier,
            "seconds": time.perf_counter() - t0, "fingerprint": report.fingerprint,
            "meta": None if meta is None else {
                "class_name": meta.class_name, "max_turns": meta.max_turns, "doc": meta.doc,
                "has_hint": meta.has_hint, "has_oracle": meta.has_oracle}}


def recorded_designs(store: Store, run: str, generation: int,
                     designs: Designs) -> list[Design]:
    """The recorded designs ``designs`` names (their programs are the store's): what
    the validation stage validates."""
    wanted = set(designs.design_ids)
    return [d for d in load_designs(store, run, generation) if d.design_idx in wanted]


def with_reports(designs: list[Design], reports: list[dict], run: str,
                 generation: int) -> list[Design]:
    """The designs with their validation reports (from ``validate_program``) applied; an
    accepted one gets its environment record (``record_designs`` fills in its path)."""
    out = []
    for d, rep in zip(designs, reports):
        d = replace(d, accepted=rep["accepted"], reasons=list(rep["reasons"]), tier=rep["tier"],
                    seconds=rep["seconds"], fingerprint=rep.get("fingerprint"))
        if rep["accepted"]:
            d.record = record_from_meta(d.source, ProgramMeta(**rep["meta"]), "designed", "",
                                        run, generation, d.doc_id, d.fingerprint)
        out.append(d)
    return out


def accepted_before(store: Store, run: str, generation: int,
                    designs: list[Design]) -> list[EnvRecord]:
    """The environments this generation accepted from designs other than ``designs``
    (earlier rounds): what a revision must differ from besides ``known_programs``."""
    mine = {d.design_idx for d in designs}
    ids = [r["env_id"] for r in queries.designs_of(store, run, generation)
           if r["accepted"] and r["env_id"] and r["design_idx"] not in mine]
    return _records(queries.environments_by_id(store, ids, RECORD_COLUMNS))


def apply_reports(rt: StageRuntime, generation: int, designs: list[Design],
                  reports: list[dict]) -> Verdicts:
    """Record validation reports (from ``validate_program``) against their designs
    (near-duplicates of known programs refused); returns the verdicts."""
    # Only these designs' rows: a revision round records its rewrites beside the drafts
    # (and a round with nothing to rewrite records nothing), and what the generation
    # accepted in earlier rounds is known to the duplicate rule.
    out = record_designs(rt.store, rt.run, generation,
                         with_reports(designs, reports, rt.run, generation),
                         dedup_threshold=rt.cfg.memory.dedup_threshold, sandbox=rt.sandbox,
                         only_these=True,
                         also_known=accepted_before(rt.store, rt.run, generation, designs))
    return Verdicts(accepted_env_ids=[d.env_id for d in out if d.accepted],
                    rejected=sum(not d.accepted for d in out))

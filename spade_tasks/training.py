"""One policy-gradient step on the shared model, through DeepSpeed.

Both roles (designer and agent) train the same weights in one step. The loss is the
token-level clipped policy gradient (PPO/GRPO style, asymmetric clip as in DAPO),
averaged over every completion token of the batch, plus an optional k3 KL penalty to a
frozen reference model. Micro-batches accumulate gradients; only completion tokens
contribute.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import torch

from spade_tasks import progress
from spade_tasks.build_locks import remove_stale_build_lock
from spade_tasks.config import TrainingConfig
from spade_tasks.errors import ConfigError, TrainingError
from spade_tasks.llm.loading import load_model, load_tokenizer, resolve_model
from spade_tasks.records import Played, Scores, TrainReport
from spade_tasks.regret import clip_advantages, group_advantages, grouped_advantages
from spade_tasks.store import queries

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

DEEPSPEED_SUBDIR = "deepspeed"
"""Where inside a checkpoint folder the engine's optimizer state lives."""


@dataclass(frozen=True)
class TrainSample:
    """One completion to learn from; old_logprobs are the generation-time log-softmax
    of the unmodified model for each completion token."""

    role: Literal["designer", "agent"]
    prompt_ids: list[int]
    completion_ids: list[int]
    old_logprobs: list[float]
    advantage: float


@dataclass(frozen=True)
class StepMetrics:
    """What one training step did."""

    loss: float
    """Token-mean clipped policy loss (+ KL term) before the update."""
    clip_fraction: float
    """Completion tokens whose gradient the clip removed."""
    approx_kl: float
    """k3 estimate of KL(old || new) over completion tokens."""
    mean_ratio: float
    tokens: int
    """Completion tokens trained on."""
    tokens_processed: int
    """All non-pad tokens through forward and backward (prompt + completion)."""
    tokens_per_s: float
    """tokens_processed per second of the whole step (forward, backward, update)."""
    step_time_s: float
    grad_norm: float
    """Global gradient norm before clipping."""
    tokens_by_role: dict[str, int]
    kl_ref: float | None = None
    """Mean k3 KL to the reference model, when one is loaded."""


@dataclass(frozen=True)
class SFTSample:
    """One supervised pair: the target ids are learned, the prompt ids only condition."""

    prompt_ids: list[int]
    target_ids: list[int]


@dataclass(frozen=True)
class SFTMetrics:
    """What one supervised step did."""

    loss: float
    """Mean negative log-likelihood per target token, before the update."""
    tokens: int
    step_time_s: float


# ---------------------------------------------------------------- pure tensor pieces


def clipped_pg_loss(
    new_logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps_low: float,
    clip_eps_high: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token clipped policy-gradient loss ``-min(r*A, clip(r)*A)``, zero where
    ``mask`` is 0; plus per-token stats (ratio, clipped, k3) as detached tensors.

    Shapes: logps and mask (B, T); advantages (B,) or (B, T).
    """
    if advantages.dim() == 1:
        advantages = advantages[:, None]
    log_ratio = (new_logp - old_logp) * mask
    ratio = torch.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps_low, 1.0 + clip_eps_high) * advantages
    loss = -torch.minimum(unclipped, clipped) * mask
    with torch.no_grad():
        # A token is "clipped" when the clip zeroes its gradient.
        was_clipped = ((clipped < unclipped) & (mask > 0)).float()
        k3 = (ratio - 1.0) - log_ratio  # KL(old || new) estimator, >= 0
    return loss, {"ratio": ratio.detach(), "clipped": was_clipped, "k3": k3 * mask}


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference): exp(d) - d - 1, d = ref - logp."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


@dataclass
class _MicroBatch:
    input_ids: torch.Tensor  # (B, L) right-padded
    attention_mask: torch.Tensor  # (B, L)
    targets: torch.Tensor  # (B, K) token predicted at each kept position
    comp_mask: torch.Tensor  # (B, K) 1 where the target is a completion token
    old_logp: torch.Tensor  # (B, K)
    advantages: torch.Tensor  # (B,)
    keep: int  # logits of the last `keep` positions are needed
    roles: list[str]


def _collate(samples: Sequence[TrainSample], pad_id: int) -> _MicroBatch:
    """Right-pad prompt+completion; align targets, old logprobs and masks to the last
    ``keep`` positions so the LM head runs only where a completion token is predicted."""
    lengths = [len(s.prompt_ids) + len(s.completion_ids) for s in samples]
    width = max(lengths)
    # Position t predicts token t+1: the earliest completion token is predicted from
    # the shortest prompt's last position, the latest from position width-2.
    first = min(len(s.prompt_ids) for s in samples) - 1
    keep = width - 1 - first
    bsz = len(samples)
    input_ids = torch.full((bsz, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((bsz, width), dtype=torch.long)
    targets = torch.zeros((bsz, keep), dtype=torch.long)
    comp_mask = torch.zeros((bsz, keep), dtype=torch.float32)
    old_logp = torch.zeros((bsz, keep), dtype=torch.float32)
    for i, s in enumerate(samples):
        ids = s.prompt_ids + s.completion_ids
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention_mask[i, : len(ids)] = 1
        start = len(s.prompt_ids) - 1 - first
        n = len(s.completion_ids)
        targets[i, start : start + n] = torch.tensor(s.completion_ids)
        comp_mask[i, start : start + n] = 1.0
        old_logp[i, start : start + n] = torch.tensor(s.old_logprobs, dtype=torch.float32)
    return _MicroBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        targets=targets,
        comp_mask=comp_mask,
        old_logp=old_logp,
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        keep=keep,
        roles=[s.role for s in samples],
    )


def _token_logprobs(model, mb: _MicroBatch, device: torch.device) -> torch.Tensor:
    """log p(target) at the kept positions, in fp32 (log-softmax in bf16 loses ~2 digits)."""
    out = model(
        input_ids=mb.input_ids.to(device),
        attention_mask=mb.attention_mask.to(device),
        logits_to_keep=mb.keep + 1,
        use_cache=False,
    )
    # logits_to_keep=k+1 returns positions L-k-1 .. L-1; the last one predicts past the
    # end and is dropped.
    logits = out.logits[:, :-1, :].float()
    targets = mb.targets.to(device)
    return logits.gather(-1, targets[..., None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def _validate(samples: Sequence[TrainSample]) -> None:
    if not samples:
        raise TrainingError("training step on an empty batch")
    for i, s in enumerate(samples):
        if s.role not in ("designer", "agent"):
            raise TrainingError(f"sample {i}: role must be 'designer' or 'agent', got {s.role!r}")
        if not s.prompt_ids or not s.completion_ids:
            raise TrainingError(f"sample {i}: empty prompt or completion")
        if len(s.old_logprobs) != len(s.completion_ids):
            raise TrainingError(
                f"sample {i}: {len(s.old_logprobs)} old logprobs for "
                f"{len(s.completion_ids)} completion tokens"
            )


def _micro_batches(samples: Sequence[TrainSample], size: int) -> list[list[TrainSample]]:
    # Similar lengths share a micro-batch, so little compute goes to padding.
    ordered = sorted(samples, key=lambda s: len(s.prompt_ids) + len(s.completion_ids))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


# ---------------------------------------------------------------- DeepSpeed setup


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SHM_OP = "deepspeed_shm_comm"
"""The build folder of DeepSpeed's shared-memory op (its builder's ``NAME``) under the
torch extensions folder."""


def init_distributed() -> None:
    """Single-process defaults for torch.distributed, then gloo/NCCL init if not done.

    Must run before deepspeed is imported elsewhere: DS_ACCELERATOR is read once.
    """
    launched = "MASTER_PORT" in os.environ  # by a launcher (deepspeed, torchrun)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    if not torch.cuda.is_available():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import deepspeed

    # DeepSpeed's communication backend builds its shared-memory op on first use (here, or
    # in deepspeed.initialize where a launcher set up torch.distributed).
    remove_stale_build_lock(SHM_OP)
    if not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if not launched and os.environ["WORLD_SIZE"] == "1":
            # One process meets itself through a file: a TCP port picked as free can be
            # taken by another process before the store binds it (seen with a Prefect
            # server and a second trainer on the machine: EADDRINUSE).
            fd, path = tempfile.mkstemp(prefix="spade-dist-")
            os.close(fd)
            torch.distributed.init_process_group(backend, init_method=f"file://{path}",
                                                 rank=0, world_size=1)
        deepspeed.init_distributed(dist_backend=backend)


def load_deepspeed_config(config: TrainingConfig) -> dict:
    """The JSON DeepSpeed config, with the micro-batch size taken from ``config``."""
    path = Path(config.deepspeed_config)
    if not path.is_file():
        raise ConfigError(f"{path}: DeepSpeed config not found")
    try:
        ds = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: invalid JSON ({e})") from None
    if "optimizer" in ds:
        # Its CPU Adam costs a 34 s JIT build, and we pass a torch optimizer anyway.
        raise ConfigError(f"{path}: remove the 'optimizer' block (the trainer passes AdamW)")
    if ds.get("managed_gradient_accumulation", True) is not False:
        # A step has as many micro-batches as its batch needs, so the caller, not the
        # engine's fixed gradient_accumulation_steps, owns the update boundary.
        raise ConfigError(f"{path}: set \"managed_gradient_accumulation\": false")
    ds["bf16"] = _resolve_bf16(path, ds.get("bf16", {}))
    ds["train_micro_batch_size_per_gpu"] = config.micro_batch_size
    ds["gradient_accumulation_steps"] = 1
    ds.pop("train_batch_size", None)
    return ds


def _resolve_bf16(path: Path, block: dict) -> dict:
    """The ``bf16`` block with ``"enabled": "auto"`` decided by the hardware, as
    ``model.dtype: auto`` is for inference: bf16 on GPUs and on CPUs with AMX, fp32
    elsewhere (there bf16 matmuls are no faster, and the fp32 trainer's log-probs match
    the fp32 rollout's)."""
    enabled = block.get("enabled", False)
    if enabled == "auto":
        from spade_tasks.llm.loading import resolve_dtype

        return {**block, "enabled": resolve_dtype("auto") == "bfloat16"}
    if not isinstance(enabled, bool):
        raise ConfigError(f"{path}: bf16.enabled must be true, false or \"auto\" "
                          f"(got {enabled!r})")
    return block


def _world() -> tuple[int, int]:
    """(world size, rank) of this process's DeepSpeed group."""
    if torch.distributed.is_initialized():
        return torch.distributed.get_world_size(), torch.distributed.get_rank()
    return 1, 0


def _rank_share(chunks: list[list[TrainSample]], rank: int,
                world: int) -> list[tuple[list[TrainSample], int]]:
    """This rank's micro-batches (every world-th of the batch's, so the ranks together
    compute exactly the one-rank micro-batches), each with weight 1; padded with
    weight-0 passes so every rank runs as many backward passes (ZeRO-2/3 reduce
    gradients inside each one, a collective call)."""
    mine = [(c, 1) for c in chunks[rank::world]]
    rounds = -(-len(chunks) // world)
    return mine + [(chunks[0], 0)] * (rounds - len(mine))


def _sum_over_ranks(sums: dict[str, float], processed: int) -> tuple[dict[str, float], int]:
    keys = sorted(sums)
    t = torch.tensor([sums[k] for k in keys] + [float(processed)], dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return dict(zip(keys, t[:-1].tolist())), int(t[-1])


# ---------------------------------------------------------------- the engine


class TrainEngine:
    """The DeepSpeed engine around the shared model, plus its tokenizer and reference."""

    def __init__(self, model, tokenizer, config: TrainingConfig, ref_model=None):
        if config.kl_coef > 0 and ref_model is None:
            raise TrainingError("kl_coef > 0 needs a reference model")
        init_distributed()
        import deepspeed

        self.config = config
        self.tokenizer = tokenizer
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        optimizer = torch.optim.AdamW(
            model.parameters(),
            lr=config.lr,
            betas=config.adam_betas,
            weight_decay=config.weight_decay,
            # One fused kernel over DeepSpeed's flat fp32 master copy: ~4x faster than
            # the per-op default on this CPU.
            fused=True,
        )
        self.engine, _, _, _ = deepspeed.initialize(
            model=model, optimizer=optimizer, config=load_deepspeed_config(config)
        )
        if torch.distributed.get_world_size() == 1 and self.engine.zero_optimization_stage() == 0:
            # One process has no peer to average gradients with; the engine would still
            # flatten, "all-reduce" and unflatten every gradient each step (~0.3 s here).
            # (ZeRO stages move gradients into their partitions in that call: kept there.)
            self.engine.enable_backward_allreduce = False
        e = self.engine
        self._grads_in_params = not (e.zero_optimization() or e.bfloat16_enabled() or e.fp16_enabled())
        self.ref_model = ref_model
        if ref_model is not None:
            ref_model.to(device=self.engine.device, dtype=self._dtype()).eval()
            ref_model.requires_grad_(False)

    @classmethod
    def from_model_name(cls, name: str, config: TrainingConfig) -> TrainEngine:
        """Load model, tokenizer (and a reference copy when kl_coef > 0) by config name."""
        ref = resolve_model(name)
        # fp32 weights in: DeepSpeed's bf16 mode keeps fp32 masters and casts the module.
        model = load_model(ref, "float32")
        ref_model = load_model(ref, "float32") if config.kl_coef > 0 else None
        return cls(model, load_tokenizer(ref), config, ref_model)

    @property
    def module(self):
        """The trained model (a transformers PreTrainedModel)."""
        return self.engine.module

    def _dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.engine.bfloat16_enabled() else torch.float32

    @torch.no_grad()
    def logprobs(self, samples: Sequence[TrainSample]) -> list[list[float]]:
        """Current log-probability of each completion token (no update), in input order."""
        _validate(samples)
        out = []
        for i in range(0, len(samples), self.config.micro_batch_size):
            chunk = samples[i : i + self.config.micro_batch_size]
            mb = _collate(chunk, self.pad_id)
            logp = _token_logprobs(self.engine, mb, self.engine.device).cpu()
            for row, m in zip(logp, mb.comp_mask):
                out.append(row[m > 0].tolist())
        return out

    def step(self, samples: Sequence[TrainSample]) -> StepMetrics:
        """One optimizer update on ``samples`` (both roles together)."""
        _validate(samples)
        cfg = self.config
        device = self.engine.device
        total_tokens = sum(len(s.completion_ids) for s in samples)
        t0 = time.perf_counter()
        self.engine.train()
        sums = {"loss": 0.0, "clipped": 0.0, "k3": 0.0, "ratio": 0.0, "kl_ref": 0.0}
        processed = 0
        world, rank = _world()
        for chunk, weight in _rank_share(_micro_batches(samples, cfg.micro_batch_size),
                                         rank, world):
            mb = _collate(chunk, self.pad_id)
            processed += int(mb.attention_mask.sum()) * weight
            mask = mb.comp_mask.to(device)
            new_logp = _token_logprobs(self.engine, mb, device)
            tok_loss, stats = clipped_pg_loss(
                new_logp,
                mb.old_logp.to(device),
                mb.advantages.to(device),
                mask,
                cfg.clip_eps_low,
                cfg.clip_eps_high,
            )
            if self.ref_model is not None:
                with torch.no_grad():
                    ref_logp = _token_logprobs(self.ref_model, mb, device)
                kl = k3_kl(new_logp, ref_logp) * mask
                tok_loss = tok_loss + cfg.kl_coef * kl
                sums["kl_ref"] += float(kl.detach().sum()) * weight
            # Dividing by the whole batch's token count makes the accumulated gradient
            # the token-level mean over the batch (DAPO), whatever the micro-batching.
            # DeepSpeed averages gradients over ranks: times `world` makes that the sum of
            # the ranks' shares, i.e. the one-rank gradient.
            loss = tok_loss.sum() / total_tokens
            self.engine.backward(loss * (world * weight), scale_wrt_gas=False)
            sums["loss"] += float(loss.detach()) * weight
            sums["clipped"] += float(stats["clipped"].sum()) * weight
            sums["k3"] += float(stats["k3"].sum()) * weight
            sums["ratio"] += float((stats["ratio"] * mask).sum()) * weight
        if world > 1:
            sums, processed = _sum_over_ranks(sums, processed)
            if self._grads_in_params:
                # Averaged here, not in engine.step(), so the norm below is the global one.
                self.engine.buffered_allreduce_fallback(elements_per_buffer=500_000_000)
                self.engine.enable_backward_allreduce = False
        grad_norm = None
        if self._grads_in_params:
            # The engine reports the norm only from its mixed-precision and ZeRO optimizers.
            grads = [p.grad for p in self.engine.module.parameters() if p.grad is not None]
            grad_norm = float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0
        self.engine.step()
        elapsed = time.perf_counter() - t0
        if grad_norm is None:
            grad_norm = self.engine.get_global_grad_norm()
        by_role: dict[str, int] = {"designer": 0, "agent": 0}
        for s in samples:
            by_role[s.role] += len(s.completion_ids)
        return StepMetrics(
            loss=sums["loss"],
            clip_fraction=sums["clipped"] / total_tokens,
            approx_kl=sums["k3"] / total_tokens,
            mean_ratio=sums["ratio"] / total_tokens,
            tokens=total_tokens,
            tokens_processed=processed,
            tokens_per_s=processed / elapsed,
            step_time_s=elapsed,
            grad_norm=float(grad_norm) if grad_norm is not None else float("nan"),
            tokens_by_role=by_role,
            kl_ref=sums["kl_ref"] / total_tokens if self.ref_model is not None else None,
        )

    def sft_step(self, samples: Sequence[SFTSample], lr: float) -> SFTMetrics:
        """One supervised update at learning rate ``lr``: mean negative log-likelihood of
        every target token of the batch (prompt tokens condition, never count). The
        optimizer's own learning rate is restored afterwards, so policy-gradient steps
        that follow keep theirs."""
        if not samples:
            raise TrainingError("supervised step on an empty batch")
        rows = [TrainSample("designer", s.prompt_ids, s.target_ids, [0.0] * len(s.target_ids),
                            0.0) for s in samples]
        _validate(rows)
        device = self.engine.device
        total = sum(len(s.target_ids) for s in samples)
        t0 = time.perf_counter()
        self.engine.train()
        groups = self.engine.optimizer.param_groups
        saved = [g["lr"] for g in groups]
        for g in groups:
            g["lr"] = lr
        nll = 0.0
        try:
            for chunk in _micro_batches(rows, self.config.micro_batch_size):
                mb = _collate(chunk, self.pad_id)
                logp = _token_logprobs(self.engine, mb, device)
                loss = -(logp * mb.comp_mask.to(device)).sum() / total
                self.engine.backward(loss, scale_wrt_gas=False)
                nll += float(loss.detach())
            self.engine.step()
        finally:
            for g, old in zip(groups, saved):
                g["lr"] = old
        return SFTMetrics(loss=nll, tokens=total, step_time_s=time.perf_counter() - t0)

    def save_checkpoint(self, directory: str | Path) -> Path:
        """Write a Hugging Face checkpoint (model + tokenizer, safetensors) to
        ``directory`` and the engine's optimizer state to ``directory/deepspeed``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        if self.engine.zero_optimization_stage() == 3:
            # ZeRO-3 shards every weight: gather a full 16-bit copy (collective call).
            state_dict = self.engine._zero3_consolidated_16bit_state_dict()
        else:
            state_dict = None
        if self.engine.global_rank == 0:
            # safetensors is the default format (and the only one in transformers 5).
            self.module.save_pretrained(out, state_dict=state_dict)
            self.tokenizer.save_pretrained(out)
        self.engine.save_checkpoint(str(out / DEEPSPEED_SUBDIR))
        return out

    def load(self, directory: str | Path) -> None:
        """Resume weights and optimizer state from a `save_checkpoint` folder."""
        ds_dir = Path(directory) / DEEPSPEED_SUBDIR
        if not (ds_dir / "latest").is_file():
            raise TrainingError(f"{directory}: no DeepSpeed state (expected {ds_dir}/latest)")
        path, _ = self.engine.load_checkpoint(str(ds_dir))
        if path is None:
            raise TrainingError(f"{ds_dir}: DeepSpeed could not load the checkpoint")


# ---------------------------------------------------------------- the flow's stage


def generation_samples(rt: StageRuntime, generation: int) -> list[TrainSample]:
    """Both roles' samples of one generation, read from DuckDB exactly as generated.

    Designer: each design completion, rewarded by the regret stage, advantages relative
    to the generation's designs (clipped to ``designer.max_advantage``). Agent: every
    turn of every no-hint episode, with its episode's return, advantages relative to the
    episodes of the same environment.
    Samples whose advantage is zero carry no gradient and are left out."""
    store, run = rt.store, rt.run
    samples: list[TrainSample] = []
    if rt.cfg.designer.training:
        designs = queries.rewarded_designs(store, run, generation)
        advs = clip_advantages(group_advantages([d["reward"] for d in designs],
                                                scale=rt.cfg.designer.scale_advantages),
                               rt.cfg.designer.max_advantage)
        samples += [TrainSample("designer", list(d["prompt_token_ids"]), list(d["token_ids"]),
                                list(d["logprobs"]), a)
                    for d, a in zip(designs, advs) if a != 0.0 and d["token_ids"]]
    eps = queries.no_hint_returns(store, run, generation)
    advs = grouped_advantages([e["ret"] for e in eps], [e["env_id"] for e in eps])
    adv_of = {e["episode_id"]: a for e, a in zip(eps, advs) if a != 0.0}
    if adv_of:
        turns = queries.turn_samples(store, run, generation)
        samples += [TrainSample("agent", list(t["prompt_token_ids"]), list(t["token_ids"]),
                                list(t["logprobs"]), adv_of[t["episode_id"]])
                    for t in turns if t["episode_id"] in adv_of and t["token_ids"]]
    return samples


def train_stage(rt: StageRuntime, generation: int, scores: Scores,
                played: Played) -> TrainReport:
    """``training.updates_per_generation`` DeepSpeed steps on the generation's samples,
    then an atomic checkpoint (none when there was nothing to train on).

    The samples are the designs ``scores`` rewarded and the turns of the episodes
    ``played`` without a hint; their token arrays are read from the store."""
    trained_from = rt.latest_checkpoint() or rt.cfg.model.name
    samples = generation_samples(rt, generation)
    result: dict = {"trained_from": trained_from, "train_samples": len(samples),
                    "train_samples_designer": sum(s.role == "designer" for s in samples),
                    "train_samples_agent": sum(s.role == "agent" for s in samples),
                    "train_world_size": rt.cfg.training.world_size}
    updates = rt.cfg.training.updates_per_generation if samples else 0
    with progress.stage("train step", total=max(1, updates)) as bar:
        if samples:
            trainer, seconds, processed = rt.trainer(), 0.0, 0
            for _ in range(updates):
                m = trainer.step(samples)
                seconds += m.step_time_s
                processed += m.tokens_processed
                bar.advance(1, m.tokens_processed)
            # The last update's loss, ratio, clip fraction and KL say how far the
            # updates took the policy from the one that sampled.
            result.update(train_updates=updates, loss=m.loss, approx_kl=m.approx_kl,
                          clip_fraction=m.clip_fraction, grad_norm=m.grad_norm,
                          mean_ratio=m.mean_ratio, train_tokens=m.tokens,
                          train_tokens_per_s=processed / seconds, train_step_s=seconds,
                          kl_ref=m.kl_ref)
        else:
            # Every advantage is zero (e.g. all designs rejected and every episode of an
            # environment returned the same): there is no gradient to take.
            result["skipped"] = "no sample with a non-zero advantage"
    # No step, no new weights: nothing is written (the next generation starts from
    # the same checkpoint as this one did).
    result["checkpoint"] = rt.save_checkpoint(generation) if samples else None
    rt.store.replace_rows("train_steps", {"run": rt.run, "generation": generation}, [{
        "run": rt.run, "generation": generation, "step": 0,
        "metrics": {k: v for k, v in result.items() if k != "checkpoint"},
        "checkpoint": result["checkpoint"]}])
    return TrainReport(**result)

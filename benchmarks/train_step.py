"""Tokens/s of one policy-gradient step: DeepSpeed (ours) vs plain torch vs TRL.

Every contender trains the same model on the same batch in this one process (medians
of ``--repeats`` timed steps after one warm-up step each). TRL's GRPOTrainer is timed on
its loss + backward + optimizer step with generation bypassed; it is skipped with a
message when ``trl`` is not installed. The contenders' steps are interleaved round by
round, so a slow spell of a shared machine does not favour one of them.

    .venv/bin/python benchmarks/train_step.py [--samples 8 --prompt 64 --completion 192]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from spade_tasks.llm.loading import load_model, load_tokenizer, resolve_model  # noqa: E402
from spade_tasks.training import (  # noqa: E402
    TrainEngine,
    TrainingConfig,
    TrainSample,
    _collate,
    _micro_batches,
    _token_logprobs,
    clipped_pg_loss,
)

MODEL = "embedded:smollm2-135m"


def make_batch(n: int, prompt_len: int, completion_len: int, vocab: int, seed: int):
    """Random tokens (the step's cost does not depend on what they say), half per role."""
    rng = random.Random(seed)
    return [
        TrainSample(
            role="designer" if i % 2 else "agent",
            prompt_ids=[rng.randrange(vocab) for _ in range(prompt_len)],
            completion_ids=[rng.randrange(vocab) for _ in range(completion_len)],
            old_logprobs=[0.0] * completion_len,
            advantage=rng.choice([-1.0, 1.0]),
        )
        for i in range(n)
    ]


def interleaved(steps: dict, repeats: int) -> dict[str, float]:
    """Median seconds per step of each contender. One warm-up step each, then ``repeats``
    rounds that time every contender once in turn, so a slow spell of this shared
    machine hits all of them alike instead of whichever happened to run then."""
    for step in steps.values():
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(repeats):
        # Every other round runs in reverse, so no contender always follows the same one.
        order = list(steps.items())[:: -1 if r % 2 else 1]
        for name, step in order:
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
        print(f"  round {r + 1}: " + ", ".join(f"{n.split(' (')[0]} {t[-1]:.1f}s" for n, t in times.items()),
              flush=True)
    return {name: statistics.median(t) for name, t in times.items()}


def torch_step_fn(model, samples, cfg: TrainingConfig, autocast_bf16: bool):
    """Our loss with a plain torch AdamW step: the no-DeepSpeed baseline."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.adam_betas, fused=True)
    total = sum(len(s.completion_ids) for s in samples)
    model.train()

    def step():
        for chunk in _micro_batches(samples, cfg.micro_batch_size):
            mb = _collate(chunk, 0)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast_bf16):
                logp = _token_logprobs(model, mb, torch.device("cpu"))
            loss, _ = clipped_pg_loss(
                logp, mb.old_logp, mb.advantages, mb.comp_mask, cfg.clip_eps_low, cfg.clip_eps_high
            )
            (loss.sum() / total).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def trl_step_fn(model, tokenizer, samples, cfg: TrainingConfig, out_dir: str):
    """GRPOTrainer's compute_loss + accelerator.backward + its optimizer, no generation."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    n_micro = -(-len(samples) // cfg.micro_batch_size)
    args = GRPOConfig(
        output_dir=out_dir,
        per_device_train_batch_size=cfg.micro_batch_size,
        gradient_accumulation_steps=n_micro,
        num_generations=2,
        max_completion_length=max(len(s.completion_ids) for s in samples),
        learning_rate=cfg.lr,
        loss_type="dapo",
        epsilon=cfg.clip_eps_low,
        epsilon_high=cfg.clip_eps_high,
        beta=0.0,
        max_grad_norm=1.0,
        bf16=True,
        use_cpu=True,
        report_to="none",
        logging_steps=10**9,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["x"] * len(samples)}),
        processing_class=tokenizer,
    )
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = n_micro
    total = sum(len(s.completion_ids) for s in samples)
    batches = []
    for chunk in _micro_batches(samples, cfg.micro_batch_size):
        # TRL's layout: prompts left-padded, completions right-padded, separate tensors.
        p_len = max(len(s.prompt_ids) for s in chunk)
        c_len = max(len(s.completion_ids) for s in chunk)
        prompt_ids = torch.zeros(len(chunk), p_len, dtype=torch.long)
        prompt_mask = torch.zeros_like(prompt_ids)
        completion_ids = torch.zeros(len(chunk), c_len, dtype=torch.long)
        completion_mask = torch.zeros_like(completion_ids)
        old = torch.zeros(len(chunk), c_len)
        for i, s in enumerate(chunk):
            prompt_ids[i, p_len - len(s.prompt_ids) :] = torch.tensor(s.prompt_ids)
            prompt_mask[i, p_len - len(s.prompt_ids) :] = 1
            completion_ids[i, : len(s.completion_ids)] = torch.tensor(s.completion_ids)
            completion_mask[i, : len(s.completion_ids)] = 1
            old[i, : len(s.old_logprobs)] = torch.tensor(s.old_logprobs)
        batches.append(
            {
                "prompt_ids": prompt_ids,
                "prompt_mask": prompt_mask,
                "completion_ids": completion_ids,
                "completion_mask": completion_mask,
                "advantages": torch.tensor([s.advantage for s in chunk]),
                "old_per_token_logps": old,
                "num_items_in_batch": torch.tensor(float(total)),
            }
        )
    trainer.model.train()

    def step():
        for inputs in batches:
            with trainer.compute_loss_context_manager():
                loss = trainer.compute_loss(trainer.model, inputs)
            trainer.accelerator.backward(loss)
        trainer.accelerator.clip_grad_norm_(trainer.model.parameters(), 1.0)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--completion", type=int, default=192)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--deepspeed-config",
        nargs="+",
        default=[str(TrainingConfig().deepspeed_config)],
        help="one or more DeepSpeed JSON configs to time (the first is the baseline)",
    )
    a = ap.parse_args()

    cfg = TrainingConfig(lr=1e-6, micro_batch_size=a.micro_batch)
    ref = resolve_model(MODEL)
    tokenizer = load_tokenizer(ref)
    samples = make_batch(a.samples, a.prompt, a.completion, len(tokenizer), a.seed)
    tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    print(
        f"batch: {a.samples} x ({a.prompt} prompt + {a.completion} completion) = {tokens} "
        f"tokens, micro-batch {a.micro_batch}, torch threads {torch.get_num_threads()}"
    )

    steps = {}
    engines = []  # kept alive: every contender holds its own model and optimizer
    for i, ds_path in enumerate(a.deepspeed_config):
        ds_cfg = cfg.model_copy(update={"deepspeed_config": ds_path})
        engine = TrainEngine(load_model(ref, "float32"), tokenizer, ds_cfg)
        if i == 0:
            # On-policy old logprobs, as the generation step would hand them over.
            samples = [
                TrainSample(s.role, s.prompt_ids, s.completion_ids, lp, s.advantage)
                for s, lp in zip(samples, engine.logprobs(samples))
            ]
        precision = "bf16" if engine.engine.bfloat16_enabled() else "fp32"
        engines.append(engine)
        steps[f"deepspeed ({os.path.basename(ds_path)}, {precision})"] = (
            lambda e=engine: e.step(samples))
    ds_name = next(iter(steps))

    for name, bf16 in [("torch AdamW fp32", False), ("torch AdamW bf16 autocast", True)]:
        steps[name] = torch_step_fn(load_model(ref, "float32"), samples, cfg, bf16)

    tmp = tempfile.TemporaryDirectory()
    if importlib.util.find_spec("trl") is None:
        print("TRL: skipped (trl is not installed; `pip install trl` to compare)")
    else:
        steps["trl GRPOTrainer (bf16, no generation)"] = trl_step_fn(
            load_model(ref, "float32"), tokenizer, samples, cfg, tmp.name)

    results = interleaved(steps, a.repeats)
    tmp.cleanup()
    base = results[ds_name]
    # The goal reads "DeepSpeed's tokens/s >= 1.0x the contender's": their time over ours.
    print(f"{'contender':42s} {'s/step':>8s} {'tok/s':>8s} {'deepspeed speed vs it':>22s}")
    for name, secs in results.items():
        print(f"{name:42s} {secs:8.2f} {tokens / secs:8.1f} {secs / base:21.2f}x")


if __name__ == "__main__":
    main()

"""The policy-gradient step: a pure loss check, then the real model through DeepSpeed.

The slow tests share one engine (model load ~20 s; the first DeepSpeed init on a
machine JIT-builds a small op, ~90 s, cached in ~/.cache/torch_extensions).
"""

import os

import pytest
import torch

from spade_tasks.errors import TrainingError
from spade_tasks.training import (
    TrainEngine,
    TrainingConfig,
    TrainSample,
    clipped_pg_loss,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PAIRS = [
    ("The capital of France is", " Paris, a city on the Seine."),
    ("List three colours:", " red, green and blue."),
    ("2 + 2 =", " 4"),
    ("Write one line about the sea:", " The sea is wide, grey and cold tonight."),
]


# ---------------------------------------------------------------- pure loss, fast


def test_clipped_loss_stops_gradient_outside_the_clip():
    old = torch.zeros(1, 4)
    # ratios 1.0, 1.5 (above 1.28), 0.5 (below 0.8), 1.1
    new = torch.log(torch.tensor([[1.0, 1.5, 0.5, 1.1]])).requires_grad_()
    mask = torch.ones(1, 4)
    loss, stats = clipped_pg_loss(new, old, torch.tensor([1.0]), mask, 0.2, 0.28)
    loss.sum().backward()
    # Positive advantage: the token above 1 + 0.28 is clipped (no gradient), the one
    # below 1 - 0.2 is not (pessimistic min keeps pushing it up).
    assert stats["clipped"].tolist() == [[0.0, 1.0, 0.0, 0.0]]
    assert new.grad[0, 1] == 0 and new.grad[0, 2] < 0 and new.grad[0, 0] < 0
    assert loss[0, 0].item() == pytest.approx(-1.0)


def test_clipped_loss_ignores_masked_tokens():
    new = torch.tensor([[0.3, -2.0]]).requires_grad_()
    loss, stats = clipped_pg_loss(
        new, torch.zeros(1, 2), torch.tensor([-1.0]), torch.tensor([[1.0, 0.0]]), 0.2, 0.28
    )
    loss.sum().backward()
    assert loss[0, 1] == 0 and new.grad[0, 1] == 0 and stats["k3"][0, 1] == 0


@pytest.mark.parametrize("amx, gpu, want", [(True, False, True), (False, False, False),
                                             (False, True, True)])
def test_auto_precision_follows_the_hardware(monkeypatch, amx, gpu, want):
    from spade_tasks import training
    from spade_tasks.llm import loading

    monkeypatch.setattr(loading, "cpu_has_amx", lambda: amx)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    ds = training.load_deepspeed_config(TrainingConfig())  # configs/deepspeed/cpu.json
    assert ds["bf16"]["enabled"] is want


def test_bad_bf16_setting_names_the_file(tmp_path):
    from spade_tasks.errors import ConfigError
    from spade_tasks.training import load_deepspeed_config

    p = tmp_path / "ds.json"
    p.write_text('{"managed_gradient_accumulation": false, "bf16": {"enabled": "yes"}}')
    with pytest.raises(ConfigError, match=r"ds.json: bf16.enabled .*'yes'"):
        load_deepspeed_config(TrainingConfig(deepspeed_config=p))


# ---------------------------------------------------------------- real model, slow


@pytest.fixture(scope="module")
def engine():
    cfg = TrainingConfig(lr=3e-5, micro_batch_size=2)
    return TrainEngine.from_model_name("embedded:smollm2-135m", cfg)


def _samples(engine, advantages, roles=None):
    """PAIRS as samples whose old logprobs are the engine's current ones (on-policy)."""
    tok = engine.tokenizer
    roles = roles or ["designer", "agent"] * (len(advantages) // 2 + 1)
    raw = []
    for (prompt, completion), adv, role in zip(PAIRS, advantages, roles):
        p = tok(prompt, add_special_tokens=False).input_ids
        c = tok(completion, add_special_tokens=False).input_ids
        raw.append(TrainSample(role, p, c, [0.0] * len(c), adv))
    current = engine.logprobs(raw)
    return [
        TrainSample(s.role, s.prompt_ids, s.completion_ids, lp, s.advantage)
        for s, lp in zip(raw, current)
    ]


@pytest.mark.slow
def test_logprobs_match_an_unpadded_forward(engine):
    samples = _samples(engine, [0.0] * len(PAIRS))
    model = engine.module
    with torch.no_grad():
        for s in samples:
            ids = torch.tensor([s.prompt_ids + s.completion_ids])
            logp = model(input_ids=ids).logits[0].float().log_softmax(-1)
            n = len(s.prompt_ids)
            want = [logp[n - 1 + j, t].item() for j, t in enumerate(s.completion_ids)]
            # Padding changes only float rounding (fp32 here; bf16 on AMX CPUs, where
            # configs/deepspeed/cpu.json's "auto" picks it); an alignment error would be
            # off by whole nats. bf16 logits near 20 round in steps of 0.125: a padded
            # batch measured 0.07 from the unpadded forward on one token.
            tol = 0.15 if engine.engine.bfloat16_enabled() else 1e-3
            assert s.old_logprobs == pytest.approx(want, abs=tol)


@pytest.mark.slow
def test_step_changes_weights_and_reports_on_policy_metrics(engine):
    samples = _samples(engine, [1.0, -1.0, 0.5, -0.5])
    before = {n: p.detach().clone() for n, p in engine.module.named_parameters()}
    m = engine.step(samples)
    changed = sum(
        not torch.equal(before[n], p.detach()) for n, p in engine.module.named_parameters()
    )
    assert changed > len(before) // 2
    assert m.tokens == sum(len(s.completion_ids) for s in samples)
    assert m.tokens_by_role["designer"] + m.tokens_by_role["agent"] == m.tokens
    assert m.tokens_by_role["designer"] > 0 and m.tokens_by_role["agent"] > 0
    assert m.mean_ratio == pytest.approx(1.0, abs=0.05)
    assert m.clip_fraction < 0.05
    assert m.grad_norm > 0 and m.tokens_per_s > 0
    assert m.kl_ref is None


@pytest.mark.slow
def test_a_second_update_on_the_same_samples_sees_the_moved_policy(engine):
    """The ground of ``training.updates_per_generation``: the first update is on-policy
    (ratio 1), the next one compares the moved policy with the sampling one, so the
    clipped ratio is what bounds it."""
    samples = _samples(engine, [1.0, -1.0, 0.5, -0.5])
    first = engine.step(samples)
    second = engine.step(samples)
    assert first.mean_ratio == pytest.approx(1.0, abs=0.05)
    assert abs(second.mean_ratio - 1.0) > 3 * abs(first.mean_ratio - 1.0)
    assert second.approx_kl > 3 * first.approx_kl
    assert second.clip_fraction > first.clip_fraction


@pytest.mark.slow
def test_gradient_sign_raises_positive_and_lowers_negative(engine):
    samples = _samples(engine, [1.0, -1.0], roles=["agent", "designer"])
    start = [sum(lp) for lp in engine.logprobs(samples)]
    for _ in range(2):
        m = engine.step(samples)  # old logprobs stay fixed, as in PPO epochs
    end = [sum(lp) for lp in engine.logprobs(samples)]
    assert end[0] > start[0], (start, end)
    assert end[1] < start[1], (start, end)
    assert m.mean_ratio != pytest.approx(1.0, abs=1e-4)


@pytest.mark.slow
def test_checkpoint_round_trips(engine, tmp_path):
    from transformers import AutoModelForCausalLM

    engine.save_checkpoint(tmp_path)
    ids = torch.tensor([engine.tokenizer("Hello there, how are", add_special_tokens=False).input_ids])
    with torch.no_grad():
        want = engine.module(input_ids=ids).logits.float()
        loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=engine.module.dtype).eval()
        got = loaded(input_ids=ids).logits.float()
    assert torch.equal(want, got)
    assert (tmp_path / "tokenizer_config.json").is_file()

    # Resume: load() brings back the saved weights over changed ones (a perturbation
    # stands in for further steps, which cost ~10 s each here).
    saved = {n: p.detach().clone() for n, p in engine.module.named_parameters()}
    with torch.no_grad():
        for p in engine.module.parameters():
            p.add_(0.01)
    engine.load(tmp_path)
    for n, p in engine.module.named_parameters():
        assert torch.equal(saved[n], p.detach()), n


@pytest.mark.slow
def test_bad_batches_fail_loudly(engine):
    with pytest.raises(TrainingError, match="empty batch"):
        engine.step([])
    with pytest.raises(TrainingError, match="old logprobs"):
        engine.step([TrainSample("agent", [1, 2], [3, 4], [0.0], 1.0)])
    with pytest.raises(TrainingError, match="no DeepSpeed state"):
        engine.load("/nonexistent/checkpoint")


@pytest.mark.slow
def test_sft_step_learns_target_tokens_only_and_keeps_the_pg_lr(engine):
    from spade_tasks.training import SFTSample

    tok = engine.tokenizer
    prompt, target = PAIRS[0]
    s = SFTSample(tok(prompt, add_special_tokens=False).input_ids,
                  tok(target, add_special_tokens=False).input_ids)
    probe = [TrainSample("designer", s.prompt_ids, s.target_ids, [0.0] * len(s.target_ids), 0.0)]
    nll0 = -sum(engine.logprobs(probe)[0]) / len(s.target_ids)
    m = engine.sft_step([s], lr=1e-4)
    # The reported loss is the target tokens' mean NLL before the update.
    assert m.loss == pytest.approx(nll0, rel=1e-3) and m.tokens == len(s.target_ids)
    engine.sft_step([s], lr=1e-4)
    nll2 = -sum(engine.logprobs(probe)[0]) / len(s.target_ids)
    assert nll2 < nll0
    assert all(g["lr"] == engine.config.lr for g in engine.engine.optimizer.param_groups)


def test_a_stale_build_lock_of_deepspeeds_op_is_cleared_before_it_is_built(
        tmp_path, monkeypatch):
    """A run killed while DeepSpeed built its shared-memory op left the op's build lock,
    and the next run's train step waited on it, idle, for 27 minutes. ``init_distributed``
    clears a stale one, under the name DeepSpeed builds the op with."""
    import time

    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder

    from spade_tasks import training
    from spade_tasks.build_locks import STALE_LOCK_S

    assert training.SHM_OP == ShareMemCommBuilder.NAME
    monkeypatch.setattr(os, "environ", os.environ.copy())  # its defaults stay in this test
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    lock = tmp_path / training.SHM_OP / "lock"
    lock.parent.mkdir()
    lock.touch()
    old = time.time() - STALE_LOCK_S - 5
    os.utime(lock, (old, old))
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)  # no group here
    training.init_distributed()
    assert not lock.exists()

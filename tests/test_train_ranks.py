"""DeepSpeed across ranks (Ray actors, gloo on CPU): a 2-rank step on a fixed batch
equals the 1-rank step, and ZeRO-2 really partitions the optimizer state.

The model is a tiny randomly initialised Llama (2 layers, hidden 64), so a rank starts
in seconds; the first DeepSpeed start on a machine JIT-builds a small op (cached).
"""

import json
import os
import random

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

from spade_tasks.config import TrainingConfig  # noqa: E402
from spade_tasks.training import TrainSample, _rank_share  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# fp32 on both sides; only the order of float sums differs between 1 and 2 ranks.
LOSS_RTOL = 1e-5
WEIGHT_ATOL = 1e-6  # lr is 1e-3: a wrong gradient moves weights by ~1e-3


def test_rank_share_covers_every_micro_batch_once():
    chunks = [[i] for i in range(5)]
    shares = [_rank_share(chunks, r, 2) for r in range(2)]
    assert [len(s) for s in shares] == [3, 3]  # as many backward passes on every rank
    real = sorted(c[0] for s in shares for c, w in s if w)
    assert real == [0, 1, 2, 3, 4]
    assert [w for c, w in shares[1]] == [1, 1, 0]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from spade_tasks.llm.loading import load_tokenizer, resolve_model

    tok = load_tokenizer(resolve_model("embedded:smollm2-135m"))
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256))
    out = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


@pytest.fixture(scope="module")
def ray_local():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _batch(vocab: int) -> list[TrainSample]:
    rng = random.Random(0)
    out = []
    for i in range(6):  # 3 micro-batches of 2: uneven over 2 ranks
        p, c = rng.randrange(4, 12), rng.randrange(3, 9)
        out.append(TrainSample("agent" if i % 2 else "designer",
                               [rng.randrange(vocab) for _ in range(p)],
                               [rng.randrange(vocab) for _ in range(c)],
                               [-rng.uniform(8, 12) for _ in range(c)],
                               rng.choice([-1.0, 1.0, 0.5])))
    return out


def _ds_config(tmp_path, stage: int) -> str:
    from spade_tasks.config import REPO_ROOT

    ds = json.loads((REPO_ROOT / "configs/deepspeed/cpu.json").read_text())
    ds["bf16"] = {"enabled": False}
    ds["zero_optimization"] = {"stage": stage}
    p = tmp_path / f"zero{stage}.json"
    p.write_text(json.dumps(ds))
    return str(p)


def _step(model, tmp_path, world: int, stage: int):
    from spade_tasks.train_ranks import RankedTrainer

    cfg = TrainingConfig(lr=1e-3, micro_batch_size=2,
                         deepspeed_config=_ds_config(tmp_path, stage))
    trainer = RankedTrainer(model, cfg, world)
    try:
        import transformers

        vocab = transformers.AutoConfig.from_pretrained(model).vocab_size
        m = trainer.step(_batch(vocab))
        return m, trainer.state_dict(), trainer.partition_numel()
    finally:
        trainer.close()


@pytest.mark.parametrize("stage", [0, 2])
def test_two_ranks_equal_one_rank(tiny_model, ray_local, tmp_path, stage):
    import torch

    one, w1, part1 = _step(tiny_model, tmp_path, 1, stage)
    two, w2, part2 = _step(tiny_model, tmp_path, 2, stage)
    from safetensors.torch import load_file

    before = load_file(os.path.join(tiny_model, "model.safetensors"))
    assert two.loss == pytest.approx(one.loss, rel=LOSS_RTOL)
    assert two.tokens == one.tokens and two.tokens_processed == one.tokens_processed
    assert two.clip_fraction == pytest.approx(one.clip_fraction, abs=1e-9)
    assert two.grad_norm == pytest.approx(one.grad_norm, rel=1e-4)
    moved = 0
    for name, p in w1.items():
        assert torch.allclose(w2[name], p, atol=WEIGHT_ATOL, rtol=0), name
        key = name if name in before else None
        if key and not torch.equal(before[key].float(), p):
            moved += 1
    assert moved > len(w1) // 2  # the step did change the weights
    if stage == 0:
        assert part2 == [part1[0]] * 2  # every rank holds all optimizer state
    else:  # ZeRO-2: each rank holds about half
        assert sum(part2) >= part1[0] and max(part2) <= part1[0] // 2 + 64

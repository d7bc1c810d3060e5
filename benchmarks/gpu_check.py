"""One prepared GPU check: decode tokens/s and the training step's MFU on one CUDA device.

Runs where no hub can be reached: the model is the embedded default's architecture
(SmolLM2-135M's config and tokenizer, saved beside this script's inputs) with random
weights, which cost what the real weights cost. A larger shape of the same family
(~1.3B: Qwen3-1.7B's layer shape on SmolLM2's vocabulary) shows the step at a size
that keeps a GPU busy. Contenders share the process, the batch and the precision
(bf16); medians of timed repeats after a warm-up:

- decode: Hugging Face ``generate`` (the reference path) against the project's
  transformers backend on the same prompts, at several batch sizes;
- train: the project's DeepSpeed step (``TrainEngine``, bf16, ZeRO-2 config) against a
  plain torch bf16 AdamW step of the same loss; MFU = 6 * params * tokens / s / peak.

    python3 benchmarks/gpu_check.py --config-dir DIR [--out FILE.json]

DIR holds SmolLM2-135M's config.json and tokenizer files (``save_pretrained`` of the
embedded model's config and tokenizer), so the check needs no weights on the device.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# Dense bf16 peak of an H100/H200 SXM (tensor cores, no sparsity).
PEAK_BF16 = {"H200": 989e12, "H100": 989e12}


def _sync() -> None:
    torch.cuda.synchronize()


def timed(fn, repeats: int) -> float:
    fn()
    _sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def random_model(config_dir: Path, out_dir: Path, **overrides):
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM

    cfg = AutoConfig.from_pretrained(config_dir)
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(config_dir).save_pretrained(out_dir)
    return sum(p.numel() for p in model.parameters())


def bench_decode(model_dir: Path, batches: list[int], new_tokens: int, prompt_len: int) -> list[dict]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from spade_tasks.config import ModelConfig
    from spade_tasks.llm.base import SamplingParams
    from spade_tasks.llm.transformers_backend import TransformersBackend

    rows = []
    hf = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).cuda().eval()
    # The backend's loader places models on the CPU (vLLM is the GPU engine); the same
    # module on the GPU is handed in, so both contenders decode with the same weights.
    backend = TransformersBackend(
        ModelConfig(name=str(model_dir), backend="transformers", dtype="bfloat16",
                    max_batch=max(batches), max_new_tokens=new_tokens),
        model=hf, tokenizer=AutoTokenizer.from_pretrained(model_dir))
    rng = random.Random(0)
    vocab = hf.config.vocab_size
    for b in batches:
        ids = torch.tensor([[rng.randrange(3, vocab) for _ in range(prompt_len)] for _ in range(b)],
                           device="cuda")

        def hf_generate():
            with torch.no_grad():
                hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True,
                            max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                            pad_token_id=0)

        hf_s = timed(hf_generate, 2)
        prompts = [[{"role": "user", "content": " ".join(str(rng.randrange(1000))
                                                          for _ in range(prompt_len // 2))}]
                   for _ in range(b)]
        params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, seed=0)
        n_tokens = []

        def ours_fn():
            comps = backend.generate(prompts, params)
            n_tokens.append(sum(len(c.token_ids) for c in comps))

        try:
            seconds = timed(ours_fn, 2)
            ours_tok_s = n_tokens[-1] / seconds
            ours_note = ""
        except RuntimeError as e:  # the backend keeps its batch tensors on the CPU
            ours_tok_s, ours_note = None, str(e).splitlines()[0][:120]
        rows.append({"batch": b, "hf_tok_s": b * new_tokens / hf_s, "ours_tok_s": ours_tok_s,
                     "ours_error": ours_note})
        ours_txt = f"{ours_tok_s:9.0f} tok/s" if ours_tok_s else f"failed: {ours_note}"
        print(f"decode batch {b:4d}: HF generate {rows[-1]['hf_tok_s']:9.0f} tok/s | "
              f"spade transformers backend {ours_txt}", flush=True)
    del backend, hf
    torch.cuda.empty_cache()
    return rows


def bench_train(model_dir: Path, n_params: int, samples: int, prompt: int, completion: int,
                peak: float) -> dict:
    from spade_tasks.config import TrainingConfig
    from spade_tasks.training import TrainEngine, TrainSample, clipped_pg_loss

    rng = random.Random(0)
    vocab = 49152

    def sample(i):
        return TrainSample(role="agent" if i % 2 else "designer",
                           prompt_ids=[rng.randrange(3, vocab) for _ in range(prompt)],
                           completion_ids=[rng.randrange(3, vocab) for _ in range(completion)],
                           old_logprobs=[0.0] * completion, advantage=rng.choice([-1.0, 1.0]))

    batch = [sample(i) for i in range(samples)]
    tokens = samples * (prompt + completion)
    cfg = TrainingConfig(lr=1e-6, micro_batch_size=samples,
                         deepspeed_config=REPO / "configs/deepspeed/gpu-zero2.json")
    engine = TrainEngine.from_model_name(str(model_dir), cfg)
    ds_s = timed(lambda: engine.step(batch), 3)
    del engine
    torch.cuda.empty_cache()

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)
    ids = torch.tensor([s.prompt_ids + s.completion_ids for s in batch], device="cuda")
    adv = torch.tensor([s.advantage for s in batch], device="cuda")

    def plain():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=ids).logits[:, prompt - 1:-1].float()
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, prompt:, None]).squeeze(-1)
        mask = torch.ones_like(logp)
        loss, _ = clipped_pg_loss(logp, logp.detach(), adv, mask, 0.2, 0.28)
        (loss.sum() / mask.sum()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    plain_s = timed(plain, 3)
    del model, opt
    torch.cuda.empty_cache()
    row = {"params": n_params, "tokens": tokens, "deepspeed_s": ds_s, "plain_torch_s": plain_s,
           "deepspeed_mfu": 6 * n_params * tokens / ds_s / peak,
           "plain_torch_mfu": 6 * n_params * tokens / plain_s / peak,
           "deepspeed_vs_plain": plain_s / ds_s}
    print(f"train {n_params / 1e6:7.0f}M params, {samples}x{prompt + completion} tokens: "
          f"DeepSpeed {ds_s * 1e3:7.1f} ms (MFU {row['deepspeed_mfu']:.1%}) | plain torch "
          f"{plain_s * 1e3:7.1f} ms (MFU {row['plain_torch_mfu']:.1%}) | ratio "
          f"{row['deepspeed_vs_plain']:.2f}x", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config-dir", type=Path, required=True,
                    help="folder with SmolLM2-135M's config.json and tokenizer")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--batches", default="1,16,64,256", help="decode batch sizes")
    ap.add_argument("--new-tokens", type=int, default=256)
    args = ap.parse_args()
    name = torch.cuda.get_device_name(0)
    peak = next((v for k, v in PEAK_BF16.items() if k in name), 989e12)
    print(f"device: {name}, torch {torch.__version__}", flush=True)
    out = {"device": name, "torch": torch.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "smollm2-random"
        n_small = random_model(args.config_dir, small)
        out["decode"] = bench_decode(small, [int(b) for b in args.batches.split(",")],
                                     args.new_tokens, 256)
        out["train_135m"] = bench_train(small, n_small, 16, 512, 512, peak)
        big = Path(tmp) / "llama-1.3b-random"
        n_big = random_model(args.config_dir, big, hidden_size=2048, intermediate_size=6144,
                             num_hidden_layers=24, num_attention_heads=16,
                             num_key_value_heads=8, head_dim=128)
        out["train_1_3b"] = bench_train(big, n_big, 8, 512, 512, peak)
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""GPU: training-step MFU in bf16 and decode tokens/s, plain torch + transformers.

Self-contained (no DeepSpeed, no vLLM, no downloads): the models are randomly
initialised with the shapes of SmolLM2-135M (the embedded model) and of a 1.2B
Llama-3.2-1B-like model; speed does not depend on the weights' values. The training step
is our loss shape (token log-probs of a completion, clipped policy gradient) with bf16
weights and fp32 AdamW state, as DeepSpeed's bf16 mode would hold them on one GPU; MFU
counts 6 x parameters x tokens plus attention against the GPU's dense bf16 peak
(``--peak-tflops``, H200: 989). Runs in about 2-3 minutes on an H200.

    python3 benchmarks/gpu_train_decode.py [--peak-tflops 989]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         tie_word_embeddings=True),
    "llama-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                     num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                     tie_word_embeddings=True),
}


def model_of(shape: str) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(max_position_embeddings=4096, **SHAPES[shape])
    return LlamaForCausalLM(cfg).to("cuda", torch.bfloat16)


def sync_time(fn, repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def train_row(shape: str, batch: int, seq: int, peak: float) -> str:
    model = model_of(shape)
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq), device="cuda")
    old = torch.full((batch, seq - 1), -10.0, device="cuda")
    adv = torch.randn(batch, 1, device="cuda")

    def step():
        logits = model(input_ids=ids).logits[:, :-1].float()
        logp = logits.gather(-1, ids[:, 1:, None]).squeeze(-1) - torch.logsumexp(logits, -1)
        ratio = torch.exp(logp - old)
        loss = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.28) * adv).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    secs = sync_time(step, 3)
    tokens = batch * seq
    cfg = model.config
    # 6ND, + causal attention (QK^T and AV, forward x3 for backward), + the recompute of
    # gradient checkpointing (one more forward: 2ND).
    attn = 6 * cfg.num_hidden_layers * cfg.hidden_size * seq * tokens
    flops = 8 * n_params * tokens + attn
    mem = torch.cuda.max_memory_allocated() / 2**30
    del model, opt
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return (f"train {shape:13s} {n_params / 1e6:7.0f}M  batch {batch}x{seq}: {secs:6.3f} s/step, "
            f"{tokens / secs:9.0f} tok/s, MFU {flops / secs / (peak * 1e12):6.1%} "
            f"(model FLOPs 6ND+attn: {(flops - 2 * n_params * tokens) / secs / (peak * 1e12):6.1%}), "
            f"peak mem {mem:.1f} GiB")


@torch.no_grad()
def decode_row(shape: str, batch: int, prompt: int, new: int) -> str:
    model = model_of(shape).eval()
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device="cuda")

    def gen():
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                       min_new_tokens=new, do_sample=True, top_p=1.0, pad_token_id=0)

    secs = sync_time(gen, 2)
    del model
    torch.cuda.empty_cache()
    return (f"decode {shape:12s} batch {batch:4d}, {prompt} prompt + {new} new: "
            f"{batch * new / secs:9.0f} tok/s ({secs:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for shape, batch, seq in [("smollm2-135m", 16, 1024), ("smollm2-135m", 64, 1024),
                              ("llama-1b", 16, 1024)]:
        print(train_row(shape, batch, seq, a.peak_tflops), flush=True)
    for shape, batch in [("smollm2-135m", 1), ("smollm2-135m", 64), ("smollm2-135m", 256),
                         ("llama-1b", 64)]:
        print(decode_row(shape, batch, 256, 128), flush=True)


if __name__ == "__main__":
    main()

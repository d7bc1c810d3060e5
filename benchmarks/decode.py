"""Decode throughput of each available backend against single-sequence ``model.generate``.

Prints generated tokens/s per backend and batch size, the ratio to a batch-1
``transformers`` ``generate`` baseline measured in the same process (this machine is
shared, so only ratios within one run mean much), and the memory-bandwidth bound: each
decode step reads every weight once, so one sequence cannot beat ``bandwidth / bytes``
steps per second.

    python benchmarks/decode.py                       # ~2-3 min: 64 new tokens, batch 1/4/8/16
    python benchmarks/decode.py --new-tokens 256 --batches 1,16 --dtype float32

Rows: ``transformers`` is the backend as configured by default (for Llama models, the
written-out decode step of ``llm/cpu/decode.py``, its matmuls through the packed kernel
of ``llm/cpu/linear.py`` on AVX-512 and AVX2 CPUs); ``tf-mkl`` the same step with MKL's matmuls;
``tf-forward`` the same backend and weights calling the model's own forward at each
step; ``hf.generate`` batched ``model.generate``; ``vllm`` where it is installed;
``llama.cpp`` one stream of the GGUF file where ``llama-cpp-python`` is installed
(``pip install llama-cpp-python``: a source build of several minutes, so not part of
``make setup``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from spade_tasks.config import ModelConfig  # noqa: E402
from spade_tasks.llm.base import SamplingParams, render_prompts  # noqa: E402
from spade_tasks.llm.loading import load_model, resolve_dtype, resolve_model  # noqa: E402
from spade_tasks.llm.transformers_backend import TransformersBackend  # noqa: E402

TOPICS = ["a dragon", "the sea", "a city at night", "an old clock", "a lost letter", "winter",
          "a robot gardener", "a mountain village"]


def prompts(tok, n: int, context_words: int = 0) -> list[list[int]]:
    """Distinct prompts of slightly different lengths that invite long answers; with
    ``context_words``, each first carries that many words of the embedded corpus (the
    designer's prompts hold a document and example programs: thousands of tokens)."""
    context = ""
    if context_words:
        from spade_tasks.config import CorpusConfig
        from spade_tasks.corpus import load_corpus

        words = " ".join(row["text"] for row in load_corpus(CorpusConfig())).split()
        context = "Read this first.\n\n" + " ".join(words[:context_words]) + "\n\n"
    convs = [[{"role": "user", "content": context + f"Write a long, detailed story about {TOPICS[i % len(TOPICS)]}"
               + " (part {})".format(i // len(TOPICS) + 1) * (i % 3)}] for i in range(n)]
    return render_prompts(tok, convs, None)


def timed(fn, repeats: int) -> tuple[float, int]:
    """Median seconds over ``repeats`` calls and the tokens the last call produced."""
    times, n = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), n


def hf_generate(model, tok, ids: list[list[int]], new_tokens: int) -> int:
    """Plain ``model.generate`` with left padding, sampling exactly ``new_tokens`` per row."""
    L = max(map(len, ids))
    x = torch.tensor([[tok.pad_token_id] * (L - len(p)) + p for p in ids])
    mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in ids])
    with torch.inference_mode():
        model.generate(x, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                       do_sample=True, top_p=1.0, top_k=0, pad_token_id=tok.pad_token_id)
    return new_tokens * len(ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded:smollm2-135m")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                    help="auto: bf16 on a CPU with AMX, else fp32 (the backend's default)")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batches", default="1,4,8,16")
    ap.add_argument("--context-words", type=int, default=0,
                    help="prefix every prompt with this many corpus words (long-prompt decode)")
    ap.add_argument("--repeats", type=int, default=1, help="median of this many timed runs")
    ap.add_argument("--bandwidth-gbs", type=float, default=26.0, help="memory bandwidth for the bound")
    ap.add_argument("--no-hf-batched", action="store_true", help="skip batched model.generate rows")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    args.dtype = resolve_dtype(args.dtype)
    cfg = ModelConfig(name=args.model, dtype=args.dtype, max_batch=max(batches))

    t = time.perf_counter()
    tf = TransformersBackend(cfg)
    print(f"loaded {args.model} ({args.dtype}) in {time.perf_counter() - t:.1f}s; torch threads {torch.get_num_threads()}")
    tok = tf.tokenizer
    # The baseline is plain transformers: its own copy of the model, untouched by the
    # backend (which switches the attention function).
    model = load_model(resolve_model(args.model), args.dtype)
    params = SamplingParams(max_new_tokens=args.new_tokens, temperature=1.0, seed=0)
    all_ids = prompts(tok, max(batches), args.context_words)

    hf_generate(model, tok, all_ids[:1], 4)  # warm-up: first calls allocate and pick kernels
    base_s, base_n = timed(lambda: hf_generate(model, tok, all_ids[:1], args.new_tokens), args.repeats)
    base = base_n / base_s
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    bound = args.bandwidth_gbs * 1e9 / weight_bytes
    print(f"prompts: {min(map(len, all_ids))}-{max(map(len, all_ids))} tokens")
    print(f"baseline model.generate batch 1: {base:.1f} tok/s")
    print(f"bandwidth bound: {weight_bytes / 1e6:.0f} MB of weights per step at {args.bandwidth_gbs:g} GB/s "
          f"= {bound:.0f} steps/s (= tok/s per sequence; {bound / base:.1f}x the baseline)")

    runners = {"transformers": lambda ids: sum(len(c.token_ids) for c in tf.generate_from_ids(ids, params))}
    if tf._decoder is not None and tf._decoder.linear is not torch.nn.functional.linear:
        # the same backend and weights, multiplying with MKL instead of the packed kernel
        mkl = TransformersBackend(cfg.model_copy(update={"decode_kernel": False}), tf.model, tok)
        runners["tf-mkl"] = lambda ids: sum(len(c.token_ids) for c in mkl.generate_from_ids(ids, params))
    if tf._decoder is not None:  # the same backend and weights, decoding with model.forward
        fwd = TransformersBackend(cfg.model_copy(update={"fast_decode": False}), tf.model, tok)
        runners["tf-forward"] = lambda ids: sum(len(c.token_ids) for c in fwd.generate_from_ids(ids, params))
    if not args.no_hf_batched:
        runners["hf.generate"] = lambda ids: hf_generate(model, tok, ids, args.new_tokens)
    if importlib.util.find_spec("vllm") is not None:
        from spade_tasks.llm.vllm_backend import VLLMBackend

        t = time.perf_counter()
        vb = VLLMBackend(cfg)
        print(f"vllm engine started in {time.perf_counter() - t:.1f}s")
        vb.generate_from_ids(all_ids[:1], SamplingParams(max_new_tokens=4))
        runners["vllm"] = lambda ids: sum(len(c.token_ids) for c in vb.generate_from_ids(ids, params))
    else:
        print("vllm: not installed, skipped")

    rates: dict[tuple[str, int], float] = {}
    print(f"\n{'backend':<14}{'batch':>6}{'tokens':>8}{'tok/s':>9}{'x baseline':>12}{'x bound/seq':>13}")
    for name, run in runners.items():
        for b in batches:
            s, n = timed(lambda: run(all_ids[:b]), args.repeats)
            rates[name, b] = n / s
            print(f"{name:<14}{b:>6}{n:>8}{n / s:>9.1f}{n / s / base:>12.2f}{n / s / b / bound:>13.2f}")
    single = llama_cpp_single_stream(args.model, all_ids[0], args.new_tokens, args.repeats)
    if single is not None:
        print(f"{'llama.cpp':<14}{1:>6}{args.new_tokens:>8}{single:>9.1f}{single / base:>12.2f}"
              f"{'':>13}   (the GGUF file itself, one stream)")
    top = max(batches)
    if ("transformers", top) in rates:
        rate = rates["transformers", top]
        vs = f"; {rate / single:.2f}x llama.cpp's one stream" if single else ""
        print(f"\ngoal at {top} sequences: >= 8x the baseline and above the best single-stream "
              f"CPU engine: {rate / base:.2f}x the baseline{vs}")


def llama_cpp_single_stream(model: str, prompt: list[int], new_tokens: int,
                            repeats: int) -> float | None:
    """tok/s of llama.cpp (``llama-cpp-python``, where installed) sampling ``new_tokens``
    after ``prompt`` from the embedded GGUF file: the single-stream CPU engine to beat."""
    ref = resolve_model(model)
    if importlib.util.find_spec("llama_cpp") is None or ref.gguf_file is None:
        print("llama.cpp: llama-cpp-python not installed (or not a GGUF model), skipped")
        return None
    from llama_cpp import Llama

    llm = Llama(model_path=os.path.join(ref.path, ref.gguf_file), n_ctx=len(prompt) + new_tokens + 8,
                n_threads=torch.get_num_threads(), seed=0, verbose=False)

    def run() -> int:
        n = 0
        for _ in llm.generate(prompt, top_k=0, top_p=1.0, temp=1.0):  # EOS does not stop it
            n += 1
            if n == new_tokens:
                break
        return n

    run()  # warm-up
    s, n = timed(run, repeats)
    return n / s


if __name__ == "__main__":  # vLLM starts worker processes, which re-import this file
    main()

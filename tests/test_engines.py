"""Inference engines as Ray actors: a pool of 2 samples what one engine samples.

A tiny randomly initialised Llama with the embedded model's tokenizer, so each engine
loads in about a second; sampling at temperature 1 makes any seed mix-up visible.
Rows batched differently (padding, batch size) differ by float noise, so the samples
match across pool sizes only where the distribution is not flat.
"""

import os

import pytest

from spade_tasks.config import ModelConfig  # noqa: E402
from spade_tasks.engines import split  # noqa: E402
from spade_tasks.llm.base import SamplingParams  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_split_is_contiguous_and_even():
    assert split(5, 2) == [(0, 3), (3, 5)]
    assert split(1, 3) == [(0, 1), (1, 1), (1, 1)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from spade_tasks.llm.loading import load_tokenizer, resolve_model

    tok = load_tokenizer(resolve_model("embedded:smollm2-135m"))
    out = {}
    for name, seed in [("a", 0), ("b", 1)]:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(LlamaConfig(
            vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512))
        # Logits spread like a trained model's (std about 5, not 0.16): a near-uniform
        # draw over 49k tokens flips on float noise of batch shape, a peaked one does not.
        with torch.no_grad():
            model.lm_head.weight.mul_(30)
        out[name] = tmp_path_factory.mktemp(name) / "model"
        model.save_pretrained(out[name])
        tok.save_pretrained(out[name])
    return out


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_a_split_call_samples_what_the_whole_call_samples(tiny):
    """The seeding contract the pool relies on, in one process: parts of a call sent with
    their offsets draw the same tokens as the whole call."""
    from dataclasses import replace

    from spade_tasks.llm.base import make_backend

    backend = make_backend(_cfg(tiny["a"]))
    whole = backend.generate(CONVS, PARAMS)
    parts = (backend.generate(CONVS[:3], PARAMS)
             + backend.generate(CONVS[3:], replace(PARAMS, first_index=3)))
    assert [c.token_ids for c in parts] == [c.token_ids for c in whole]
    unshifted = backend.generate(CONVS[3:], PARAMS)
    assert [c.token_ids for c in unshifted] != [c.token_ids for c in whole[3:]]


CONVS = [[{"role": "user", "content": f"Say something about the number {i}."}] for i in range(5)]
PARAMS = SamplingParams(max_new_tokens=12, temperature=1.0, seed=123)


def _cfg(path):
    return ModelConfig(name=str(path), dtype="float32", max_batch=8)


@pytest.mark.slow
def test_two_engines_sample_what_one_engine_samples(tiny, ray_local):
    import torch

    from spade_tasks.engines import EnginePool
    from spade_tasks.llm.base import make_backend

    local = make_backend(_cfg(tiny["a"])).generate(CONVS, PARAMS)
    results = {}
    for n in (1, 2):
        # The local backend's thread count: fp32 sums depend on it (see EnginePool).
        pool = EnginePool(_cfg(tiny["a"]), n, threads=torch.get_num_threads())
        try:
            assert len(set(pool.pids)) == n and os.getpid() not in pool.pids
            results[n] = pool.generate(CONVS, PARAMS)
            if n == 2:  # new weights reach every engine
                pool.load_weights(tiny["b"])
                results["b"] = pool.generate(CONVS, PARAMS)
        finally:
            pool.close()
    for n in (1, 2):
        assert [c.token_ids for c in results[n]] == [c.token_ids for c in local]
        for c, ref in zip(results[n], local):
            assert c.prompt_token_ids == ref.prompt_token_ids
            assert c.logprobs == pytest.approx(ref.logprobs, abs=1e-4)
    want_b = make_backend(_cfg(tiny["b"])).generate(CONVS, PARAMS)
    assert [c.token_ids for c in results["b"]] == [c.token_ids for c in want_b]
    assert [c.token_ids for c in results["b"]] != [c.token_ids for c in local]


@pytest.mark.slow
def test_rollout_over_two_engines_gives_the_same_episodes(tiny, ray_local, sandbox):
    """A rollout (seed environments, sandbox workers) through 2 engine actors records
    the same episodes as through 1, for the same seed."""
    from spade_tasks.config import RolloutConfig
    from spade_tasks.engines import EnginePool
    from spade_tasks.rollout import rollout
    from tests.test_rollout import seed_record

    envs = [seed_record("number_guess.py"), seed_record("sequence_memory.py")]
    cfg = RolloutConfig(episodes_per_env=2, max_turns=2, max_new_tokens=8)
    runs = {}
    for n in (1, 2):
        pool = EnginePool(_cfg(tiny["a"]), n, threads=1)  # same sums for both pool sizes
        try:
            runs[n] = rollout(pool, sandbox, envs, cfg, seed=7)
        finally:
            pool.close()
    assert len(runs[1]) == len(runs[2]) == 8
    for a, b in zip(runs[1], runs[2]):
        assert (a.episode_id, a.seed, a.ret, a.end_reason) == (b.episode_id, b.seed, b.ret,
                                                                b.end_reason)
        assert [t.token_ids for t in a.turns] == [t.token_ids for t in b.turns]
        assert [t.observation for t in a.turns] == [t.observation for t in b.turns]


@pytest.mark.slow
def test_kept_engines_load_the_model_once_across_processes(tiny, tmp_path):
    """What a served deployment does: each flow run is a new process; with
    ``orchestration.keep_engines`` the second finds the first one's engine loaded."""
    import shutil
    import subprocess
    import sys
    import tempfile
    import time

    pytest.importorskip("ray")
    from spade_tasks.training import _free_port

    port = _free_port()
    # Its own temp dir, so that no later ray.init() finds this cluster through
    # /tmp/ray/ray_current_cluster (kept short: Ray's socket paths must fit 107 bytes).
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    # A local test cluster: no token (Ray 2.60's `ray start` enables token auth).
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    head = subprocess.Popen([ray_bin, "start", "--head", "--block", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false",
                             f"--temp-dir={temp_dir}",
                             "--disable-usage-stats"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    code = (
        "import sys\n"
        "from spade_tasks.config import ModelConfig\n"
        "from spade_tasks.engines import EnginePool\n"
        f"p = EnginePool(ModelConfig(name={str(tiny['a'])!r}, dtype='float32'), 1,"
        f" '127.0.0.1:{port}', keep_as='test-kept')\n"
        "pid, weights, loads = p.state()[0]\n"
        "print('ENGINE', pid, loads)\n"
        "p.close()\n")
    try:
        seen = []
        for _ in range(2):
            for attempt in range(30):  # the head takes a while to accept clients
                out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, timeout=600, env=env)
                if out.returncode == 0 or attempt == 29:
                    break
                time.sleep(2)
            assert out.returncode == 0, out.stderr[-3000:]
            line = next(ln for ln in out.stdout.splitlines() if ln.startswith("ENGINE"))
            seen.append(tuple(int(x) for x in line.split()[1:]))
        assert seen[0] == seen[1]  # same engine process, still at one model load
        assert seen[0][1] == 1
    finally:
        head.terminate()
        head.wait(timeout=120)
        shutil.rmtree(temp_dir, ignore_errors=True)

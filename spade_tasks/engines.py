"""Inference engines as Ray actors: ``model.replicas`` copies of the backend.

``EnginePool`` is a ``Backend``: every caller (designer, hint writer, rollout) uses it as
it would one engine. A generate call's conversations are split into contiguous parts, one
per engine, each part sent with its offset (``SamplingParams.first_index``) so that every
completion draws from the same random stream as in the whole call: the pool samples what
one engine would (tests/test_engines.py). After a training step ``load_weights`` reloads
every engine from the checkpoint folder.

On CPU an engine is the transformers backend with ``cpu_count / replicas`` torch threads;
on a GPU, vLLM with ``model.tensor_parallel_size`` GPUs and ``model.gpu_memory_share``.
"""

from __future__ import annotations

import os
from pathlib import Path

from spade_tasks.config import ModelConfig
from spade_tasks.errors import UserError
from spade_tasks.llm.base import Backend, SamplingParams


class _Engine:
    """One backend in a Ray actor."""

    def __init__(self, cfg: ModelConfig, threads: int):
        import torch

        if threads:
            torch.set_num_threads(threads)
        from spade_tasks.llm.base import make_backend

        self.backend = make_backend(cfg)
        self.weights = cfg.name  # the model or checkpoint now loaded
        self.loads = 1  # model loads by this actor (served deployments' test counts them)

    def generate(self, conversations, params, tools):
        return self.backend.generate(conversations, params, tools)

    def load_weights(self, checkpoint_dir: str) -> None:
        self.backend.load_weights(checkpoint_dir)
        self.weights = checkpoint_dir
        self.loads += 1

    def state(self) -> tuple[int, str, int]:
        """(process id, weights loaded, loads so far)."""
        return os.getpid(), self.weights, self.loads


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous (start, end) ranges covering range(n), sizes within one."""
    base, extra = divmod(n, parts)
    out, start = [], 0
    for k in range(parts):
        end = start + base + (k < extra)
        out.append((start, end))
        start = end
    return out


class EnginePool(Backend):
    """``replicas`` engines on Ray, used as one backend."""

    name = "pool"

    def __init__(self, cfg: ModelConfig, replicas: int, ray_address: str | None = None,
                 keep_as: str | None = None, threads: int | None = None):
        """``keep_as``: name the actors ``<keep_as>-<i>`` and detach them from this process,
        reusing ones of those names that a Ray cluster at ``ray_address`` already runs
        (a served deployment's next flow run finds its engines loaded).

        ``threads``: torch threads per CPU engine, by default the cores shared out. fp32
        matmuls sum in a thread-count-dependent order, so samples match across pool sizes
        only at the same thread count."""
        try:
            import ray
        except ImportError:
            raise UserError("model.replicas > 1 needs the ray extra (pip install -e '.[ray]')") from None
        import torch

        from spade_tasks.llm.loading import load_tokenizer, resolve_model

        if not ray.is_initialized():
            # None means a new local instance ("local"), never whatever cluster a stale
            # /tmp/ray/ray_current_cluster names (Ray's own default for no address).
            ray.init(address=ray_address or "local", include_dashboard=False,
                     log_to_driver=True)
        gpu = torch.cuda.is_available()
        # CPU engines reserve no Ray CPU: they take turns with the training ranks (decode
        # and train stages never overlap), and their torch threads are set here instead.
        if gpu:
            threads = 0
        elif threads is None:
            threads = max(1, (os.cpu_count() or 1) // replicas)
        actor = ray.remote(num_cpus=0, num_gpus=cfg.tensor_parallel_size if gpu else 0)(_Engine)
        self._ray = ray
        self.cfg = cfg
        self.kept = keep_as is not None
        self.engines = [
            # One namespace for every driver: by default each gets its own, and a later
            # flow run would not see the earlier one's actors.
            (actor.options(name=f"{keep_as}-{i}", namespace="spade", lifetime="detached",
                           get_if_exists=True)
             if self.kept else actor).remote(cfg, threads)
            for i in range(replicas)]
        states = ray.get([e.state.remote() for e in self.engines])  # waits for every load
        self.pids = [pid for pid, _, _ in states]
        stale = [e for e, (_, weights, _) in zip(self.engines, states) if weights != cfg.name]
        if stale:  # kept engines of an earlier flow run, on older weights
            ray.get([e.load_weights.remote(cfg.name) for e in stale])
        self._tok = load_tokenizer(resolve_model(cfg.name))

    @property
    def tokenizer(self):
        return self._tok

    def generate(self, conversations, params: SamplingParams, tools=None):
        from dataclasses import replace

        calls = [(e, start, end) for e, (start, end) in
                 zip(self.engines, split(len(conversations), len(self.engines))) if end > start]
        parts = self._ray.get([
            e.generate.remote(conversations[start:end],
                              replace(params, first_index=params.first_index + start), tools)
            for e, start, end in calls])
        return [c for part in parts for c in part]

    def load_weights(self, checkpoint_dir: str | Path) -> None:
        self._ray.get([e.load_weights.remote(str(checkpoint_dir)) for e in self.engines])

    def alive(self) -> bool:
        """False once Ray shut down under the engines (a Ray task runner stops the Ray
        instance it started when its flow run ends)."""
        return bool(self.engines) and self._ray.is_initialized()

    def state(self) -> list[tuple[int, str, int]]:
        return self._ray.get([e.state.remote() for e in self.engines])

    def close(self) -> None:
        """Kill the engines, except kept ones (they outlive this process on purpose)."""
        if self.alive() and not self.kept:
            for e in self.engines:
                self._ray.kill(e)
        self.engines = []

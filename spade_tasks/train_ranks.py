"""DeepSpeed training at ``training.world_size`` ranks, each rank a Ray actor.

Every rank is one process holding a ``TrainEngine`` in one torch.distributed group
(gloo on CPU, NCCL on GPU, one GPU per rank), found through ``MASTER_ADDR``/``MASTER_PORT``
as a launcher would set them. The driver (the flow's process) sends every rank the whole
batch; each rank trains on every world-th micro-batch of it (``training._rank_share``)
and DeepSpeed reduces the gradients, so a step equals the one-rank step on the same
batch up to float rounding (tests/test_train_ranks.py). ZeRO-1/2/3 configs partition
optimizer state, gradients and weights over these ranks.

``RankedTrainer`` has the methods of ``TrainEngine`` that the training stage uses, so
``Runtime.trainer()`` returns one or the other by config.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from spade_tasks.config import TrainingConfig
from spade_tasks.errors import UserError


class _Rank:
    """One DeepSpeed rank (the body of a Ray actor)."""

    def __init__(self, model_name: str, config: TrainingConfig, rank: int, world: int,
                 master_port: int):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master_port),
                          RANK=str(rank), WORLD_SIZE=str(world),
                          # Ray gives each GPU actor its own CUDA_VISIBLE_DEVICES: device 0.
                          LOCAL_RANK="0")
        from spade_tasks.training import TrainEngine

        self.engine = TrainEngine.from_model_name(model_name, config)

    def step(self, samples):
        return self.engine.step(samples)

    def logprobs(self, samples):
        return self.engine.logprobs(samples)

    def save_checkpoint(self, directory: str) -> str:
        return str(self.engine.save_checkpoint(directory))

    def load(self, directory: str) -> None:
        self.engine.load(directory)

    def state_dict(self) -> dict:
        """The full weights on this rank, on CPU (ZeRO-3 gathers them: collective)."""
        e = self.engine.engine
        if e.zero_optimization_stage() == 3:
            sd = e._zero3_consolidated_16bit_state_dict()
        else:
            sd = self.engine.module.state_dict()
        return {k: v.detach().float().cpu().clone() for k, v in (sd or {}).items()}

    def partition_numel(self) -> int:
        """fp32 optimizer-state elements this rank holds (all of them at ZeRO-0)."""
        opt = self.engine.engine.optimizer
        groups = getattr(opt, "single_partition_of_fp32_groups", None)  # ZeRO-1/2
        if groups is None:
            groups = getattr(opt, "fp32_partitioned_groups_flat", None)  # ZeRO-3
        if groups is None:
            return sum(p.numel() for p in self.engine.module.parameters())
        return sum(g.numel() for g in groups)


class RankedTrainer:
    """``world_size`` DeepSpeed ranks as Ray actors, driven like one ``TrainEngine``."""

    def __init__(self, model_name: str, config: TrainingConfig, world_size: int,
                 ray_address: str | None = None):
        try:
            import ray
        except ImportError:
            raise UserError("training.world_size > 1 needs the ray extra "
                            "(pip install -e '.[ray]')") from None
        import torch

        from spade_tasks.training import _free_port

        if not ray.is_initialized():
            # None means a new local instance ("local"), never whatever cluster a stale
            # /tmp/ray/ray_current_cluster names (Ray's own default for no address).
            ray.init(address=ray_address or "local", include_dashboard=False,
                     log_to_driver=True)
        gpu = torch.cuda.is_available()
        actor = ray.remote(num_cpus=0 if gpu else 1, num_gpus=1 if gpu else 0)(_Rank)
        port = _free_port()
        self._ray = ray
        self.world_size = world_size
        self.ranks = [actor.remote(model_name, config, r, world_size, port)
                      for r in range(world_size)]
        self._all("partition_numel")  # waits for every rank's init (and surfaces errors)

    def _all(self, method: str, *args):
        return self._ray.get([getattr(r, method).remote(*args) for r in self.ranks])

    def step(self, samples: Sequence):
        return self._all("step", list(samples))[0]

    def logprobs(self, samples: Sequence) -> list[list[float]]:
        return self._all("logprobs", list(samples))[0]

    def save_checkpoint(self, directory: str | Path) -> Path:
        self._all("save_checkpoint", str(directory))
        return Path(directory)

    def load(self, directory: str | Path) -> None:
        self._all("load", str(directory))

    def state_dict(self) -> dict:
        return self._all("state_dict")[0]

    def partition_numel(self) -> list[int]:
        return self._all("partition_numel")

    def alive(self) -> bool:
        """False once Ray has shut down under the actors (a Ray task runner stops the Ray
        instance it started when its flow run ends)."""
        return bool(self.ranks) and self._ray.is_initialized()

    def close(self) -> None:
        if not self.alive():
            self.ranks = []
            return
        for r in self.ranks:
            self._ray.kill(r)
        self.ranks = []

"""Under torchrun this process is one rank: run the job here, gather every rank's result."""

from __future__ import annotations

import atexit
import os
from datetime import timedelta


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def default_backend(world_size: int) -> str:
    from ..hardware import default_backend  # imports torch: only when a job is launched
    return default_backend(world_size)


def launch_in_process(fn, world_size, args, kwargs, timeout, backend) -> list:
    import torch
    import torch.distributed as dist
    env_world = int(os.environ["WORLD_SIZE"])
    if world_size != env_world:
        raise ValueError(f"world_size={world_size} but this job was started with "
                         f"WORLD_SIZE={env_world} (torchrun --nproc-per-node/--nnodes)")
    if not dist.is_initialized():
        # one GPU per rank of this node, as torchrun places them
        backend = backend or default_backend(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout))
        # Tear it down before the interpreter does: exiting with a live gloo group
        # aborts the process ("terminate called without an active exception").
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())
    result = fn(*args, **kwargs)
    gathered = [None] * env_world
    dist.all_gather_object(gathered, result)
    return gathered

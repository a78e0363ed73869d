"""Under torchrun this process is one rank: run the job here, gather every rank's result."""

from __future__ import annotations

import atexit
import os
from datetime import timedelta


# What torchrun (torch.distributed.run) sets in every worker's environment. RANK and
# WORLD_SIZE alone are not enough: they are easily left over in a shell or a .env
# file, and then a launch took itself for one rank of a job that does not exist,
# waited out its whole timeout in init_process_group and skipped the cap on local
# ranks. So a launcher's environment must be whole and consistent, and one that is
# neither is refused before anything starts (check_launcher_env).
REQUIRED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
ONE_OF = ("LOCAL_RANK", "TORCHELASTIC_RUN_ID")
IN_RANK = "PARLAB_RANK_PID"  # set by a parlab rank (rank.py) to its own pid


def launcher_env_present() -> bool:
    """Whether RANK or WORLD_SIZE is set: torchrun's, a parlab rank's, or stray."""
    return "RANK" in os.environ or "WORLD_SIZE" in os.environ


def _in_parlab_rank() -> bool:
    # the pid makes it this process's own mark, not one inherited by a child
    return os.environ.get(IN_RANK) == str(os.getpid())


def launcher_env_problem() -> str | None:
    """Why RANK/WORLD_SIZE here are not a launcher's, in words; None when they are
    (or when neither is set)."""
    env = os.environ
    if not launcher_env_present() or _in_parlab_rank():
        return None
    missing = [k for k in REQUIRED if not env.get(k)]
    if not any(env.get(k) for k in ONE_OF):
        missing.append(" or ".join(ONE_OF))
    set_ = ", ".join(f"{k}={env[k]!r}" for k in REQUIRED + ONE_OF + ("LOCAL_WORLD_SIZE",)
                     if k in env)
    if missing:
        return (f"the environment has {set_} but not {', '.join(missing)}: torchrun sets them "
                "all, so this is not a torchrun worker. Unset RANK and WORLD_SIZE (a leftover "
                "from another job?) to launch local ranks, or start this under torchrun")
    ints = {}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if k in env:
            try:
                ints[k] = int(env[k])
            except ValueError:
                return f"{k}={env[k]!r} must be an integer ({set_})"
    if ints["WORLD_SIZE"] < 1 or not 0 <= ints["RANK"] < ints["WORLD_SIZE"]:
        return (f"RANK={env['RANK']!r}, WORLD_SIZE={env['WORLD_SIZE']!r}: need "
                "0 <= RANK < WORLD_SIZE")
    local = ints.get("LOCAL_WORLD_SIZE", ints["WORLD_SIZE"])
    if "LOCAL_RANK" in ints and not 0 <= ints["LOCAL_RANK"] < local <= ints["WORLD_SIZE"]:
        return (f"LOCAL_RANK={env['LOCAL_RANK']!r} must be in [0, LOCAL_WORLD_SIZE) and "
                f"LOCAL_WORLD_SIZE <= WORLD_SIZE ({set_})")
    if not 0 < ints["MASTER_PORT"] < 65536:
        return f"MASTER_PORT={env['MASTER_PORT']!r} must be a port number (1-65535)"
    return None


def check_launcher_env() -> None:
    """A ValueError naming the variables when RANK/WORLD_SIZE are set but are not a
    whole, consistent launcher environment (before any process starts)."""
    problem = launcher_env_problem()
    if problem:
        raise ValueError(problem)


def under_torchrun() -> bool:
    """Whether this process is one rank of a torchrun job (or a parlab rank, whose
    nested launches run in place): see REQUIRED."""
    return launcher_env_present() and launcher_env_problem() is None


def launch_in_process(fn, world_size, args, kwargs, timeout, backend, device=None) -> list:
    import torch.distributed as dist

    from . import devices
    env_world = int(os.environ["WORLD_SIZE"])
    if world_size != env_world:
        raise ValueError(f"world_size={world_size} but this job was started with "
                         f"WORLD_SIZE={env_world} (torchrun --nproc-per-node/--nnodes)")
    job = devices.job("gloo")
    if not dist.is_initialized():
        # torchrun placed LOCAL_WORLD_SIZE ranks on this node: one GPU each when there
        # are enough (NCCL), else several per GPU over gloo (devices.py)
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        chosen = devices.choose(local, backend, device)
        devices.setup_rank(chosen, int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(devices.split(chosen)[0], timeout=timedelta(seconds=timeout))
        job = devices.job(chosen)
        # Tear it down before the interpreter does: exiting with a live gloo group
        # aborts the process ("terminate called without an active exception").
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())
    with job:
        result = fn(*args, **kwargs)
    gathered = [None] * env_world
    dist.all_gather_object(gathered, result)
    return gathered

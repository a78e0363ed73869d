"""Rank-side functions for tests/parlab/launch/test_launch_interrupts.py and
test_launch_env.py."""
import ctypes
import os


def rank_sum() -> float:
    """The sum of 1..world_size over an all_reduce."""
    import torch
    import torch.distributed as dist
    t = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(t)
    return t.item()


def hold_gil(seconds: int, flag_dir: str) -> int:
    """Say so in a file, then sleep in C *holding the GIL* (PyDLL does not release it):
    no Python thread of this rank can run meanwhile, the lifeline thread included."""
    import torch.distributed as dist
    open(os.path.join(flag_dir, f"holding-{dist.get_rank()}"), "w").close()
    ctypes.PyDLL(None).sleep(seconds)
    return dist.get_rank()


def nested_launch() -> list:
    """A launch from inside a parlab rank runs in place, as under torchrun."""
    import torch.distributed as dist
    import parlab
    import workers
    return [r[:2] for r in parlab.launch(workers.rank_and_size, dist.get_world_size())]

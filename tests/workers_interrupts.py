"""Rank-side functions for tests/parlab/launch/test_launch_interrupts.py."""
import ctypes
import os

import torch.distributed as dist


def hold_gil(seconds: int, flag_dir: str) -> int:
    """Say so in a file, then sleep in C *holding the GIL* (PyDLL does not release it):
    no Python thread of this rank can run meanwhile, the lifeline thread included."""
    open(os.path.join(flag_dir, f"holding-{dist.get_rank()}"), "w").close()
    ctypes.PyDLL(None).sleep(seconds)
    return dist.get_rank()


def nested_launch() -> list:
    """A launch from inside a parlab rank runs in place, as under torchrun."""
    import parlab
    import workers
    return [r[:2] for r in parlab.launch(workers.rank_and_size, dist.get_world_size())]

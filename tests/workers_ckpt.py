"""Rank-side worker for the atomic-checkpoint tests (ranks import it by name)."""
import os

import torch
import torch.distributed as dist

from parlab.checkpoint import dcp


def state_of(value: float, rank: int) -> dict:
    """A small sharded-by-rank state: each rank's own tensor, so each writes a shard."""
    return {f"w{rank}": torch.full((64, 64), value + rank), "train": dcp.train_state(int(value))}


def failing_writer(path: str, fail_rank: int):
    """DCP's writer that raises on ``fail_rank`` after writing that rank's shard: a save
    that dies half-way, with one rank's new file on disk and the other's not."""
    from torch.distributed.checkpoint import FileSystemWriter

    class Dies(FileSystemWriter):
        def write_data(self, plan, planner):
            done = super().write_data(plan, planner)
            if dist.get_rank() == fail_rank:
                done.wait()
                raise OSError("disk gone after this rank's shard")
            return done
    return Dies(path)


def interrupted_and_corrupt(directory: str) -> dict:
    """On 2 ranks: step 2 saved sync; step 4 async, published by ``result()``; step 4
    saved again with rank 1 dying mid-write (the old step 4 must survive); then rank 0
    flips a byte of rank 1's shard and both ranks load, each verifying its share."""
    rank = dist.get_rank()
    group = dcp.ckpt_group()
    out = {}
    dcp.save(state_of(2.0, rank), os.path.join(directory, "step_00002"), group=group)
    _, pending = dcp.save(state_of(4.0, rank), os.path.join(directory, "step_00004"), "async",
                          group)
    out["published_before_wait"] = os.path.isdir(os.path.join(directory, "step_00004"))
    pending.result(timeout=60)
    dist.barrier()
    out["published_after_wait"] = os.path.isdir(os.path.join(directory, "step_00004"))
    path = os.path.join(directory, "step_00004")
    try:
        dcp.save(state_of(9.0, rank), path, writer=failing_writer(path, 1))
        out["rewrite"] = "saved"
    except Exception as e:
        out["rewrite"] = f"{type(e).__name__}: {e}"
    dist.barrier()
    back = {f"w{rank}": torch.zeros(64, 64), "train": dcp.train_state(0)}
    dcp.load(back, path)
    out["kept"] = float(back[f"w{rank}"].mean()), int(back["train"]["step"])
    dist.barrier()
    if rank == 0:
        with open(os.path.join(path, "__1_0.distcp"), "r+b") as f:
            f.seek(-8, os.SEEK_END)  # inside the last tensor's bytes
            b = f.read(1)
            f.seek(-8, os.SEEK_END)
            f.write(bytes([b[0] ^ 0x40]))
    dist.barrier()
    try:
        dcp.load(back, path)
        out["corrupt"] = "loaded"
    except dcp.CheckpointError as e:
        out["corrupt"] = str(e)
    return out

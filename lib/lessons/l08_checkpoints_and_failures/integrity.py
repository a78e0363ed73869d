"""§3's checkpoint faults, on one device: a save that dies half-way and a flipped bit, each
caught by ``parlab.checkpoint``, then a resume from the newest checkpoint that is still good.

``faults(steps, save_at)`` trains the tiny GPT on one device, saving after the steps of
``save_at``; saves the newest checkpoint again with a writer that raises once its shard is
on disk (a disk that fills, a node that dies mid-write); flips one bit of that
checkpoint's shard (the lowest mantissa bit of one weight); asks ``latest`` for the newest good checkpoint and resumes from it.
Everything it reports is a file name or a yes/no, never a path or a time, so the
notebook's printed lines are the same on every machine.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import tempfile
import warnings

from parlab.checkpoint import dcp
from .training import Layout, Spec, train_rank

SHARD = "__0_0.distcp"  # the one rank's file of a one-device checkpoint


class _DiesAfterItsShard(Exception):
    pass


def _writer_that_dies(path: str):
    """DCP's file writer, failing after this rank's shard is written and synced, before
    DCP's .metadata and our manifest: what a save killed part-way leaves."""
    from torch.distributed.checkpoint import FileSystemWriter

    class DiesAfterItsShard(FileSystemWriter):
        def write_data(self, plan, planner):
            super().write_data(plan, planner).wait()
            raise _DiesAfterItsShard("the disk filled after the shard was written")

    return DiesAfterItsShard(path)


def flip_mantissa_bit(path: str, value: float) -> int:
    """Flip the lowest mantissa bit of the float32 ``value`` where it first sits in file
    ``path`` (DCP stores tensors' bytes as they are); returns its offset. One bit of one
    weight: the smallest damage there is."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at = data.find(struct.pack("<f", value))
    if at < 0:
        raise ValueError(f"value={value!r} is not in {path}")
    data[at] ^= 1  # little-endian: the first byte holds the lowest mantissa bits
    with open(path, "r+b") as f:
        f.write(data)
    return at


def _check(steps, save_at) -> tuple:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 3:
        raise ValueError(f"steps must be an int >= 3, got {steps!r}")
    if (not isinstance(save_at, (tuple, list)) or len(save_at) != 2
            or any(isinstance(k, bool) or not isinstance(k, int) for k in save_at)
            or not 0 < save_at[0] < save_at[1] < steps):
        raise ValueError(f"save_at must be two steps 0 < a < b < steps={steps}, got {save_at!r}")
    return tuple(save_at)


def faults(steps: int = 6, save_at=(2, 4), config=None) -> dict:
    """See the module doc. Returns {"saved": [names], "interrupted": {"error", "kept": the
    old checkpoint's checksums all hold, "left": hidden directories left}, "flipped":
    {"file", "error", "complete": its sizes hold, "unchecked_changed": values that DCP
    alone loads changed, without an error (None: it raised)}, "latest": name, "skipped":
    [(name, why)], "resumed_at": step, "max_loss_diff": vs the uninterrupted run}."""
    from .experiments import TINY
    good, newest = _check(steps, save_at)
    directory = tempfile.mkdtemp(prefix="parlab_integrity_")
    try:
        spec = Spec(config or TINY, Layout("one", 1), steps=steps, directory=directory,
                    save_at=(good, newest))
        base = train_rank(spec)
        path = base["saved"][newest]
        before = dcp.verify(path)
        # 1. the newest checkpoint saved again, the save dying after its shard
        state = dcp.load(_state_like(spec), path)
        try:
            dcp.save(state, path, writer=_writer_that_dies(path))
            interrupted = "saved"
        except dcp.CheckpointError as e:
            interrupted = type(e).__name__ + (": not published" if "not published" in str(e) else "")
        kept = dcp.verify(path) == before
        left = sorted(n for n in os.listdir(directory) if n.startswith("."))
        # 2. one bit of the newest checkpoint's shard flipped
        big = max(state["model"].values(), key=lambda t: t.numel())  # a weight matrix
        flip_mantissa_bit(os.path.join(path, SHARD), float(big.reshape(-1)[big.numel() // 2]))
        unchecked = _changed_unchecked(state, _state_like(spec), path)
        try:
            dcp.load(_state_like(spec), path)
            flipped = "loaded"
        except dcp.CheckpointError as e:
            flipped = str(e).split(": ", 1)[1]  # without the directory's path
        # 3. the restart: the newest good checkpoint, and training on from it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its words are in "skipped"
            found, skipped = dcp.latest(directory, report=True)
        again = train_rank(dataclasses.replace(spec, resume_from=found[1], save_at=()))
        diff = max(abs(again["losses"][k] - base["losses"][k]) for k in range(found[0], steps))
        return {"saved": sorted(os.path.basename(p) for p in base["saved"].values()),
                "interrupted": {"error": interrupted, "kept": kept, "left": left},
                "flipped": {"file": f"{os.path.basename(path)}/{SHARD}", "error": flipped,
                            "complete": dcp.complete(path), "unchecked_changed": unchecked},
                "latest": os.path.basename(found[1]),
                "skipped": [(os.path.basename(p), why) for p, why in skipped],
                "resumed_at": again["start"], "max_loss_diff": diff}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _state_like(spec: Spec) -> dict:
    """A state to load a checkpoint of ``spec`` into: its model and AdamW, freshly made."""
    from parlab.checkpoint.state import training_state
    from parlab.model import GPT, reference_optimizer
    model = GPT(spec.config, spec.seed)
    model_sd, optim_sd = training_state(model, reference_optimizer(model.parameters(), spec.lr))
    return {"model": model_sd, "optim": optim_sd, "train": dcp.train_state(0)}


def _changed_unchecked(saved: dict, fresh: dict, path: str) -> int | None:
    """How many values DCP's own load, with none of our checks, reads differently from
    ``saved`` (what was in the checkpoint) out of damaged ``path``; None if it raises."""
    import torch
    import torch.distributed.checkpoint as tdcp
    try:
        with dcp._quiet():
            tdcp.load(fresh, checkpoint_id=path)
    except BaseException:  # DCP's CheckpointException is a BaseException
        return None
    changed = 0
    for key in ("model",):
        for name, t in saved[key].items():
            a, b = t, fresh[key][name]
            changed += int((a != b).sum()) if torch.is_tensor(a) else int(a != b)
    return changed

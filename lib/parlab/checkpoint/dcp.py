"""Saving and loading one training state with DCP, sync or async, and what it wrote.

A training state is what the next step depends on (PyTorch's DCP recipe, "Getting
Started with Distributed Checkpoint"; Wang et al., "Gemini: Fast Failure Recovery in
Distributed Training with In-Memory Checkpoints", SOSP 2023, §2): the model, the
optimizer's states (AdamW's exp_avg, exp_avg_sq and step), the *data position* (our data
is a function of the step index, ``data.get_batch(step, ...)``, so the position is the
next step) and the RNG (torch.get_rng_state, which dropout draws from). A checkpoint is
a directory ``step_00004`` whose ``.metadata`` file DCP writes last, after every rank
wrote its ``__<rank>_<n>.distcp`` files: a directory without it is an interrupted save.

``async_save`` (torch.distributed.checkpoint.async_save) copies the state to CPU
memory ("staging"), returns a future and writes from a background thread; on CPU the
copy is what the training loop waits for. Its collectives run in that thread, so it
gets a process group of its own (``ckpt_group``): the step's collectives on the main
group must not interleave with the save's on the same one.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import warnings

import torch
import torch.distributed as dist

STEP_DIR = "step_{:05d}"
_RANK_FILE = re.compile(r"^__(\d+)_\d+\.distcp$")


def train_state(next_step: int) -> dict:
    """The data position and the RNG, as tensors DCP writes and loads in place."""
    return {"step": torch.tensor(next_step, dtype=torch.int64), "rng": torch.get_rng_state()}


@contextlib.contextmanager
def _quiet():
    """DCP warns on every ShardedTensor (deprecated for DTensor, which cannot describe
    FullyShard's flat chunks: dcp_state.py) and on a single-process load; say it once here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecating ShardedTensor.*")
        warnings.filterwarnings("ignore", message=".*assuming the intent is to .* single process.*")
        yield


def save(state: dict, path: str, mode: str = "sync", group=None, writer=None):
    """Write ``state`` to ``path``; returns (seconds the caller was blocked, future or
    None). ``mode="async"``: stage and return; ``future.result()`` waits for the write.
    ``writer``: a DCP StorageWriter for ``path`` (``WhoWrites``), else DCP's own."""
    import torch.distributed.checkpoint as dcp
    where = {"checkpoint_id": path} if writer is None else {"storage_writer": writer}
    t0 = time.perf_counter()
    with _quiet():
        if mode == "async":
            future = dcp.async_save(state, process_group=group, **where)
            return time.perf_counter() - t0, future
        dcp.save(state, process_group=group, **where)
    return time.perf_counter() - t0, None


def who_writes(path: str):
    """DCP's file writer for ``path`` that also notes which thread wrote this rank's
    files and when it finished (``.writes``: [(on the caller's thread?, perf_counter at
    the end)]): what tells a sync save from an async one, whatever the timings."""
    import threading

    from torch.distributed.checkpoint import FileSystemWriter

    class WhoWrites(FileSystemWriter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.caller = threading.get_ident()
            self.writes: list[tuple[bool, float]] = []

        def write_data(self, plan, planner):
            done = super().write_data(plan, planner)  # one thread: written when it returns
            self.writes.append((threading.get_ident() == self.caller, time.perf_counter()))
            return done

    return WhoWrites(path, thread_count=1)


def load(state: dict, path: str, group=None) -> dict:
    """Fill ``state`` (its tensors in place, its other values replaced) from ``path``,
    resharded to however ``state``'s tensors are sharded here."""
    import torch.distributed.checkpoint as dcp
    with _quiet():
        dcp.load(state, checkpoint_id=path, process_group=group)
    return state


def complete(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ".metadata"))


def latest(directory: str) -> tuple[int, str] | None:
    """(step, path) of the newest complete checkpoint under ``directory``, or None."""
    found = []
    for name in os.listdir(directory) if os.path.isdir(directory) else []:
        m = re.fullmatch(r"step_(\d+)", name)
        if m and complete(os.path.join(directory, name)):
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return max(found) if found else None


def bytes_per_rank(path: str) -> dict[int, int]:
    """{rank: bytes of the .distcp files it wrote} in checkpoint ``path``."""
    out: dict[int, int] = {}
    for name in os.listdir(path):
        m = _RANK_FILE.match(name)
        if m:
            r = int(m.group(1))
            out[r] = out.get(r, 0) + os.path.getsize(os.path.join(path, name))
    return dict(sorted(out.items()))


def metadata_bytes(path: str) -> int:
    return os.path.getsize(os.path.join(path, ".metadata"))


def ckpt_group():
    """A gloo group over the world for background saves (see the module doc)."""
    return dist.new_group(backend="gloo")

"""Saving and loading one training state with DCP, sync or async, and what it wrote.

A training state is what the next step depends on (PyTorch's DCP recipe, "Getting
Started with Distributed Checkpoint"; Wang et al., "Gemini: Fast Failure Recovery in
Distributed Training with In-Memory Checkpoints", SOSP 2023, §2): the model, the
optimizer's states (AdamW's exp_avg, exp_avg_sq and step), the *data position* (our data
is a function of the step index, ``data.get_batch(step, ...)``, so the position is the
next step) and the RNG (torch.get_rng_state, which dropout draws from).

A checkpoint is a directory ``step_00004``: every rank's ``__<rank>_<n>.distcp`` files,
DCP's ``.metadata``, and our ``.manifest.json`` (every file's size and CRC-32, and the
run's config and layout). It is written under a hidden sibling name and renamed into
place once all of it is on disk (``save``), so a directory with the public name is whole;
a save that dies leaves only the sibling, and the previous checkpoint as it was. Before
anything loads, the manifest's sizes and checksums are checked, and the saved config and
layout against the resuming run's (``load``); ``latest`` passes over a checkpoint that
fails, saying why. Every refusal is a ``CheckpointError`` (a ValueError).

``async_save`` (torch.distributed.checkpoint.async_save) copies the state to CPU
memory ("staging"), returns a future and writes from a background thread; on CPU the
copy is what the training loop waits for. Its collectives run in that thread, so it
gets a process group of its own (``ckpt_group``): the step's collectives on the main
group must not interleave with the save's on the same one.
An async checkpoint is published when the caller waits for it (``PendingSave.result``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
import uuid
import warnings

import torch
import torch.distributed as dist

# the checks live in integrity.py; callers find them here too (dcp.latest, dcp.CheckpointError)
from .integrity import (MANIFEST, CheckpointError, CheckpointMismatch, _beside, _from_rank0,  # noqa: F401
                        _plain, _publish, _rank_world, _reraise, check_run, clean, complete,
                        latest, manifest, problem, verify)

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


class PendingSave:
    """An async save: ``result()`` waits for DCP's background write, then publishes the
    checkpoint (the manifest and the rename, with collectives on the save's group). So an
    async checkpoint exists only once ``result()`` ran on every rank of that group; until
    then it is a hidden ``.tmp-`` directory that ``latest`` passes over. Publishing from
    the write's own completion callback instead would run collectives in DCP's thread,
    racing whatever the caller runs on the same group."""

    def __init__(self, future, publish):
        self.future, self._publish, self._done = future, publish, False

    def done(self) -> bool:
        return self.future.done()

    def result(self, timeout: float | None = None):
        try:
            metadata = self.future.result(timeout)
        except BaseException as e:
            _reraise(e, "an async save: not published")
        if not self._done:
            self._done = True
            self._publish(metadata)
        return metadata


def save(state: dict, path: str, mode: str = "sync", group=None, writer=None,
         run: dict | None = None):
    """Write ``state`` as checkpoint ``path``; returns (seconds the caller was blocked,
    ``PendingSave`` or None). DCP writes into a hidden sibling, ``.<name>.tmp-<token>``;
    once every rank has written and synced, rank 0 adds the manifest (``MANIFEST``:
    every file's size and CRC-32, and ``run``) and renames the sibling to ``path``. A
    save that dies leaves at most that sibling: ``path`` and every older checkpoint are
    untouched. ``mode="async"``: stage and return; ``result()`` on the PendingSave waits
    for the write and publishes. ``writer``: a DCP StorageWriter (``who_writes``), else
    DCP's own; it is pointed at the sibling. ``run``: {"config": ..., "layout": ...}, what
    a resume compares with its own (``check_run``)."""
    import torch.distributed.checkpoint as dcp
    if mode not in ("sync", "async"):
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
    if run is not None:
        run = _plain(run)
    t0 = time.perf_counter()
    token = _from_rank0(f"{os.getpid()}-{uuid.uuid4().hex[:8]}", group)  # one sibling for all ranks
    tmp = _beside(path, "tmp", token)
    where = {"checkpoint_id": tmp} | ({} if writer is None else {"storage_writer": writer})
    with _quiet():
        if mode == "async":
            future = dcp.async_save(state, process_group=group, **where)
            future = getattr(future, "upload_completion", future)  # the newer response type
            return time.perf_counter() - t0, PendingSave(
                future, lambda md: _publish(tmp, path, md, group, run, token))
        try:
            metadata = dcp.save(state, process_group=group, **where)
        except BaseException as e:
            # DCP raises on every rank once all have stopped writing (it gathers each
            # rank's outcome), so the half-written sibling can go; a killed save leaves
            # it for ``clean``.
            if _rank_world(group)[0] == 0:
                shutil.rmtree(tmp, ignore_errors=True)
            _reraise(e, f"saving {path}: not published; the previous checkpoint, if any, "
                        "is untouched")
    _publish(tmp, path, metadata, group, run, token)
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


def load(state: dict, path: str, group=None, expect: dict | None = None,
         reshard: bool = False, verify_files: bool = True) -> dict:
    """Fill ``state`` (its tensors in place, its other values replaced) from ``path``,
    resharded to however ``state``'s tensors are sharded here. Before anything loads:
    the manifest must be there; with ``expect`` ({"config", "layout"} of this run) the
    recorded run must match (``check_run``); every file's checksum must hold
    (``verify``). Each failure is a CheckpointError naming the file or field."""
    import torch.distributed.checkpoint as dcp
    m = manifest(path)
    if expect is not None:
        check_run(m.get("run"), expect, reshard, path)
    if verify_files:
        verify(path, group)
    with _quiet():
        try:
            dcp.load(state, checkpoint_id=path, process_group=group)
        except BaseException as e:
            _reraise(e, f"loading {path}")
    return state


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

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
import json
import os
import re
import shutil
import time
import uuid
import warnings
import zlib

import torch
import torch.distributed as dist

STEP_DIR = "step_{:05d}"
MANIFEST = ".manifest.json"  # written last, inside the directory, before it is published
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


# --- publishing: a checkpoint appears whole or not at all ----------------------------

class CheckpointError(ValueError):
    """A checkpoint that must not be loaded: unpublished, incomplete, corrupt, or saved by
    another run. A ValueError, as the lab's other bad inputs are (the checkpoint is the
    input of a resume); the message names the file or field and the reason."""


class CheckpointMismatch(CheckpointError):
    """The saved config or layout differs from the resuming run's (``check_run``)."""


def _rank_world(group) -> tuple[int, int]:
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def _all_gather(obj, group) -> list:
    if not dist.is_initialized():
        return [obj]
    out = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, obj, group=group)
    return out


def _from_rank0(obj, group):
    """Rank 0's ``obj`` on every rank of ``group``."""
    if not dist.is_initialized():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0) if group else 0, group=group)
    return box[0]


def _checksum(path: str) -> int:
    """CRC-32 of a file, read in 4 MiB pieces. CRC-32, not a cryptographic hash: the faults
    to catch are torn writes, truncation and flipped bits, not an adversary; it catches
    every burst of up to 32 flipped bits (a lone flipped mantissa bit included) and misses
    random damage with odds 2^-32, and zlib's runs at about 3.9 GB/s here against
    blake2b's 0.9 GB/s (64 MiB, one core), so verifying costs a quarter of the read."""
    crc = 0
    with open(path, "rb") as f:
        while piece := f.read(4 << 20):
            crc = zlib.crc32(piece, crc)
    return crc


def _entry(path: str) -> dict:
    return {"bytes": os.path.getsize(path), "crc32": _checksum(path)}


def _fsync_dir(path: str) -> None:
    """A rename is durable once its directory is synced (POSIX says nothing of the entry
    otherwise); on systems that cannot open a directory, the rename is what we have."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _beside(path: str, kind: str, token: str) -> str:
    """A hidden sibling of ``path``: ``.step_00004.tmp-<token>`` (a save being written)
    or ``.step_00004.old-<token>`` (a checkpoint being replaced)."""
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.{kind}-{token}")


def _swap_in(tmp: str, path: str, token: str) -> None:
    """Publish ``tmp`` as ``path``. A new name is one rename. An existing checkpoint is
    renamed aside first and removed only after the new one is in place: POSIX has no
    portable rename over a non-empty directory, so for a moment neither is at ``path``;
    a crash there leaves both whole, and ``latest`` and ``clean`` take the old one back."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.lexists(path):
        old = _beside(path, "old", token)
        os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            os.rename(old, path)  # the old one back where it was
            raise
        _fsync_dir(parent)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, path)
    _fsync_dir(parent)


def _publish(tmp: str, path: str, metadata, group, run: dict | None, token: str) -> None:
    """After DCP wrote ``tmp`` (every rank's files, synced by its writer's ``sync_files``,
    then ``.metadata``): each rank checksums its share of the files, rank 0 writes the
    manifest last, syncs it and renames the directory into place; every rank learns the
    outcome, so a failure is raised everywhere and nothing waits for a rank that gave up."""
    rank, world = _rank_world(group)
    files = sorted({info.relative_path for info in metadata.storage_data.values()})
    try:
        mine = {f: _entry(os.path.join(tmp, f)) for f in files[rank::world]}
    except OSError as e:
        mine = {"": f"rank {rank}: {e}"}
    parts = _all_gather(mine, group)
    error = None
    if rank == 0:
        try:
            entries = {}
            for part in parts:
                if "" in part:
                    raise OSError(part[""])
                entries.update(part)
            entries[".metadata"] = _entry(os.path.join(tmp, ".metadata"))
            manifest = {"format": 1, "checksum": "crc32", "files": entries, "run": run}
            with open(os.path.join(tmp, MANIFEST), "w") as f:
                json.dump(manifest, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            _fsync_dir(tmp)
            _swap_in(tmp, path, token)
        except Exception as e:  # told to every rank below
            error = f"{type(e).__name__}: {e}"
            shutil.rmtree(tmp, ignore_errors=True)
    error = _from_rank0(error, group)
    if error:
        raise CheckpointError(f"saving {path}: not published ({error}); the previous "
                              "checkpoint, if any, is untouched")


def _reraise(e: BaseException, what: str):
    """DCP's CheckpointException (a BaseException, which ``except Exception`` misses) as a
    CheckpointError naming each failed rank's exception; anything else as it is."""
    from torch.distributed.checkpoint.api import CheckpointException
    if not isinstance(e, CheckpointException):
        raise e
    ranks = "; ".join(f"rank {r}: {type(x).__name__}: {x}" for r, (x, _) in sorted(e.failures.items()))
    raise CheckpointError(f"{what} ({ranks})") from e


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


# --- checking: what a checkpoint must pass before it loads ---------------------------

def _plain(obj):
    """``obj`` as JSON gives it back (tuples as lists, dataclasses and other objects as
    their repr), so that a saved run and a live one compare alike."""
    import dataclasses
    def default(o):
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        return repr(o)
    return json.loads(json.dumps(obj, default=default, sort_keys=True))


def _read_manifest(path: str) -> tuple[dict | None, str]:
    """(the manifest of checkpoint ``path``, "") or (None, why there is none usable)."""
    try:
        with open(os.path.join(path, MANIFEST)) as f:
            m = json.load(f)
    except FileNotFoundError:
        what = "an interrupted or unpublished save" if os.path.isdir(path) else "no such directory"
        return None, f"no {MANIFEST} ({what})"
    except (OSError, ValueError) as e:
        return None, f"{MANIFEST}: unreadable ({e})"
    if not isinstance(m, dict) or not isinstance(m.get("files"), dict):
        return None, f"{MANIFEST}: not a manifest (no 'files')"
    return m, ""


def manifest(path: str) -> dict:
    """The manifest of published checkpoint ``path``; CheckpointError if there is none."""
    m, why = _read_manifest(path)
    if m is None:
        raise CheckpointError(f"{path}: {why}")
    return m


def _size_problem(path: str, name: str, want: dict) -> str | None:
    try:
        got = os.path.getsize(os.path.join(path, name))
    except OSError:
        return f"{name}: missing"
    if got != want["bytes"]:
        return f"{name}: {got} bytes, the manifest says {want['bytes']} (truncated or rewritten)"
    return None


def _crc_problem(path: str, name: str, want: dict) -> str | None:
    problem = _size_problem(path, name, want)
    if problem is None and _checksum(os.path.join(path, name)) != want["crc32"]:
        problem = f"{name}: checksum mismatch (corrupt bytes)"
    return problem


def problem(path: str, verify: bool = True) -> str | None:
    """Why checkpoint ``path`` must not be loaded (naming the file), or None: no manifest;
    a file the manifest names missing or of another size; with ``verify``, a checksum
    that differs."""
    m, why = _read_manifest(path)
    if m is None:
        return why
    check = _crc_problem if verify else _size_problem
    for name, want in sorted(m["files"].items()):
        if why := check(path, name, want):
            return why
    return None


def complete(path: str) -> bool:
    """Published, and every file its manifest names present with its size (no reading)."""
    return problem(path, verify=False) is None


def verify(path: str, group=None) -> dict:
    """Every file of checkpoint ``path`` present, of its size and checksum, else a
    CheckpointError naming the file and the reason; returns the manifest. Inside a
    process group, each rank reads its share of the files and all learn every verdict."""
    m = manifest(path)
    rank, world = _rank_world(group)
    names = sorted(m["files"])
    mine = [p for n in names[rank::world] if (p := _crc_problem(path, n, m["files"][n]))]
    found = sorted(p for part in _all_gather(mine, group) for p in part)
    if found:
        raise CheckpointError(f"{path}: " + "; ".join(found))
    return m


def check_run(saved: dict | None, expect: dict, reshard: bool = False, path: str = "") -> None:
    """Compare a checkpoint's recorded run ({"config", "layout"}) with the resuming run's.
    A config field that differs is always a CheckpointMismatch (same shapes need not mean
    the same model: a 2-layer checkpoint loaded into 1 layer drops a layer); a layout
    field only unless ``reshard`` (DCP loads any layout's files into this one's)."""
    where = f"{path}: " if path else ""
    if saved is None:
        raise CheckpointMismatch(f"{where}the checkpoint records no config or layout, so it "
                                 "cannot be checked against this run")
    expect = _plain(expect)
    kinds = ("config",) if reshard else ("config", "layout")
    diffs = []
    for kind in kinds:
        a, b = saved.get(kind) or {}, expect.get(kind) or {}
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                diffs.append(f"{kind}.{k}: saved {a.get(k)!r}, this run {b.get(k)!r}")
    if diffs:
        hint = ("" if any(d.startswith("config.") for d in diffs)
                else "; pass reshard=True to load it into this layout")
        raise CheckpointMismatch(f"{where}saved by another run: " + "; ".join(diffs) + hint)


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


_STEP = re.compile(r"^step_(\d+)$")
_HIDDEN = re.compile(r"^\.(step_\d+)\.(tmp|old)-[\w-]+$")


def latest(directory: str, verify: bool = True, report: bool = False):
    """(step, path) of the newest good checkpoint under ``directory``, or None. Newer ones
    that fail ``problem`` (unpublished, incomplete, with ``verify`` corrupt) are passed
    over with a warning naming each and why. ``report=True`` returns (that, skipped:
    [(path, reason)]). A hidden ``.tmp-`` sibling (a save that never published) is
    skipped; a ``.old-`` one stands in for its step only if the step itself is gone (a
    crash between the two renames of ``_swap_in``)."""
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    candidates, skipped = [], []
    for name in names:
        full = os.path.join(directory, name)
        if m := _STEP.match(name):
            candidates.append((int(m.group(1)), full))
        elif (h := _HIDDEN.match(name)) and h.group(2) == "tmp":
            skipped.append((full, "an unpublished save (interrupted, or still writing)"))
        elif h and h.group(1) not in names:
            candidates.append((int(h.group(1)[5:]), full))
    found = None
    for step, full in sorted(candidates, reverse=True):
        why = problem(full, verify)
        if why is None:
            found = (step, full)
            break
        skipped.append((full, why))
    bad = [f"{os.path.basename(p)} ({why})" for p, why in skipped
           if not why.startswith("an unpublished")]
    if bad:
        use = f"using {os.path.basename(found[1])}" if found else "no good checkpoint left"
        warnings.warn(f"latest({directory}): skipped " + "; ".join(bad) + f"; {use}",
                      stacklevel=2)
    return (found, skipped) if report else found


def clean(directory: str) -> list[str]:
    """Remove what interrupted saves left under ``directory`` (hidden ``.tmp-`` siblings;
    ``.old-`` ones whose step was republished; an ``.old-`` one whose step is gone is
    renamed back). Only while no save into ``directory`` is running. Returns the paths."""
    out = []
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    for name in names:
        h = _HIDDEN.match(name)
        if not h:
            continue
        full = os.path.join(directory, name)
        step = os.path.join(directory, h.group(1))
        if h.group(2) == "old" and not os.path.lexists(step):
            os.rename(full, step)
        else:
            shutil.rmtree(full, ignore_errors=True)
        out.append(full)
    return out


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

"""A checkpoint is published whole and checked before it loads.

Publishing (``_publish``, called by ``dcp.save`` once DCP has written): each rank
checksums its share of the files; rank 0 writes the manifest (``MANIFEST``: every file's
size and CRC-32, and the run's config and layout) last, syncs it, and renames the hidden
sibling the save wrote into to the checkpoint's name; every rank learns the outcome.

Checking: ``complete`` (every file the manifest names, at its size: no reading),
``verify`` (and their checksums), ``check_run`` (the saved config and layout against the
resuming run's), ``latest`` (the newest checkpoint that passes, naming the ones it passed
over and why), ``clean`` (what killed saves left). Every refusal is a CheckpointError.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
import zlib

import torch.distributed as dist

MANIFEST = ".manifest.json"  # written last, inside the directory, before it is published


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

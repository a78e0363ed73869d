"""Run a function on N ranks: from a notebook, a script, or under torchrun.

    results = parlab.launch(fn, world_size, *args, timeout=60.0, backend=None, device=None,
                            **kwargs)

calls ``fn(*args, **kwargs)`` on ``world_size`` ranks with ``torch.distributed``
initialised and returns the ranks' return values as a list indexed by rank. Where
the tensors live (devices.py): ``device="auto"`` (the default) gives NCCL when every
rank can have its own GPU, gloo with several ranks per GPU when GPUs are fewer than
ranks, gloo on the CPU when there is none; ``"cuda"``, ``"cpu"`` and ``"dry-run"``
(CPU tensors standing in for a GPU's, placement checked: placement.py) choose.
``last_placement()`` says what the last launch used, and a launch that put its
ranks on a GPU prints it in a line.

Why a pool of long-lived ranks. A widget re-runs small jobs every time a slider
moves. Starting a rank means starting Python and importing torch, about a second
of CPU each; four of them on two cores cost 3-5 s. So the first launch of a given
(world_size, backend) starts the ranks and keeps them; later launches send the job
to the waiting ranks over a pipe (milliseconds). New ranks are forked from a
"forkserver" that imported torch once, so even a cold start is well under a second
per rank. (bench/launcher.py measures this against a fresh spawn and against
ipyparallel engines; docs/design.md gives the figures.)

What never happens (each one is a test in tests/test_launch*.py):
- a frozen caller. A rank that raises makes the call raise ``LaunchError`` (with
  the remote traceback) as soon as its message arrives; a rank that dies makes it
  raise at once; a job still running after ``timeout`` seconds raises
  ``LaunchTimeout``, naming the ranks still running, the traced operation each was
  inside and the Python line it was blocked on. In every case the other ranks are
  killed and the pool is rebuilt by the next launch.
- orphans. Ranks die with the caller: each watches a pipe that only the caller
  holds open, so even ``kill -9`` of a notebook kernel takes its ranks with it; and
  they die with the fork server, which exits with the caller (PR_SET_PDEATHSIG: a
  rank stuck in C code holding the GIL cannot run its watching thread). Ctrl-C /
  kernel interrupt at any phase of a launch stops every rank, the fork server and
  the resource tracker parlab started, before re-raising (the next launch is a cold
  start), and a second Ctrl-C during that cleanup waits for it to finish.
- leftovers. A process group killed whole (Jupyter's SIGTERM/SIGKILL to a busy
  kernel) leaves nobody to remove the rendezvous directory or multiprocessing's
  pymp-*; they carry their owner's pid, and the next pool removes those whose
  owner is gone (processes.sweep_stale_dirs).
- a stray launcher environment. RANK/WORLD_SIZE without the rest of torchrun's
  variables is a ValueError naming them, not a wait for a job that does not exist
  (torchrun.py); the cap on local ranks always holds.
- a rendezvous others can reach. The ranks meet through a file in a directory only
  this user can enter (removed when the pool closes); gloo is told to use the
  loopback interface.
- crossed results. Launches from several threads are served one at a time.

Isolation between jobs. Once every rank has finished a job, the ranks destroy and
re-create their process group, so a job never sees groups, pending messages or
sequence numbers left by the previous one; and they put torch back as it was when
they started (default dtype, grad mode, patched functions...: isolation.py), so that
learner code run earlier (a %%ranks cell, a checker) cannot change a library run's
result. They do it while the caller is busy with the result, so it costs a launch
nothing unless launches come back to back.

The fork server. If it dies (killed, or the OOM killer's choice), the ranks it
forked can no longer be watched: a launch running then raises ``LaunchError``
saying so, and the next launch starts a fresh fork server and new ranks.

Memory. Every pool costs memory while it waits, and a free Binder session has
about 2 GB. Before a new pool starts, idle pools of other world sizes are closed,
oldest first, until the new ranks fit the memory budget (budget.py: 85% of the
cgroup limit, or of the RAM when there is none); a launch that cannot fit even
then raises ``MemoryBudgetError`` (a ValueError) saying how many ranks would.
Ranks share what the fork server imported, and after a job that left more than a
few MiB behind they give it back (rank.py).

Stale code. Ranks import your function's module once. If that file or any
``parlab`` source changes after the pool started, the next launch restarts the
ranks so that they run the code you see.

Files: this one (API, argument checks, the pools kept alive), ``pool.py`` (the
caller's side of one pool), ``rank.py`` (a rank's serve loop), ``budget.py`` (the
memory budget), ``errors.py`` (the exceptions and their messages), ``torchrun.py``
(running as one rank), ``devices.py`` (CPU or GPU, and staging through the CPU),
``placement.py`` (the dry run's placement check), ``prewarm.py`` (a notebook's kernel starts the fork server
when it imports parlab, so that its first launch is warm).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading

from ..validate import check_float, check_int
from . import budget, devices, processes
from .errors import LaunchError, LaunchTimeout, MemoryBudgetError
from .pool import Pool
from .devices import on_device
from .torchrun import check_launcher_env, launch_in_process, under_torchrun

__all__ = ["launch", "run_on_ranks", "shutdown", "pool_info", "memory_budget", "last_placement",
           "on_device", "LaunchError", "LaunchTimeout", "MemoryBudgetError"]

MAX_LOCAL_RANKS = int(os.environ.get("PARLAB_MAX_RANKS", "32"))
MAX_POOLED_RANKS = int(os.environ.get("PARLAB_MAX_POOLED_RANKS", "16"))  # kept alive, all pools

_pools: dict[tuple[int, str], Pool] = {}  # insertion order = least recently used first
# One job at a time per process: a pool's pipes carry one job's replies, so two threads
# sharing a pool would read each other's results. Re-entrant for shutdown() at exit.
_lock = threading.RLock()
# (world_size, backend) -> (the pool that ran the last %%ranks code, how many times the
# ranks holding that code's namespace were replaced)
_cell_pools: dict[tuple[int, str], tuple[Pool, int]] = {}
_placement: dict = {}  # what the last launch used (devices.placement)
_announced: set = set()  # the pools whose placement line has been printed


# ------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------

def launch(fn, world_size, *args, timeout=60.0, backend=None, device=None, **kwargs) -> list:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` ranks; return their results by rank.

    ``fn`` must be importable by name (defined at module level in ``lib/`` or any
    importable module), because the ranks are separate processes. Under ``torchrun``
    (torchrun.py says how it is recognised) no process is started: ``fn`` runs in
    this process as this rank, and every rank gets the full list of results.
    """
    _check_fn(fn)
    _check_args(world_size, timeout, backend, device)
    if under_torchrun():
        return launch_in_process(fn, world_size, args, kwargs, timeout, backend, device)
    processes.import_holding_ctrl_c("torch")  # a Ctrl-C inside torch's import was lost
    backend = _choose(world_size, backend, device)
    payload = _pickle_job(fn, args, kwargs)
    with _lock, _stop_everything_on_ctrl_c():
        pool = _get_pool(world_size, backend, _code_files(fn))
        return pool.run(("run", payload, _main_script(fn), sys.path, dict(os.environ)),
                        timeout, label=_fn_name(fn))


def run_on_ranks(code: str, world_size: int, timeout: float = 30.0, backend=None,
                 filename: str = "<ranks>", device=None) -> list[dict]:
    """Execute Python source on every rank, in a namespace that persists between calls.

    This is what the ``%%ranks`` cell magic (``lessons.common.interactive``) calls. The
    namespace starts with ``torch``, ``dist``, ``rank`` and ``world_size``; the
    process group is kept between calls so groups and tensors made in one cell are
    there in the next, and so is torch's state (a default dtype a cell set, say) until
    a ``launch`` on the same ranks, which starts from the ranks' initial state and
    leaves them in it (the namespace stays). Returns, per rank, ``{"output": printed
    text, "value": repr of a trailing expression or None, "error": traceback text or
    None, "error_info": {"type", "message", "frames": [(filename, line), ...]} or None,
    "restarted", "restarts"}``. ``filename`` names the code in tracebacks and stack dumps.

    The namespace lives in the ranks, so it is lost when they are restarted (after a
    timeout, a rank that failed while others waited, a killed rank, a code change, or
    a pool closed to make room). ``restarted`` is True for the first call on the new
    ranks that replaced ranks which had run code for this world size; ``restarts``
    counts such replacements so far. A failure raises ``LaunchError`` (or
    ``LaunchTimeout``) carrying the same two attributes, plus ``outputs`` and
    ``rank_errors``.
    """
    _check_args(world_size, timeout, backend, device)
    if not isinstance(code, str):
        raise ValueError(f"code must be a str, got {type(code).__name__}")
    compile(code, filename, "exec")  # a SyntaxError here, before any rank sees it
    processes.import_holding_ctrl_c("torch")
    backend = _choose(world_size, backend, device)
    key = (world_size, backend)
    with _lock, _stop_everything_on_ctrl_c():
        pool = _get_pool(world_size, backend, _code_files(None))
        last, restarts = _cell_pools.get(key, (None, 0))
        restarted = last is not None and last is not pool
        restarts += restarted
        _cell_pools[key] = (pool, restarts)
        try:
            results = pool.run(("exec", (code, filename), None, sys.path, dict(os.environ)),
                               timeout, label="%%ranks cell", cell=True)
        except LaunchError as e:
            e.restarted = restarted
            e.restarts = restarts
            raise
    for r in results:
        r.update(restarted=restarted, restarts=restarts)
    return results


def shutdown() -> None:
    """Stop every pooled rank (they also stop when this process exits)."""
    with _lock:
        while _pools:
            _pools.pop(next(iter(_pools))).close()


@contextlib.contextmanager
def _stop_everything_on_ctrl_c():
    """A Ctrl-C (kernel interrupt) during a launch stops every process parlab started:
    the ranks of every pool, the fork server and, if parlab started it,
    multiprocessing's resource tracker; then it is raised. The one it landed in
    could be anywhere: a rank whose fork the fork server had not yet answered (a cold
    start, the server still importing torch) is known to nobody and would be forked
    later, then wait out its rendezvous. The next launch starts afresh (a cold start
    of a few seconds). A second Ctrl-C meanwhile waits for this to finish."""
    try:
        yield
    except KeyboardInterrupt:
        with processes.ctrl_c_deferred():
            processes.every_step(shutdown, processes.stop_fork_server)
        raise


def last_placement() -> dict:
    """What the last launch ran on: ``{"backend", "device" ("cpu", "cuda", "dry-run"),
    "world_size", "gpus", "line"}`` (devices.placement); {} before the first."""
    return dict(_placement)


def _choose(world_size, backend, device) -> str:
    """The pool's backend string (devices.choose) and, the first time a pool puts its
    ranks on a GPU, a line saying so."""
    chosen = devices.choose(world_size, backend, device)
    _placement.clear()
    _placement.update(devices.placement(chosen, world_size))
    if _placement["device"] == "cuda" and (world_size, chosen) not in _announced:
        _announced.add((world_size, chosen))
        print(f"[parlab] {_placement['line']}", file=sys.stderr, flush=True)
    return chosen


def memory_budget() -> dict:
    """The memory budget the pools keep to, and what this session holds now (bytes):
    ``{"budget", "source", "used", "rank_bytes"}``; ``budget`` is None when off."""
    limit, source = budget.budget()
    with _lock:
        used = budget.session_bytes(sum(k[0] for k in _pools))
    return {"budget": limit, "source": source, "used": used, "rank_bytes": budget.RANK_BYTES}


def pool_info() -> list[dict]:
    """The pools alive now: world size, backend, pids, jobs run."""
    with _lock:
        _drop_unhealthy()
        return [{"world_size": p.world_size, "backend": p.backend, "jobs": p.jobs,
                 "pids": [proc.pid for proc in p.procs]} for p in _pools.values()]


# ------------------------------------------------------------------------------
# argument checks (before any process starts)
# ------------------------------------------------------------------------------

def _check_args(world_size, timeout, backend, device=None):
    check_int("world_size", world_size)
    check_launcher_env()  # a stray RANK/WORLD_SIZE: a ValueError naming them
    if world_size > MAX_LOCAL_RANKS:
        raise ValueError(f"world_size={world_size} exceeds the cap of {MAX_LOCAL_RANKS} local "
                         f"ranks (set PARLAB_MAX_RANKS to raise it)")
    check_float("timeout", timeout)  # seconds, finite and > 0: nothing may wait forever
    if backend not in (None, "gloo", "nccl"):
        raise ValueError(f"backend={backend!r} must be None, 'gloo' or 'nccl'")
    if device is not None:  # (what needs torch to check, a GPU count, _choose checks)
        devices.check_device(device)


def _check_fn(fn):
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    qualname = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(f"fn={qualname} is a lambda or closure; ranks are separate processes "
                         "and can only run a function defined at module level")
    if module == "__main__" and not hasattr(sys.modules["__main__"], "__file__"):
        raise ValueError(f"fn={qualname} is defined in a notebook or REPL; ranks cannot import "
                         "it. Put it in a module (e.g. under lib/parlab/) and import it")


def _pickle_job(fn, args, kwargs) -> bytes:
    try:
        return pickle.dumps((fn, args, kwargs))
    except Exception as e:
        raise ValueError(f"cannot send the job to the ranks: {type(e).__name__}: {e}") from None


def _fn_name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _main_script(fn) -> str | None:
    """The script file that defines ``fn``, when ``fn`` lives in ``__main__``."""
    if getattr(fn, "__module__", None) != "__main__":
        return None
    return os.path.abspath(sys.modules["__main__"].__file__)


# ------------------------------------------------------------------------------
# the pools kept alive, one per (world_size, backend)
# ------------------------------------------------------------------------------

def _get_pool(world_size: int, backend: str, code_files: list[str]) -> Pool:
    key = (world_size, backend)
    _drop_unhealthy()
    pool = _pools.pop(key, None)
    if pool is not None and pool.stale():
        print("[parlab] code changed since the ranks started: restarting them", file=sys.stderr,
              flush=True)
        pool.close()
        pool = None
    if pool is None:
        # Keep the number of idle ranks bounded: drop the oldest pools.
        while _pools and sum(k[0] for k in _pools) + world_size > MAX_POOLED_RANKS:
            _pools.pop(next(iter(_pools))).close()
        _make_room(world_size)
        pool = Pool(world_size, backend)
    pool.watch(code_files)  # parlab's sources and fn's module, as the ranks will see them
    _pools[key] = pool  # most recently used last
    return pool


def _make_room(world_size: int) -> None:
    """Close idle pools, oldest first, until ``world_size`` new ranks fit the memory
    budget (budget.py); refuse in words when they do not fit even alone."""
    limit, source = budget.budget()
    if limit is None:
        return
    need = budget.new_pool_bytes(world_size)
    used = budget.session_bytes(sum(k[0] for k in _pools))
    if used + need <= limit:
        return
    pooled = sum(budget.ranks_bytes([p.pid for p in pool.procs]) for pool in _pools.values())
    if used - pooled + need > limit:  # no use closing the others: refuse, keep them
        raise budget.too_many(world_size, used - pooled, need, limit, source)
    while _pools and used + need > limit:
        _pools.pop(next(iter(_pools))).close()
        used = budget.session_bytes(sum(k[0] for k in _pools))
    if used + need > limit:
        raise budget.too_many(world_size, used, need, limit, source)


def _drop_unhealthy() -> None:
    """Forget (and finish closing) pools that failed, were interrupted or lost a rank."""
    for key, pool in list(_pools.items()):
        if not pool.healthy():
            if pool.lost_fork_server() and not pool.closing:
                print("[parlab] the fork server that starts the ranks died: starting a "
                      "fresh one and new ranks", file=sys.stderr, flush=True)
            del _pools[key]
            pool.close()


def _code_files(fn) -> list[str]:
    """Sources whose change should restart the ranks: parlab's (all of its packages)
    and fn's module."""
    files = list(_py_files(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if path and path.endswith(".py"):
        files.append(os.path.abspath(path))
    return files


_walked: dict[str, tuple] = {}  # root -> (((package dir, its mtime), ...), its .py files)


def _py_files(root: str) -> list[str]:
    """The .py files under ``root`` (parlab's). Walking the tree on every launch cost a
    warm re-run ~0.3 ms (160 files, 16 packages); the list changes only when a package
    directory does, so it is kept until one of their mtimes changes (a file added,
    removed or renamed). An edited file is stale()'s business: it stats every file."""
    key, files = _walked.get(root, (None, []))
    if key is not None and all(_dir_mtime(d) == m for d, m in key):
        return files
    key = []
    files = []
    for d, _, names in os.walk(root):
        if os.path.basename(d).startswith(("__", ".")) and d != root:
            continue  # __pycache__: its files change on every compile and are not sources
        key.append((d, _dir_mtime(d)))
        files.extend(os.path.join(d, f) for f in names if f.endswith(".py"))
    _walked[root] = (tuple(key), files)
    return files


def _dir_mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


# In a notebook's kernel, start the fork server now, while the learner reads: the
# first launch then forks its ranks from a server that has imported torch (prewarm.py).
from . import prewarm as _prewarm  # noqa: E402

_prewarm.start()

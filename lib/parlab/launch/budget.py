"""The memory budget: how much the caller and its ranks may hold together.

A free Binder session has about 2 GB and kills the kernel that goes past it, ranks
included. Each pool of ranks costs memory even when idle, so before a new pool
starts, the registry in ``__init__.py`` closes idle pools of other world sizes
(oldest first) until the new one fits the budget, and refuses in words, before any
process starts, when it cannot fit at all.

What counts is the proportional set size (PSS) of this process and everything it
started (the fork server, the ranks): a page shared by k processes counts 1/k in
each, so the sum is what they cost the machine together. The budget itself is
``hardware.memory_budget()``: 85% of the memory limit (the cgroup limit when one is
set, else the RAM), or ``PARLAB_MEMORY_BUDGET`` ("1.5G", "1500M", bytes, or "off").
"""

from __future__ import annotations

import os
import sys

from .errors import MemoryBudgetError

MiB = 2 ** 20
GiB = 2 ** 30
# A new rank's cost, from bench/memory.py runs of the notebooks: a rank holds ~40-90 MiB
# while and after it runs a lab-sized job, its share of the fork server's pages included.
RANK_BYTES = int(float(os.environ.get("PARLAB_RANK_MIB", "96")) * MiB)
FORK_SERVER_BYTES = 256 * MiB  # torch and its autograd machinery, imported once (processes.py)


def budget() -> tuple[int | None, str]:
    """(bytes, or None for no budget; where it comes from): hardware.memory_budget()."""
    from ..hardware import memory_budget
    return memory_budget()


# ------------------------------------------------------------------------------
# what this session holds now
# ------------------------------------------------------------------------------

def pss_bytes(pid: int) -> int:
    """One process's PSS (0 when it is gone or cannot be read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return 1024 * sum(int(ln.split()[1]) for ln in f if ln.startswith("Pss:"))
    except (OSError, ValueError, IndexError):
        return 0


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (Linux /proc)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    out = []
    todo = [pid]
    while todo:
        out.append(todo.pop())
        todo.extend(kids.get(out[-1], []))
    return out


def session_bytes(pooled_ranks: int) -> int:
    """What this process and everything it started hold now: summed PSS where /proc
    has it (Linux), else this process's peak RSS plus the pooled ranks' estimate."""
    if os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
        return sum(pss_bytes(p) for p in descendants(os.getpid()))
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    own = peak if sys.platform == "darwin" else peak * 1024
    return own + pooled_ranks * RANK_BYTES + (FORK_SERVER_BYTES if pooled_ranks else 0)


def ranks_bytes(pids: list[int]) -> int:
    """What these ranks hold (their estimate where /proc cannot tell)."""
    if os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
        return sum(pss_bytes(p) for p in pids)
    return len(pids) * RANK_BYTES


def fork_server_running() -> bool:
    try:
        from multiprocessing import forkserver
        return forkserver._forkserver._forkserver_pid is not None
    except AttributeError:
        return False


def new_pool_bytes(world_size: int) -> int:
    """The estimated cost of starting ``world_size`` more ranks now."""
    from .processes import mp_context
    starts_server = (mp_context().get_start_method() == "forkserver"
                     and not fork_server_running())
    return world_size * RANK_BYTES + (FORK_SERVER_BYTES if starts_server else 0)


def too_many(world_size: int, used: int, need: int, limit: int,
             source: str) -> MemoryBudgetError:
    """The words for a pool that cannot fit even with every other pool closed; ``used``
    is what this session holds without those pools."""
    server = need - world_size * RANK_BYTES  # > 0 when the fork server must start too
    fit = max(0, (limit - used - server) // RANK_BYTES)
    what = f"{world_size} ranks x ~{RANK_BYTES / MiB:.0f} MiB" + (
        ", and the fork server that starts them" if server else "")
    return MemoryBudgetError(
        f"world_size={world_size} needs about {need / GiB:.2f} GiB more ({what}), but this "
        f"session holds {used / GiB:.2f} GiB without them, of its {limit / GiB:.2f} GiB memory "
        f"budget ({source}), so at most {fit} rank{'' if fit == 1 else 's'} fit now. Past the "
        "limit this process (a notebook's kernel) would be killed. Use fewer ranks or free "
        "memory in this process; if this machine has more memory than it reports, set "
        "PARLAB_MEMORY_BUDGET (e.g. '4G', or 'off').")

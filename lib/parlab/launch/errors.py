"""What a failed launch raises, and how it describes where the ranks were.

``LaunchError`` carries the first failing rank and its traceback; ``LaunchTimeout``
names the ranks still running and, for each, the traced op it was inside and the
Python line it was blocked on (from a faulthandler dump). Its hint tells a hang in a
collective that only some ranks called apart from a job that is just slow or stuck
on its own (a sleep, a loop).
"""

from __future__ import annotations

import os
import re
import signal


class LaunchError(RuntimeError):
    """A rank failed. ``.rank`` is the first failing rank; the message holds its traceback."""

    def __init__(self, message: str, rank: int | None = None, remote_traceback: str = ""):
        super().__init__(message)
        self.rank = rank
        self.remote_traceback = remote_traceback
        # %%ranks cells only (pool.py): what each rank printed; rank -> {"error", "info"};
        # the ranks still running when a rank failed (a LaunchTimeout), if any
        self.outputs: list[str] | None = None
        self.rank_errors: dict[int, dict] = {}
        self.still_running: LaunchTimeout | None = None


class LaunchTimeout(LaunchError):
    """A job ran past its timeout. ``.ranks``: the ranks still running; ``.blocked_in``:
    rank -> where it was blocked (traced op and Python line), when known."""

    def __init__(self, message: str, ranks: list[int], blocked_in: dict[int, str],
                 hint: str = "", dumps: dict[int, str] | None = None):
        super().__init__(message, rank=ranks[0] if ranks else None)
        self.ranks = ranks
        self.blocked_in = blocked_in
        self.hint = hint  # one line: what the hang most likely is
        self.dumps = dumps or {}  # rank -> its faulthandler stack dump ('' if none came)


class MemoryBudgetError(ValueError):
    """More ranks than the memory budget holds (budget.py). A ValueError like every
    other refused argument: raised before any rank of that launch starts."""


def failure(label: str, rank: int, tb: str, still_running: LaunchTimeout | None = None
            ) -> LaunchError:
    e = LaunchError(f"rank {rank} raised during {label}; the other ranks were stopped.\n"
                    f"--- traceback from rank {rank} ---\n{tb}", rank=rank,
                    remote_traceback=tb)
    e.still_running = still_running
    return e


def death(label: str, rank: int, exitcode: int | None) -> LaunchError:
    how = (f"killed by signal {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0
           else f"exit code {exitcode}")
    return LaunchError(f"rank {rank} died during {label} ({how}); the other ranks were "
                       "stopped", rank=rank)


def fork_server_died(label: str) -> LaunchError:
    # Ranks are forked from a fork server (processes.py), which also reports their
    # exits: when it dies every rank looks as if it had exited with code 255.
    return LaunchError(f"the fork server that starts the ranks died during {label}; the "
                       "ranks were stopped. The next launch starts a fresh fork server and "
                       "new ranks (a cold start)")


# Span names of parlab.comm and of the usual hand-traced collectives; the status slot
# holds names only, so a traced op counts as communication when its name says so.
_COMM_NAME = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|"
                        r"barrier|send|recv|exchange|collective", re.IGNORECASE)
_TORCH_DIST = f"{os.sep}torch{os.sep}distributed{os.sep}"
_PARLAB_COMM = (f"parlab{os.sep}comm.py", f"parlab{os.sep}comm{os.sep}")


def timeout(label: str, world_size: int, running: list[int], ops: dict[int, str],
            dumps: dict[int, str]) -> LaunchTimeout:
    """The error for a job still running on ``running`` ranks at its deadline.

    ``ops``: rank -> traced op from its status slot; ``dumps``: rank -> its
    faulthandler dump ('' when it did not answer in time).
    """
    blocked = {}
    in_comm = []
    for r in running:
        frame, comm_frame = innermost_user_frame(dumps.get(r, ""))
        op = ops.get(r, "")
        blocked[r] = ", ".join(x for x in (f"traced op '{op}'" if op else "", frame) if x) \
            or "unknown"
        if comm_frame or _COMM_NAME.search(op.rsplit(" > ", 1)[-1]):
            in_comm.append(r)
    detail = "\n".join(f"  rank {r}: blocked in {blocked[r]}" for r in running)
    known = [r for r in running if blocked[r] != "unknown"]
    hint = _hint(world_size, running, in_comm, known)
    detail += "\n  " + hint
    return LaunchTimeout(f"{label} did not finish within its timeout on {world_size} ranks; "
                         f"still running: {running} (all ranks were stopped).\n{detail}",
                         running, blocked, hint=hint, dumps=dumps)


def _hint(world_size: int, running: list[int], in_comm: list[int], known: list[int]) -> str:
    finished = sorted(set(range(world_size)) - set(running))
    elsewhere = [r for r in running if r not in in_comm]
    if in_comm and (finished or elsewhere):
        parts = [f"ranks {finished} had already finished" if finished else "",
                 f"ranks {elsewhere} were not in a collective" if elsewhere else ""]
        return (f"{' and '.join(p for p in parts if p)} while ranks {in_comm} were blocked "
                "in a communication op: did only some ranks call a collective?")
    if in_comm:
        return ("every rank was waiting in a communication op: do the ranks call the same "
                "collectives in the same order, on the same group, with matching sizes?")
    done = f"ranks {finished} had already finished; " if finished else ""
    if not known:
        return f"{done}the ranks did not say where they were (no stack dump came back)"
    return (f"{done}no rank was blocked in a communication op: the job itself is slow or "
            "stuck (a loop, a sleep, a lock); pass a larger timeout= if it only needs longer")


def innermost_user_frame(dump: str) -> tuple[str, bool]:
    """From a faulthandler dump, the line that called the blocking op, and whether that
    op is communication (torch.distributed or parlab.comm code inside that line).

    faulthandler lists each thread's frames, most recent first; we take the main
    thread (the one running the rank's serve loop) and skip frames inside torch.
    """
    for block in dump.split("\n\n"):
        if "rank_main" not in block:
            continue
        frames = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("File ")]
        for i, f in enumerate(frames):
            if f"{os.sep}torch{os.sep}" not in f:
                inner = frames[:i + 1]  # the user's frame and what it called
                comm = any(_TORCH_DIST in g or any(p in g for p in _PARLAB_COMM) for g in inner)
                return f, comm
        return (frames[0] if frames else ""), any(_TORCH_DIST in g for g in frames)
    return "", False

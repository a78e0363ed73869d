"""A real failure and restart: ``failover(ranks, steps, kill_at, every)``.

Starts ``torchrun --standalone --nproc-per-node ranks --max-restarts 1`` as a subprocess
(``sys.executable -m torch.distributed.run``: the same interpreter and packages), its
workers being ``elastic_worker``: they train the tiny GPT with the lab's FullyShard,
save a DCP checkpoint every ``every`` steps, and on the first attempt the last rank
SIGKILLs itself before step ``kill_at``. torchrun sees the death, stops the group and
starts it again; the new workers resume from the newest complete checkpoint. What the
run lost (Gupta et al.'s "wasted work", and the restart; see cost/reliability.py):

    steps redone   = kill_at - the step of that checkpoint
    seconds lost   = from the kill until the new group has finished step kill_at - 1
                     again (restart: new processes, rendezvous, load; then the redo)

``--standalone`` runs the rendezvous on localhost on a free port. Nothing outlives the call
(see lifeline.py): torchrun runs under a guard that ends the run if the caller dies, each
worker dies with torchrun, and on Ctrl-C or the time limit the caller ends torchrun and
every worker (each in a session of its own) itself. The run's directory, torchrun's
``torchelastic_*`` logs included, is removed after every run unless ``keep=True``.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile

from parlab.validate import check_float, check_int

from . import lifeline

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


class FailoverError(RuntimeError):
    """torchrun ended badly; the message carries the worker's traceback."""


# What a run costs on the 2-core CPU box the lab is sized on (measured there, each with
# two ranks a core): one attempt's start (torchrun or its restart, importing torch,
# rendezvous, building the model), a training step, and a DCP save. A run is two
# attempts: steps 0..kill_at-1, then again from the last checkpoint to the end.
START_S, STEP_S, SAVE_S = 5.0, 0.05, 0.15
MAX_RANKS = 4  # the batch of 8 sequences split evenly, at most 4 ways on a small box


def seconds_needed(ranks: int, steps: int, kill_at: int, every: int) -> float:
    """A plain estimate of the run's length: more ranks than cores share them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    share = max(1.0, ranks / max(1, cores or 1))
    # checkpoint s is saved once step s - 1 is done: those up to kill_at, then the rest
    resumed = kill_at // every * every
    stepped = kill_at + steps - resumed
    saves = (steps - 1) // every
    return share * (2 * START_S + stepped * STEP_S + saves * SAVE_S)


def time_limit(ranks: int, steps: int, kill_at: int, every: int) -> float:
    """The default ``timeout``: the estimate three times over and half a minute more, for
    a busy machine; a run that needs more than that is stuck, not slow."""
    return math.ceil(30 + 3 * seconds_needed(ranks, steps, kill_at, every))


def check(ranks: int, steps: int, kill_at: int, every: int, timeout: float | None = None,
          keep: bool = False) -> float:
    """Refuse a bad setting, naming it, before torchrun starts; returns the time limit
    (``timeout``, or one sized to the work when None)."""
    check_int("ranks", ranks, 1, MAX_RANKS)
    if 8 % ranks:
        raise ValueError(f"ranks={ranks} must divide the batch of 8 sequences")
    check_int("steps", steps, 2, 200)
    check_int("kill_at", kill_at, 1, steps - 1)  # a step that runs, after at least one
    check_int("every", every, 1, steps - 1)  # every >= kill_at: no checkpoint, redo all
    if not isinstance(keep, bool):
        raise ValueError(f"keep={keep!r} must be True or False")
    if timeout is None:
        return time_limit(ranks, steps, kill_at, every)
    check_float("timeout", timeout)
    # refused only below half the estimate, which even a fast machine cannot beat by much
    need = seconds_needed(ranks, steps, kill_at, every)
    if timeout < need / 2:
        raise ValueError(f"timeout={timeout:g} is too short: ranks={ranks}, steps={steps}, "
                         f"kill_at={kill_at}, every={every} take about {need:.0f} s on a small "
                         f"box, {need / 2:.0f} s at the least (leave timeout unset: "
                         f"{time_limit(ranks, steps, kill_at, every):.0f} s)")
    return float(timeout)


def command(ranks: int, steps: int, kill_at: int, every: int, directory: str) -> list[str]:
    return TORCHRUN + ["--standalone", "--nproc-per-node", str(ranks), "--max-restarts", "1",
                       "-m", "lessons.l08_checkpoints_and_failures.elastic_worker", "--steps", str(steps),
                       "--kill-at", str(kill_at), "--every", str(every), "--dir", directory]


# where a worker's own report starts in torchrun's output: its Python traceback (torchrun
# prefixes each line with "[rankN]:"), or a crash below Python
WORKER_REPORT = ("]: Traceback (most recent call last)", "terminate called", "Fatal Python error")


def _traceback(text: str, lines: int = 40) -> str:
    """The first failing worker's report in torchrun's output (torchrun's own traceback,
    which only says a child failed, comes after it), else the output's last lines."""
    at = min((i for i in (text.find(m) for m in WORKER_REPORT) if i >= 0), default=-1)
    if at < 0:
        at = text.rfind("Traceback (most recent call last)")
    if at < 0:
        return "\n".join(text.strip().splitlines()[-lines:])
    at = text.rfind("\n", 0, at) + 1
    return "\n".join(text[at:].strip().splitlines()[:lines])


GUARD = [sys.executable, "-m", "lessons.l08_checkpoints_and_failures.lifeline"]


def _run(cmd: list[str], root: str, timeout: float, keep: bool) -> subprocess.CompletedProcess:
    """Run ``cmd`` (torchrun) under the guard, with ``root`` as the run's mark and TMPDIR;
    on the time limit, Ctrl-C or any other exit before torchrun's end, end every process
    of the run (workers are in sessions of their own: no group kill reaches them)."""
    lib = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tmp = os.path.join(root, "tmp")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, PARLAB_PREWARM="0", OMP_NUM_THREADS="1", TMPDIR=tmp,
               **{lifeline.MARK: root, lifeline.CALLER: str(os.getpid())},
               PYTHONPATH=os.pathsep.join([lib] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)  # a fresh job, even when called from inside another one
    # the guard in a session of its own: a Ctrl-C to this process (or its group) is ours
    # to handle, and a kill of this process leaves the guard to end the run
    proc = subprocess.Popen(GUARD + [root, "1" if keep else "0", "--"] + cmd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        lifeline.end_run(root, keep=True, also=(proc.pid,))
        out, _ = proc.communicate()
        raise FailoverError(f"torchrun still running after timeout={timeout:g} s; killed. "
                            f"Its last output:\n{_traceback(out or '')}") from None
    finally:
        # Ctrl-C (KeyboardInterrupt), or torchrun ended: whatever is left of the run (a
        # worker whose torchrun was killed, where the kernel cannot end it) ends here; a
        # scan of /proc when nothing is left
        lifeline.end_run(root, keep=True, also=(proc.pid,))
        proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def _read_log(directory: str) -> tuple[list[tuple], float]:
    rows = []
    with open(os.path.join(directory, "log.txt")) as f:
        for line in f:
            step, loss, end, start = line.split()
            rows.append((int(step), float(loss), float(end), int(start)))
    with open(os.path.join(directory, "log.txt.kill")) as f:
        killed = float(f.read())
    return rows, killed


def attempts(rows: list[tuple]) -> tuple[list, list]:
    """Rank 0's log rows (step, loss, end, start) split into the first attempt and the
    restarted one, by the log's order, not by time: rank 0 may log its last step just
    after the other rank's kill. A new attempt has another ``start`` or repeats a step."""
    cut = next((i for i in range(1, len(rows)) if rows[i][3] != rows[i - 1][3]
                or rows[i][0] <= rows[i - 1][0]), len(rows))
    return rows[:cut], rows[cut:]


def failover(ranks: int = 2, steps: int = 8, kill_at: int = 5, every: int = 2,
             timeout: float | None = None, keep: bool = False) -> dict:
    """Run it (see the module doc). ``timeout``: seconds before the run is ended (None:
    sized to the work, ``time_limit``); ``keep``: leave the run's directory (checkpoints,
    log, torchrun's logs) in place, its path under "directory". Returns {"losses": the final attempt's per step,
    "reference": an uninterrupted one-device run's, "max_loss_diff", "resumed_from",
    "redone_steps", "lost_seconds", "restart_seconds", "step_seconds", "attempts",
    "output": torchrun's last lines}."""
    limit = check(ranks, steps, kill_at, every, timeout, keep)
    root = tempfile.mkdtemp(prefix="parlab_failover_")
    directory = os.path.join(root, "run")
    os.makedirs(directory)
    try:
        res = _run(command(ranks, steps, kill_at, every, directory), root, limit, keep)
        if res.returncode != 0:
            raise FailoverError(f"torchrun exited with {res.returncode}; the worker said:\n"
                                f"{_traceback(res.stdout)}")
        rows, killed = _read_log(directory)
    finally:
        if not keep:  # torchrun's torchelastic_* logs are under root/tmp: gone too
            shutil.rmtree(root, ignore_errors=True)
    first, again = attempts(rows)
    if not again:
        raise FailoverError("the restarted attempt logged no step; torchrun said:\n"
                            + "\n".join(res.stdout.strip().splitlines()[-10:]))
    resumed = again[0][3]
    losses = {s: loss for s, loss, _, _ in rows}  # the second attempt's win
    ends = {s: end for s, _, end, _ in again}
    gaps = [b - a for a, b in zip([r[2] for r in again], [r[2] for r in again][1:])]
    step_s = sorted(gaps)[len(gaps) // 2] if gaps else 0.0
    # back at step kill_at: the redone step kill_at - 1 ended (or, resumed at kill_at
    # itself, the first new step began)
    back = ends[kill_at - 1] if kill_at - 1 >= resumed else ends[resumed] - step_s
    from .training import Layout, Spec, train_rank
    from .elastic_worker import TINY
    from parlab.model import GPTConfig
    ref = train_rank(Spec(GPTConfig(**TINY), Layout("one", 1), steps=steps))["losses"]
    return {"losses": [losses[s] for s in range(steps)], "reference": [ref[s] for s in range(steps)],
            "max_loss_diff": max(abs(losses[s] - ref[s]) for s in range(steps)),
            "resumed_from": resumed, "redone_steps": kill_at - resumed, "kill_at": kill_at,
            "every": every, "ranks": ranks, "first_attempt_steps": len(first),
            "lost_seconds": back - killed,
            "restart_seconds": ends[resumed] - killed - step_s, "step_seconds": step_s,
            "output": "\n".join(res.stdout.strip().splitlines()[-5:]),
            "command": shown_command(ranks, steps, kill_at, every),
            "timeout": limit, **({"directory": root} if keep else {})}


def shown_command(ranks: int, steps: int, kill_at: int, every: int) -> str:
    """The torchrun line ``failover`` runs, as one would type it (``python``, a <dir>)."""
    cmd = command(ranks, steps, kill_at, every, "<dir>")
    return " ".join(["python"] + cmd[1:])

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

``--standalone`` runs the rendezvous on localhost on a free port. The subprocess runs in
its own session: on timeout the whole process group is killed (torchrun and every worker),
and its temporary directory is always removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

from parlab.validate import check_float, check_int

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


class FailoverError(RuntimeError):
    """torchrun ended badly; the message carries the worker's traceback."""


def check(ranks: int, steps: int, kill_at: int, every: int, timeout: float) -> None:
    check_int("ranks", ranks, 1, 4)
    if 8 % ranks:
        raise ValueError(f"ranks={ranks} must divide the batch of 8 sequences")
    check_int("steps", steps, 2, 200)
    check_int("kill_at", kill_at, 1, steps - 1)
    check_int("every", every, 1, steps - 1)
    check_float("timeout", timeout)


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


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    lib = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PARLAB_PREWARM="0", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([lib] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)  # a fresh job, even when called from inside another one
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # torchrun and every worker: no orphans
        out, _ = proc.communicate()
        raise FailoverError(f"torchrun still running after timeout={timeout} s; killed. "
                            f"Its last output:\n{_traceback(out or '')}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
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
             timeout: float = 60.0) -> dict:
    """Run it (see the module doc). Returns {"losses": the final attempt's per step,
    "reference": an uninterrupted one-device run's, "max_loss_diff", "resumed_from",
    "redone_steps", "lost_seconds", "restart_seconds", "step_seconds", "attempts",
    "output": torchrun's last lines}."""
    check(ranks, steps, kill_at, every, timeout)
    directory = tempfile.mkdtemp(prefix="parlab_failover_")
    try:
        res = _run(command(ranks, steps, kill_at, every, directory), timeout)
        if res.returncode != 0:
            raise FailoverError(f"torchrun exited with {res.returncode}; the worker said:\n"
                                f"{_traceback(res.stdout)}")
        rows, killed = _read_log(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
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
            "command": shown_command(ranks, steps, kill_at, every)}


def shown_command(ranks: int, steps: int, kill_at: int, every: int) -> str:
    """The torchrun line ``failover`` runs, as one would type it (``python``, a <dir>)."""
    cmd = command(ranks, steps, kill_at, every, "<dir>")
    return " ".join(["python"] + cmd[1:])

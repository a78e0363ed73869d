"""Peak memory of a notebook run, measured as issue 15 defines it.

    from pss import measure_notebook
    r = measure_notebook("notebooks/03_pipeline_parallel.ipynb")
    r.peak_gib, r.seconds, r.ok

runs the notebook under nbval (``pytest --nbval-lax``, as ``run.py test`` does) in a
child process and, every 0.2 s, sums the proportional set size (PSS, the ``Pss:``
line of ``/proc/<pid>/smaps_rollup``) of the Jupyter kernel and every process below
it (the fork server, the resource tracker, the ranks). PSS splits a page shared by
k processes into k parts, so the sum is what these processes cost the machine
together: what a free Binder session's memory limit counts. pytest itself is not
counted (on Binder the Jupyter server plays its part).

Linux only (it reads /proc). ``bench/memory.py`` prints this for every notebook;
``tests/parlab/launch/test_launch_memory.py`` uses it for the budget.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2 ** 30
INTERVAL = 0.2  # seconds between samples


def pss_bytes(pid: int) -> int:
    """PSS of one process in bytes (0 when it is gone or unreadable)."""
    for name in ("smaps_rollup", "smaps"):  # smaps_rollup: Linux >= 4.14; smaps sums the same
        try:
            with open(f"/proc/{pid}/{name}") as f:
                return 1024 * sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, ValueError, IndexError):
            continue
    return 0


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int, kids: dict[int, list[int]] | None = None) -> list[int]:
    """``pid`` and every process below it."""
    kids = _children() if kids is None else kids
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kernels_below(pid: int) -> list[int]:
    """The Jupyter kernels started by ``pid`` (or by its children)."""
    kids = _children()
    return [p for p in descendants(pid, kids)[1:] if "ipykernel" in _cmdline(p)]


def _role(pid: int, roots: list[int], parent: dict[int, int]) -> str:
    cmd = _cmdline(pid)
    if pid in roots:
        return "kernel" if "ipykernel" in cmd else "root"
    if "multiprocessing.resource_tracker" in cmd:
        return "resource tracker"
    if "multiprocessing.forkserver" in cmd:  # a rank is forked from the fork server
        return "rank" if "multiprocessing.forkserver" in _cmdline(parent.get(pid, 0)) else "fork server"
    return "other"


def tree_pss(roots: list[int], detail: bool = False):
    """Summed PSS of ``roots`` and everything below them, and how many processes that
    is; with ``detail``, also [(pid, role, bytes)] for each of them."""
    kids = _children()
    pids = {p for r in roots for p in descendants(r, kids)}
    sizes = {p: pss_bytes(p) for p in pids}
    if not detail:
        return sum(sizes.values()), len(pids)
    parent = {k: p for p, ks in kids.items() for k in ks}
    return sum(sizes.values()), len(pids), sorted(
        ((p, _role(p, roots, parent), b) for p, b in sizes.items()), key=lambda x: -x[2])


@dataclass
class Peak:
    """What a sampled run reached: the largest summed PSS and when."""
    peak_bytes: int = 0
    peak_processes: int = 0
    peak_at: float = 0.0  # seconds after the start
    samples: int = 0
    seconds: float = 0.0
    returncode: int | None = None
    output: str = ""
    series: list = field(default_factory=list)  # (seconds, bytes, processes)
    breakdown: list = field(default_factory=list)  # at the peak: (pid, role, bytes)

    @property
    def peak_gib(self) -> float:
        return self.peak_bytes / GIB

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def roles(self) -> dict[str, tuple[int, int]]:
        """At the peak: role -> (processes, bytes), e.g. {"rank": (8, 420e6), ...}."""
        out: dict[str, tuple[int, int]] = {}
        for _, role, b in self.breakdown:
            n, total = out.get(role, (0, 0))
            out[role] = (n + 1, total + b)
        return out


def sample_tree(proc: subprocess.Popen, roots_of, interval: float = INTERVAL) -> Peak:
    """Sample ``roots_of(proc.pid)``'s trees every ``interval`` s until ``proc`` exits."""
    peak, t0 = Peak(), time.monotonic()
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    while proc.poll() is None:
        roots = roots_of(proc.pid)
        if roots:
            total, n, detail = tree_pss(roots, detail=True)
            now = time.monotonic() - t0
            peak.samples += 1
            peak.series.append((round(now, 2), total, n))
            if total > peak.peak_bytes:
                peak.peak_bytes, peak.peak_processes, peak.peak_at = total, n, now
                peak.breakdown = detail
        time.sleep(interval)
    reader.join()
    peak.seconds, peak.returncode = time.monotonic() - t0, proc.returncode
    peak.output = b"".join(out).decode(errors="replace")
    return peak


def nbval_command(notebook: str, *pytest_args: str, cpus: str | None = None) -> list[str]:
    """How CI runs a notebook (run.py test: pytest with pyproject's nbval options)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", notebook,
           *pytest_args]
    return (["taskset", "-c", cpus] if cpus else []) + cmd


def measure_notebook(notebook: str, *pytest_args: str, cpus: str | None = None,
                     env: dict | None = None, interval: float = INTERVAL,
                     cwd: str = ROOT) -> Peak:
    """Run ``notebook`` under nbval and return its kernel tree's peak PSS.

    ``cpus``: a ``taskset -c`` list ("0" for one core); ``env`` adds variables;
    ``cwd``: the checkout to run in (its pyproject.toml holds the nbval options)."""
    proc = subprocess.Popen(nbval_command(notebook, *pytest_args, cpus=cpus), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **(env or {})))
    try:
        return sample_tree(proc, kernels_below, interval)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def measure_command(cmd: list[str], env: dict | None = None, interval: float = INTERVAL) -> Peak:
    """Run ``cmd`` and sample its whole process tree (the command itself included)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **(env or {})))
    try:
        return sample_tree(proc, lambda pid: [pid], interval)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    for nb in sys.argv[1:]:
        r = measure_notebook(nb)
        print(f"{nb}: peak {r.peak_gib:.2f} GiB ({r.peak_processes} processes, at "
              f"{r.peak_at:.0f} s) in {r.seconds:.0f} s, rc {r.returncode}", flush=True)

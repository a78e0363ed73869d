"""How long does it take to run a small job on N ranks? (parlab.launch vs alternatives)

Measures, for N in --sizes, each in a fresh subprocess so nothing is shared:
  cold      first launch: start N ranks + rendezvous + one all-reduce
            (parlab with the default forkserver, and with plain spawn)
  warm      median of re-running the one-all-reduce job on the same ranks,
            with a 0.3 s pause before each launch (a learner moving a slider)
  b2b       the same, launches back to back (includes re-creating the process
            group after each job, which the pause otherwise hides)
  fail      from the moment a rank raises to the moment the caller has the error
  ipp-cold / ipp-warm   the same job on ipyparallel engines (if installed): cluster
            start + torch.distributed init on every engine, then a warm job.

    python bench/launcher.py --sizes 2 4 8 --repeats 15
Prints a table; --json writes the raw numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _job_all_reduce():
    import torch
    import torch.distributed as dist
    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()


def _job_fail_after(delay):
    import torch.distributed as dist
    time.sleep(delay)
    if dist.get_rank() == dist.get_world_size() - 1:
        raise RuntimeError(f"raised at {time.time()!r}")
    time.sleep(60)


def measure_parlab(n: int, repeats: int, method: str) -> dict:
    os.environ["PARLAB_START_METHOD"] = method
    import parlab
    from bench.launcher import _job_all_reduce, _job_fail_after  # importable by the ranks

    t0 = time.perf_counter()
    parlab.launch(_job_all_reduce, n)
    cold = time.perf_counter() - t0
    warm, b2b, fail = [], [], []
    for _ in range(repeats):
        time.sleep(0.3)
        t0 = time.perf_counter()
        parlab.launch(_job_all_reduce, n)
        warm.append(time.perf_counter() - t0)
    for _ in range(repeats):
        t0 = time.perf_counter()
        parlab.launch(_job_all_reduce, n)
        b2b.append(time.perf_counter() - t0)
    for _ in range(3):
        try:
            parlab.launch(_job_fail_after, n, 0.2)
        except parlab.LaunchError as e:
            raised_at = float(str(e).rsplit("raised at ", 1)[1].split()[0])
            fail.append(time.time() - raised_at)
        parlab.launch(_job_all_reduce, n)  # rebuilt pool works
    parlab.shutdown()
    return {"cold": cold, "warm": statistics.median(warm), "b2b": statistics.median(b2b),
            "fail": statistics.median(fail)}


def _ipp_init(rank, world, port):
    import os
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    store = dist.TCPStore("127.0.0.1", port, world, False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    return rank


def measure_ipyparallel(n: int, repeats: int) -> dict:
    import socket

    import ipyparallel as ipp
    import torch.distributed as dist

    t0 = time.perf_counter()
    cluster = ipp.Cluster(n=n, log_level=40)
    rc = cluster.start_and_connect_sync()
    rc.wait_for_engines(n, timeout=120)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    store = dist.TCPStore("127.0.0.1", port, None, True, wait_for_workers=False,
                          master_listen_fd=sock.detach())
    results = [rc[i].apply_async(_ipp_init, i, n, port) for i in range(n)]
    [r.get(timeout=120) for r in results]
    view = rc[:]
    view.apply_sync(_job_all_reduce)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        time.sleep(0.3)
        t0 = time.perf_counter()
        view.apply_sync(_job_all_reduce)
        warm.append(time.perf_counter() - t0)
    rc.close()
    cluster.stop_cluster_sync()
    del store
    return {"cold": cold, "warm": statistics.median(warm)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--one", nargs=3, metavar=("KIND", "N", "REPEATS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:  # child mode: one measurement in a fresh interpreter
        kind, n, repeats = args.one[0], int(args.one[1]), int(args.one[2])
        res = (measure_ipyparallel(n, repeats) if kind == "ipp"
               else measure_parlab(n, repeats, kind))
        print("RESULT " + json.dumps(res))
        return
    try:
        import ipyparallel  # noqa: F401
        kinds = ["forkserver", "spawn", "ipp"]
    except ImportError:
        kinds = ["forkserver", "spawn"]
    table = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
    for n in args.sizes:
        for kind in kinds:
            out = subprocess.run([sys.executable, "-m", "bench.launcher", "--one", kind, str(n),
                                  str(args.repeats)], capture_output=True, text=True, env=env,
                                 cwd=os.path.dirname(HERE), timeout=600)
            line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
            if not line:
                print(f"{kind} n={n} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                continue
            table[(kind, n)] = json.loads(line[0][7:])
            print(kind, n, table[(kind, n)], flush=True)
    print(f"\n{'engine':<12}{'N':>3}{'cold s':>9}{'warm ms':>10}{'b2b ms':>9}{'fail ms':>9}")
    for (kind, n), r in table.items():
        fmt = lambda k, scale, w: f"{r[k] * scale:>{w}.1f}" if k in r else f"{'-':>{w}}"
        print(f"{kind:<12}{n:>3}{r['cold']:>9.2f}{fmt('warm', 1e3, 10)}{fmt('b2b', 1e3, 9)}"
              f"{fmt('fail', 1e3, 9)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{k}:{n}": v for (k, n), v in table.items()}, f, indent=1)


if __name__ == "__main__":
    main()

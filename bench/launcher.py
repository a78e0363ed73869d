"""How long does it take to run a small job on N ranks? (parlab.launch vs alternatives)

Time to first result (--only first; 4 ranks by default, --first-sizes), each run in a
fresh interpreter that does what a notebook does: its first cell imports torch and
parlab, the learner reads for --pause seconds (default 5), then the first launch
cell runs a one-number all-reduce on N ranks. Cold (PARLAB_PREWARM=0: the first launch
starts the fork server) and prewarmed (PARLAB_PREWARM=1, as in a notebook's kernel:
the import started it, launch/prewarm.py) alternate, --rounds times, each round in the
other order. Reported, medians: the import cell, the first launch's wait, the whole
time from starting the interpreter to the first result with the pause left out, the
warm re-run after it (median of 10, 0.3 s pause before each) and the session's PSS
(caller + fork server + ranks) once the first result is in.

Warm re-runs (--only warm; 4 ranks by default, --first-sizes): in --rounds fresh
interpreters, the pool started once, then --warm-repeats launches each of the
one-number all-reduce and of a function that does nothing (the launcher alone),
alternating, 0.3 s pause before each; per interpreter the median and quartiles, and
the median over interpreters. An idle machine's figure is one command:

    python -m bench.launcher --only warm --rounds 5           # ~2 min

The table (--only table), for N in --sizes, each in a fresh subprocess:
  cold      first launch: start N ranks + rendezvous + one all-reduce
            (parlab with the default forkserver, and with plain spawn)
  warm      median of re-running the one-all-reduce job on the same ranks,
            with a 0.3 s pause before each launch (a learner moving a slider)
  b2b       the same, launches back to back (includes re-creating the process
            group after each job, which the pause otherwise hides)
  fail      from the moment a rank raises to the moment the caller has the error
  ipp-cold / ipp-warm   the same job on ipyparallel engines (if installed): cluster
            start + torch.distributed init on every engine, then a warm job.

    python -m bench.launcher --only first --rounds 5          # ~2 min on 2 cores
    python -m bench.launcher --sizes 2 4 8 --repeats 15       # all three parts, ~7 min
    python -m bench.launcher --quick                          # a smoke run (~30 s)
``--json PATH`` writes {"ratios": {"first_launch:cold/prewarmed@4": median per-round
ratio, "first_result:cold/prewarmed@4": ..., "first_launch/warm:prewarmed@4": ...},
"first_result": {N: {"cold"|"prewarmed": {measure: [per round]}}}, "warm": {N: [per
interpreter {"all_reduce"|"noop": {"median", "q1", "q3"}}]}, "table": {...},
"load": [1-min load average before, after], "cores": n}.
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


def _job_noop():
    return None


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


def measure_first_result(n: int, pause: float, spawned_at: float) -> dict:
    """In a fresh interpreter (PARLAB_PREWARM set by the parent): a notebook's import
    cell, a pause, the first launch, then warm re-runs. Seconds; PSS in bytes."""
    t0 = time.perf_counter()
    import torch  # noqa: F401  (notebook 00's first cell imports torch, then parlab)
    t1 = time.perf_counter()
    import parlab
    t2 = time.perf_counter()
    from bench.launcher import _job_all_reduce
    from parlab.launch import budget
    from parlab.launch.processes import fork_server_pid, mp_context
    early = fork_server_pid(mp_context())
    time.sleep(pause)  # the learner reads
    t3 = time.perf_counter()
    parlab.launch(_job_all_reduce, n)
    t4 = time.perf_counter()
    pss = budget.session_bytes(n)
    warm = []
    for _ in range(10):
        time.sleep(0.3)
        t = time.perf_counter()
        parlab.launch(_job_all_reduce, n)
        warm.append(time.perf_counter() - t)
    parlab.shutdown()
    return {"start": t0 - spawned_at, "import_torch": t1 - t0, "import_parlab": t2 - t1,
            "first_launch": t4 - t3, "first_result": (t2 - spawned_at) + (t4 - t3),
            "warm": statistics.median(warm), "pss": pss, "early_server": early is not None}


def measure_warm(n: int, repeats: int, pause: float) -> dict:
    """In a fresh interpreter: start the pool, then ``repeats`` warm re-runs of each job
    (the one-number all-reduce, and a function that does nothing: the launcher alone),
    alternating, ``pause`` seconds before each. Medians and quartiles, seconds."""
    import parlab
    from bench.launcher import _job_all_reduce, _job_noop
    parlab.launch(_job_all_reduce, n)
    times = {"all_reduce": [], "noop": []}
    for _ in range(repeats):
        for name, fn in (("all_reduce", _job_all_reduce), ("noop", _job_noop)):
            time.sleep(pause)
            t = time.perf_counter()
            parlab.launch(fn, n)
            times[name].append(time.perf_counter() - t)
    parlab.shutdown()
    out = {"load": os.getloadavg()[0]}
    for name, ts in times.items():
        q1, q2, q3 = statistics.quantiles(ts, n=4)
        out[name] = {"median": q2, "q1": q1, "q3": q3}
    return out


def warm(sizes, rounds: int, repeats: int, pause: float, env: dict) -> dict:
    """Warm re-runs on a long-lived pool, ``rounds`` fresh interpreters per size."""
    runs = {}
    for n in sizes:
        got = [g for g in (_child(["warm", str(n), str(repeats), str(pause)], env)
                           for _ in range(rounds)) if g is not None]
        for g in got:
            print(f"warm re-run n={n}: all-reduce {g['all_reduce']['median'] * 1e3:5.2f} ms "
                  f"(quartiles {g['all_reduce']['q1'] * 1e3:.2f}-{g['all_reduce']['q3'] * 1e3:.2f}),"
                  f" empty function {g['noop']['median'] * 1e3:5.2f} ms "
                  f"({g['noop']['q1'] * 1e3:.2f}-{g['noop']['q3'] * 1e3:.2f}), "
                  f"load {g['load']:.1f}", flush=True)
        if got:
            runs[n] = got
            print(f"warm re-run n={n}, median of {len(got)} interpreters x {repeats} launches "
                  f"({pause:g} s pause before each): all-reduce "
                  f"{statistics.median(g['all_reduce']['median'] for g in got) * 1e3:.2f} ms, "
                  f"empty function {statistics.median(g['noop']['median'] for g in got) * 1e3:.2f}"
                  " ms", flush=True)
    return runs


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


def _child(args: list[str], env: dict) -> dict | None:
    out = subprocess.run([sys.executable, "-m", "bench.launcher", "--one", *args],
                         capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE),
                         timeout=600)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        print(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(line[0][7:])


def first_result(sizes, rounds: int, pause: float, env: dict) -> tuple[dict, dict]:
    """Cold and prewarmed first results, alternating, in fresh interpreters."""
    runs, ratios = {}, {}
    for n in sizes:
        res = {"cold": [], "prewarmed": []}
        for r in range(rounds):
            for kind in (["cold", "prewarmed"] if r % 2 == 0 else ["prewarmed", "cold"]):
                child_env = dict(env, PARLAB_PREWARM="1" if kind == "prewarmed" else "0")
                got = _child(["first", str(n), str(pause), repr(time.perf_counter())], child_env)
                if got is not None:
                    res[kind].append(got)
                    print(f"first result n={n} {kind:<9} import {got['import_parlab'] * 1e3:5.0f} "
                          f"ms, first launch {got['first_launch']:5.2f} s, to result "
                          f"{got['first_result']:5.2f} s, warm {got['warm'] * 1e3:5.1f} ms",
                          flush=True)
        runs[n] = {k: {m: [x[m] for x in v] for m in v[0]} for k, v in res.items() if v}
        pairs = list(zip(res["cold"], res["prewarmed"]))  # same round, same load
        for m in ("first_launch", "first_result"):
            ratios[f"{m}:cold/prewarmed@{n}"] = statistics.median(c[m] / p[m] for c, p in pairs)
        for kind in ("cold", "prewarmed"):
            ratios[f"first_launch/warm:{kind}@{n}"] = statistics.median(
                x["first_launch"] / x["warm"] for x in res[kind])
    print(f"\n{'ranks':<6}{'':<11}{'import':>8}{'1st launch':>12}{'to result':>11}{'warm':>8}"
          f"{'PSS':>9}   medians of {rounds} (pause {pause:g} s left out of 'to result')")
    for n, by_kind in runs.items():
        for kind, m in by_kind.items():
            med = {k: statistics.median(v) for k, v in m.items() if k != "early_server"}
            print(f"{n:<6}{kind:<11}{med['import_parlab'] * 1e3:>6.0f}ms{med['first_launch']:>11.2f}s"
                  f"{med['first_result']:>10.2f}s{med['warm'] * 1e3:>6.1f}ms"
                  f"{med['pss'] / 2**30:>7.2f}GiB")
    return runs, ratios


def table(sizes, repeats: int, env: dict) -> dict:
    try:
        import ipyparallel  # noqa: F401
        kinds = ["forkserver", "spawn", "ipp"]
    except ImportError:
        kinds = ["forkserver", "spawn"]
    rows = {}
    for n in sizes:
        for kind in kinds:
            got = _child([kind, str(n), str(repeats)], dict(env, PARLAB_PREWARM="0"))
            if got is not None:
                rows[(kind, n)] = got
                print(kind, n, got, flush=True)
    print(f"\n{'engine':<12}{'N':>3}{'cold s':>9}{'warm ms':>10}{'b2b ms':>9}{'fail ms':>9}")
    for (kind, n), r in rows.items():
        fmt = lambda k, scale, w: f"{r[k] * scale:>{w}.1f}" if k in r else f"{'-':>{w}}"
        print(f"{kind:<12}{n:>3}{r['cold']:>9.2f}{fmt('warm', 1e3, 10)}{fmt('b2b', 1e3, 9)}"
              f"{fmt('fail', 1e3, 9)}")
    return {f"{k}:{n}": v for (k, n), v in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["first", "warm", "table"],
                    help="one part (default: all three)")
    ap.add_argument("--first-sizes", type=int, nargs="+", default=[4],
                    help="ranks of the time-to-first-result runs (default 4)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="cold/prewarmed pairs per size, alternating (default 5)")
    ap.add_argument("--pause", type=float, default=5.0,
                    help="seconds between the import and the first launch (default 5)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warm-repeats", type=int, default=30,
                    help="warm re-runs of each job per interpreter (--only warm; default 30)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 round, 2 s pause, 2 ranks, 3 repeats (warm: 3)")
    ap.add_argument("--json", help='write {"ratios": {...}, "first_result": ..., "table": ...}')
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:  # child mode: one measurement in a fresh interpreter
        kind, n = args.one[0], int(args.one[1])
        if kind == "first":
            res = measure_first_result(n, float(args.one[2]), float(args.one[3]))
        elif kind == "warm":
            res = measure_warm(n, int(args.one[2]), float(args.one[3]))
        elif kind == "ipp":
            res = measure_ipyparallel(n, int(args.one[2]))
        else:
            res = measure_parlab(n, int(args.one[2]), kind)
        print("RESULT " + json.dumps(res))
        return
    if args.quick:
        args.rounds, args.pause, args.first_sizes, args.sizes, args.repeats = 1, 2.0, [2], [2], 3
        args.warm_repeats = 3
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "lib"),
         os.environ.get("PYTHONPATH", "")]))
    load = [os.getloadavg()[0]]
    print(f"{os.cpu_count()} CPU cores, load average {load[0]:.1f} before", flush=True)
    out = {"ratios": {}}
    if args.only in (None, "first"):
        out["first_result"], out["ratios"] = first_result(args.first_sizes, args.rounds,
                                                          args.pause, env)
    if args.only in (None, "warm"):
        out["warm"] = warm(args.first_sizes, args.rounds, args.warm_repeats, 0.3, env)
    if args.only in (None, "table"):
        out["table"] = table(args.sizes, args.repeats, env)
    load.append(os.getloadavg()[0])
    print(f"load average {load[0]:.1f} before, {load[1]:.1f} after ({os.cpu_count()} cores)")
    for k, v in out["ratios"].items():
        print(f"  {k}: {v:.1f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(out, load=load, cores=os.cpu_count()), f, indent=1)


if __name__ == "__main__":
    main()

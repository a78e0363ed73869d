"""How long ``planner.plan`` takes to rank every layout of a large cluster: Llama 3 405B on
16,384 H100s (its own job: 2,048 sequences of 8,192 tokens), every tp, cp and pp the planner
tries, uneven pipeline stages allowed or the embedding and the loss counted as a layer each
(every power-of-two pipeline then divides its 126 + 2) -- and a MoE model over every ep. The target is under
2 s on this lab's 2 cores; nothing here asserts it (a benchmark, not a test).

    python -m bench.plan                  # 3 repeats, medians
    python -m bench.plan --quick          # one repeat of each (seconds)
    python -m bench.plan --json plan.json
    python -m bench.plan --zero3-with-pp  # the same cases with ZeRO-3 searched beside pipelines

``--json PATH`` writes {"seconds": {case: median}, "layouts": {case: (ranked, infeasible)},
"estimates": {case: n}, "load": [1-min load before, after], "cores": n}.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import time

from parlab import planner

# the modules (``planner.estimate`` is the function of the same name)
ESTIMATE = importlib.import_module("parlab.planner.estimate")
SEARCH = importlib.import_module("parlab.planner.search")

CASES = {
    "llama3-405B on 16384 H100, every tp/cp/pp": dict(
        model="llama3-405B", n_gpus=16384, gpu="H100", global_batch=2048, uneven_stages=True),
    "llama3-405B on 16384 H100, the ends counted as layers": dict(
        model="llama3-405B", n_gpus=16384, gpu="H100", global_batch=2048, ends_as_layers=True),
    "llama3-405B at 128k tokens on 16384 H100": dict(
        model="llama3-405B", n_gpus=16384, gpu="H100", global_batch=128, seq_len=131072,
        uneven_stages=True, cp_kind="allgather"),
    "qwen3-235B-A22B on 16384 H100, every ep": dict(
        model="qwen3-235B-A22B", n_gpus=16384, gpu="H100", global_batch=4096, uneven_stages=True),
}


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def run_case(kw: dict) -> tuple[float, object, int]:
    """(seconds, the plan, estimates made) of one plan() from a cold cache."""
    ESTIMATE._layer_time.cache_clear()
    calls = 0
    predict = SEARCH.predict

    def counting(*a, **k):
        nonlocal calls
        calls += 1
        return predict(*a, **k)

    SEARCH.predict = counting
    try:
        kw = dict(kw)
        t0 = time.perf_counter()
        p = planner.plan(kw.pop("model"), kw.pop("n_gpus"), kw.pop("gpu"), kw.pop("global_batch"), **kw)
        return time.perf_counter() - t0, p, calls
    finally:
        SEARCH.predict = predict


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat of each case")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the timings here")
    ap.add_argument("--zero3-with-pp", action="store_true",
                    help="plan(..., zero3_with_pp=True): ZeRO-3 searched with pipelines too")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    planner.validate()  # the error bands plan() attaches are computed once, up front
    before = _load()
    out = {"seconds": {}, "layouts": {}, "estimates": {}}
    extra = {"zero3_with_pp": True} if args.zero3_with_pp else {}
    print(f"plan() timings{', zero3_with_pp=True' if extra else ''}, {os.cpu_count()} logical "
          f"cores, load average {before:.1f}\n")
    print("| case | seconds (median) | layouts ranked / infeasible | estimates | best |")
    print("|---|---|---|---|---|")
    for name, kw in CASES.items():
        runs = [run_case({**kw, **extra}) for _ in range(repeats)]
        sec = statistics.median(r[0] for r in runs)
        p, n = runs[-1][1], runs[-1][2]
        out["seconds"][name] = sec
        out["layouts"][name] = (len(p.ranked), len(p.infeasible))
        out["estimates"][name] = n
        print(f"| {name} | {sec:.2f} | {len(p.ranked)} / {len(p.infeasible)} | {n:,} | "
              f"{p.best.label if p.best else '-'} |")
    out["load"] = [before, _load()]
    out["cores"] = os.cpu_count()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()

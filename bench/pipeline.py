"""Pipeline parallelism on CPU ranks: our executor vs torch.distributed.pipelining,
and the measured bubble vs the formula.

Default mode (step time, real compute). For each schedule (gpipe, 1f1b,
interleaved v=2, zb-v) and p in --ps: the same model split, data and AdamW step run by
``parlab.pipeline_parallel.run`` (ours) and by torch's ``ScheduleGPipe`` /
``Schedule1F1B`` / ``ScheduleInterleaved1F1B`` / ``ScheduleZBVZeroBubble`` on the same
``Stage`` modules (theirs), both given the same ``PPRun``; our ZB-V also against torch's
``ScheduleDualPipeV`` on the same V (m >= 2p). Launches alternate ours/theirs (A/B
interleaved, --repeats rounds of one launch each with --steps steps; the first
step of every launch is dropped as warm-up); a step is timed from the barrier
before it to the last rank's optimizer step. A round's ratio is the median step of
ours over the median step of theirs; the table gives the medians over all steps and
the median of the per-round ratios.

--bubble mode (emulated compute). For p in {2, 4}, m in {1, 2, 4, 8, 16}, gpipe
and 1f1b: each op sleeps t_f / t_b (default 20 / 40 ms) while real activation-sized
messages still flow; the measured bubble is 1 - busy / (p x makespan) of a step
(best and median of --repeats steps after a dropped first one: other processes
can only add idle time, so the best step is the schedule's own cost), next to
``cost.bubble_fraction``.

    python -m bench.pipeline [--quick] [--ps 2 4] [--repeats 5] [--json PATH]
    python -m bench.pipeline --bubble [--quick] [--t-fwd 0.02 --t-bwd 0.04] [--json PATH]

--json PATH writes {"ratios": {key: median per-round ratio}, "rows": [...]}. Step time
mode: "<ours>/<peer>@<ranks>", e.g. "1f1b/torch-1f1b@4", "zb-v/torch-dualpipev@4"
(interleaved and zb-v run v=2).
Bubble mode: "<schedule>-m<M>/formula@<P>", the median measured bubble over
``cost.bubble_fraction``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys

from parlab import hardware
from lessons.l03_pipeline_parallel import experiments as demos
from parlab import pipeline_parallel as pp
from parlab.model import GPTConfig
from parlab.pipeline_parallel import PPRun


# (our schedule, torch's peer): ZB-V against torch's ZBV and its DualPipeV on the same V
CASES = (("gpipe", "pipelining"), ("1f1b", "pipelining"), ("interleaved", "pipelining"),
         ("zb-v", "pipelining"), ("zb-v", "dualpipev"))


def step_time_table(ps, cases, config, batch_size, m, steps, repeats) -> list[dict]:
    rows = []
    for p in ps:
        for schedule, peer in cases:
            v = 2 if schedule in ("interleaved", "zb-v") else 1
            if (schedule == "interleaved" and m % p) or (peer == "dualpipev" and m < 2 * p):
                continue
            run = PPRun(config=config, steps=steps, batch_size=batch_size, schedule=schedule,
                        p=p, micro_batches=m, v=v)
            name = schedule.replace("zb-v", "zbv") if peer == "pipelining" else peer
            ours, theirs, ratios = [], [], []
            for _ in range(repeats):  # A/B interleaved: noise hits both alike
                o = pp.run(run, p, timeout=300).step_times[1:]
                t = pp.run(dataclasses.replace(run, peer=peer), p, timeout=300).step_times[1:]
                ours, theirs = ours + o, theirs + t
                ratios.append(statistics.median(o) / statistics.median(t))
            o, t = statistics.median(ours), statistics.median(theirs)
            rows.append(dict(schedule=schedule, peer=name, p=p, m=m, v=v, ours=o, theirs=t,
                             ratio=statistics.median(ratios), ratios=ratios, n=len(ours),
                             key=f"{schedule}/torch-{name}@{p}"))
            print(f"  {schedule:<12} p={p}: ours {o * 1e3:7.1f} ms, torch-{name} "
                  f"{t * 1e3:7.1f} ms", file=sys.stderr, flush=True)
    return rows


def bubble_table(ps, ms, schedules, t_fwd, t_bwd, repeats) -> list[dict]:
    rows = demos.bubble_sweep(ps, ms, schedules, t_fwd, t_bwd, repeats)
    for r in rows:
        r["key"] = f"{r['schedule']}-m{r['m']}/formula@{r['p']}"
        r["ratio"] = r["median"] / r["formula"]
        print(f"  {r['schedule']:<6} p={r['p']} m={r['m']:>2}: best {100 * r['measured']:5.1f}% "
              f"(formula {100 * r['formula']:5.1f}%)", file=sys.stderr, flush=True)
    return rows


def write_json(path, rows) -> None:
    with open(path, "w") as f:
        json.dump({"ratios": {r["key"]: r["ratio"] for r in rows}, "rows": rows}, f, indent=1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bubble", action="store_true", help="emulated-mode bubble table")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 stages, small and short")
    ap.add_argument("--ps", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4, help="steps per launch (step time mode)")
    ap.add_argument("--micro-batches", type=int, default=8, help="step time mode")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--n-layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--t-fwd", type=float, default=0.02)
    ap.add_argument("--t-bwd", type=float, default=0.04)
    ap.add_argument("--json", metavar="PATH", help='also write {"ratios": {...}, "rows": [...]}')
    a = ap.parse_args(argv)
    cores = hardware.detect().usable_cpus
    if a.bubble:
        ms, repeats = ([1, 4, 16], 1) if a.quick else (a.ms, a.repeats)
        rows = bubble_table(a.ps, ms, ("gpipe", "1f1b"), a.t_fwd, a.t_bwd, repeats)
        print(f"\nMeasured bubble, emulated compute (t_f = {a.t_fwd * 1e3:g} ms, t_b = "
              f"{a.t_bwd * 1e3:g} ms per op): 1 - busy / (p x makespan) of one step; best and "
              f"median of {repeats} steps after a dropped first one; {cores} cores.\n")
        print("| p | m | formula (p-1)/(m+p-1) | GPipe best | GPipe median | 1F1B best "
              "| 1F1B median | max abs(best - formula) |")
        print("|---|---|---|---|---|---|---|---|")
        for p in a.ps:
            for m in ms:
                g, f = (next(r for r in rows if (r["p"], r["m"], r["schedule"]) == (p, m, s))
                        for s in ("gpipe", "1f1b"))
                diff = max(abs(g["measured"] - g["formula"]), abs(f["measured"] - f["formula"]))
                print(f"| {p} | {m} | {100 * g['formula']:.1f}% | {100 * g['measured']:.1f}% "
                      f"| {100 * g['median']:.1f}% | {100 * f['measured']:.1f}% "
                      f"| {100 * f['median']:.1f}% | {100 * diff:.1f} pp |")
        if a.json:
            write_json(a.json, rows)
        return
    if a.quick:
        a.ps = [2]
        config, steps, repeats, batch, m = GPTConfig(n_layers=8, d_model=32), 2, 1, 8, 4
    else:
        config = GPTConfig(n_layers=a.n_layers, d_model=a.d_model, n_heads=4)
        steps, repeats, batch, m = a.steps, a.repeats, a.batch_size, a.micro_batches
    rows = step_time_table(a.ps, CASES, config, batch, m, steps, repeats)
    print(f"\nStep time, real compute, {config.n_layers} layers, d_model={config.d_model}, "
          f"seq={config.seq_len}, batch {batch} in m={m} micro-batches; median of {rows[0]['n']} "
          f"steps per cell, ours/torch launches alternated; {cores} cores, 1 thread per rank.\n")
    print("| schedule | p | ours (ms) | torch.distributed.pipelining (ms) | ours / torch "
          "(median of rounds) |")
    print("|---|---|---|---|---|")
    for r in rows:
        name = r["schedule"] + (f" (v={r['v']})" if r["v"] > 1 else "")
        print(f"| {name} | {r['p']} | {r['ours'] * 1e3:.1f} | {r['theirs'] * 1e3:.1f} "
              f"({r['peer']}) "
              f"| {r['ratio']:.2f} |")
    if a.json:
        write_json(a.json, rows)


if __name__ == "__main__":
    main()

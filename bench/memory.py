"""How much memory does each notebook need? Peak PSS of the kernel and its ranks under nbval.

Runs each notebook as CI does (pytest --nbval-lax) and, every 0.2 s, sums the
proportional set size (PSS, /proc/<pid>/smaps_rollup) of the Jupyter kernel and every
process below it: the fork server, the resource tracker and the ranks. A free Binder
session has about 2 GB and kills the kernel past it; the lab's target is 1.8 GiB per
notebook (tests/parlab/launch/test_launch_memory.py checks it with PARLAB_MEASURE_NOTEBOOKS=1, using
the same helper, tests/pss.py). Linux only.

    python -m bench.memory                        # every notebook
    python -m bench.memory notebooks/01_data_parallel.ipynb --cpus 0   # on one core
    python -m bench.memory --json PATH            # {"peak_gib": {notebook: GiB}, "rows": [...]}

--quick measures notebook 00 only (a smoke run). Prints a table, and which processes
held the memory at each notebook's peak.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from pss import GIB, measure_notebook  # noqa: E402  (tests/pss.py: the one way to measure)

TARGET_GIB = 1.8
MiB = 2 ** 20


def measure(notebooks: list[str], cpus: str | None) -> list[dict]:
    rows = []
    for nb in notebooks:
        r = measure_notebook(nb, cpus=cpus)
        roles = r.roles()
        rows.append({"notebook": os.path.basename(nb), "peak_gib": round(r.peak_gib, 3),
                     "peak_at_s": round(r.peak_at, 1), "processes": r.peak_processes,
                     "seconds": round(r.seconds, 1), "passed": r.ok, "cpus": cpus or "all",
                     "at_peak_mib": {k: [n, round(b / MiB)] for k, (n, b) in roles.items()}})
        if not r.ok:
            print(r.output[-3000:], file=sys.stderr)
        print(f"  measured {nb}: {r.peak_gib:.2f} GiB", file=sys.stderr, flush=True)
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"peak PSS of kernel + ranks under nbval (target <= {TARGET_GIB} GiB: a free Binder "
          f"session); cores: {rows[0]['cpus'] if rows else '-'}; load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| notebook | peak GiB | fits | processes at peak | where the peak memory was (MiB) "
          "| nbval | time |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        where = ", ".join(f"{role} {b}" + (f" ({n})" if n > 1 else "")
                          for role, (n, b) in sorted(r["at_peak_mib"].items(),
                                                     key=lambda kv: -kv[1][1]))
        print(f"| {r['notebook']} | {r['peak_gib']:.2f} | {'yes' if r['peak_gib'] <= TARGET_GIB else 'NO'} "
              f"| {r['processes']} | {where} | {'passed' if r['passed'] else 'FAILED'} "
              f"| {r['seconds']:.0f} s |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    ap.add_argument("--cpus", help="run on these cores only (taskset -c), e.g. 0")
    ap.add_argument("--quick", action="store_true", help="notebook 00 only")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    notebooks = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    if args.quick:
        notebooks = notebooks[:1]
    rows = measure([os.path.relpath(os.path.abspath(nb), ROOT) for nb in notebooks], args.cpus)
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peak_gib": {r["notebook"]: r["peak_gib"] for r in rows}, "rows": rows},
                      f, indent=1)
    if not all(r["passed"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()

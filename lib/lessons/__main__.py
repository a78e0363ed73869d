"""The lessons' demos from a terminal, locally or under torchrun.

    python -m lessons collectives --ranks 4     each collective, before/after per rank
    python -m lessons ring --ranks 4            the ring all-reduce, step by step
    python -m lessons bytes --sizes 2 4 8       bytes per rank: ring vs naive vs formula
    python -m lessons alpha-beta --ranks 4      latency/bandwidth fit, all-reduce vs model
    python -m lessons drill [--topic pp,cp] [--n 10] [--seed 1] [--lang zh]
                                                interview drills on stdin (in English or 中文)
    python -m lessons progress [--lang zh] [--html PATH]
                                                my record: exercises passed, drill, due reviews,
                                                my own measurements, CV lines
    python -m lessons read-copies [--out work/read]
                                                read-only pages of the sections 09 links to
    python -m lessons failover [--ranks 2 --steps 8 --kill-at 5 --every 2]   a rank killed
                                                under torchrun; restart, resume from DCP

The library's own commands (every strategy trained against one device, the planner, the
GPU report) are ``python -m parlab``. Under torchrun (``torchrun --nproc-per-node 4 -m
lessons collectives``) this process is one rank: the number of ranks is torchrun's, and
rank 0 prints.
"""

from __future__ import annotations

import os
import sys

from parlab.cli_flags import add_flags as add_library_flags
from parlab.cli_flags import cli_main, human_bytes, printer, world as _world


def cmd_collectives(args, out):
    """each collective (all-reduce, all-gather, reduce-scatter...): every rank before / after"""
    from .l00_collectives.experiments import collectives_table
    rows = collectives_table(_world(args))
    for op in dict.fromkeys(r["op"] for r in rows):
        out(f"\n{op}")
        for r in (r for r in rows if r["op"] == op):
            out(f"  rank {r['rank']}: {r['before']} -> {r['after']}")


def cmd_ring(args, out):
    """the ring all-reduce step by step: which chunk each rank sends, what each one holds"""
    from .l00_collectives.experiments import ring_frames
    n = _world(args)
    for f in ring_frames(n):
        label = "start" if f["phase"] == "start" else f"{f['phase']} step {f['step'] + 1}"
        out(f"\n{label}" + ("  " + ", ".join(f"{s}->{d}: chunk {c}" for s, d, c in f["sends"])
                           if f["sends"] else ""))
        for r, row in enumerate(f["state"]):
            cells = ["+".join(str(k) for k in range(n) if m >> k & 1) for m in row]
            out(f"  rank {r}: " + " | ".join(c.ljust(2 * n - 1) for c in cells))


def cmd_bytes(args, out):
    """bytes sent per rank in an all-reduce, traced: ring vs naive vs the 2(N-1)/N S formula"""
    from .l00_collectives.experiments import bytes_table
    sizes = [_world(args)] if "WORLD_SIZE" in os.environ else args.sizes
    rows = bytes_table(sizes, args.numel)
    out(f"all-reduce of S = {human_bytes(4 * args.numel)}; bytes sent per rank (traced) vs formula")
    out(f"{'n':>3} {'algorithm':<8} {'rank':>4} {'measured':>12} {'formula':>12}")
    for r in rows:
        out(f"{r['n']:>3} {r['algorithm']:<8} {r['rank']:>4} {human_bytes(r['measured']):>12} "
            f"{human_bytes(r['formula']):>12}")


def cmd_alpha_beta(args, out):
    """this machine's latency and bandwidth (alpha-beta fit), then all-reduce vs the model"""
    from .l00_collectives.experiments import all_reduce_vs_model, measure_alpha_beta, measure_gamma
    n = _world(args)
    pair = max(2, n) if "WORLD_SIZE" in os.environ else 2
    fits = {d: measure_alpha_beta(duplex=d, world_size=pair) for d in (False, True)}
    for d, ab in fits.items():
        out(f"{'exchange (both ways at once)' if d else 'ping-pong (one way)':<29} rank 0 <-> 1: "
            f"alpha = {ab['alpha'] * 1e6:.1f} us, bandwidth = {ab['bandwidth'] / 1e9:.2f} GB/s "
            f"(r2 = {ab['r2']:.3f})")
    out(f"\nall-reduce on {n} ranks: measured vs alpha-beta prediction")
    out(f"{'algorithm':<14} {'size':>10} {'median':>10} {'best':>10} {'predicted':>10}")
    for r in all_reduce_vs_model(n, fits[True], fits[False], measure_gamma()):
        out(f"{r['algorithm']:<14} {human_bytes(r['bytes']):>10} {r['measured'] * 1e6:>8.0f}us "
            f"{r['best'] * 1e6:>8.0f}us {r['predicted'] * 1e6:>8.0f}us")


def cmd_failover(args, out):
    """a real failure under torchrun: a rank is killed, the group restarts and resumes from DCP"""
    from .l08_checkpoints_and_failures.failover import failover
    if "WORLD_SIZE" in os.environ:  # it starts torchrun itself
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']}: failover starts its own "
                         "torchrun; run it as one process (python -m lessons failover)")
    from .l08_checkpoints_and_failures.failover import FailoverError
    try:
        r = failover(args.ranks, args.steps, args.kill_at, args.every, args.timeout, args.keep)
    except FailoverError as e:  # the worker's report, not this process's traceback
        sys.exit(f"error: {e}")
    except KeyboardInterrupt:  # failover ended torchrun and its workers and removed its files
        sys.exit("interrupted: the run's processes are ended and its files removed")
    out(f"torchrun --standalone --nproc-per-node {r['ranks']} --max-restarts 1: rank "
        f"{r['ranks'] - 1} SIGKILLed itself before step {r['kill_at']}; the group restarted "
        f"and resumed from the checkpoint of step {r['resumed_from']} (one every {r['every']})")
    out("losses:    " + " ".join(f"{x:.4f}" for x in r["losses"]))
    out("reference: " + " ".join(f"{x:.4f}" for x in r["reference"])
        + f"   (one device, uninterrupted; max |diff| {r['max_loss_diff']:.1e})")
    out(f"lost work: {r['redone_steps']} steps redone, {r['lost_seconds']:.1f} s from the kill "
        f"until step {r['kill_at']} again (restart about {r['restart_seconds']:.1f} s, "
        f"a step {r['step_seconds'] * 1e3:.0f} ms)")
    if args.keep:
        out(f"kept: {r['directory']}")


def cmd_drill(args, out):
    """interview drills: questions on stdin, answers and explanations computed by parlab.cost"""
    from .common.drills.quiz import parse_topics, run_quiz
    from .common.i18n import check_lang
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # a quiz for one person, not one per rank
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']}: the drill must run as one "
                         "process (python -m lessons drill, not torchrun)")
    lang = None if args.lang is None else check_lang(args.lang)  # None: PARLAB_LANG, or English
    run_quiz(parse_topics(args.topic), args.n, args.seed, out=out, lang=lang)


def cmd_progress(args, out):
    """my record, one page: exercises passed, drill by topic, due reviews, my measurements"""
    from .common import progress
    from .common.i18n import check_lang
    lang = None if args.lang is None else check_lang(args.lang)
    if args.html:
        out(f"written: {progress.write_page(args.html, lang)}")
    else:
        out(progress.text(lang))


def cmd_read_copies(args, out):
    """read-only pages of the sections notebook 09 links to (run.py lab writes them)"""
    from pathlib import Path
    from .common.readcopy import write_copies
    from .l09_the_whole_answer.sections import SECTIONS, title
    root = Path(__file__).resolve().parents[2]
    folder = Path(args.out) if args.out else root / "work" / "read"
    done = write_copies(SECTIONS, root / "notebooks", folder, label=title)
    out(f"{len(done)} of {len(SECTIONS)} section pages written to {folder}")


def add_flags(p, name: str) -> None:
    """The flags of the lessons' subcommand ``name`` on its parser ``p``."""
    if name == "drill":  # a quiz: no ranks start
        p.add_argument("--topic", default=None, help="topics, comma-separated (default: all)")
        p.add_argument("--n", type=int, default=10, help="number of questions")
        p.add_argument("--seed", type=int, default=0, help="the first question's seed")
        p.add_argument("--lang", default=None,
                       help="en or zh: the language it asks in (default: PARLAB_LANG, else en)")
        return
    if name == "read-copies":  # writes pages: no ranks start
        p.add_argument("--out", default=None,
                       help="the folder to write them to (default: work/read beside the notebooks)")
        return
    if name == "progress":  # reads the record: no ranks start
        p.add_argument("--lang", default=None, help="en or zh (default: PARLAB_LANG, else en)")
        p.add_argument("--html", default=None, help="write the page to this HTML file instead")
        return
    if name == "failover":  # starts torchrun itself (l08_checkpoints_and_failures.failover)
        p.add_argument("--ranks", type=int, default=2, help="torchrun --nproc-per-node")
        p.add_argument("--steps", type=int, default=8, help="optimizer steps")
        p.add_argument("--kill-at", type=int, default=5, help="the last rank dies before this step")
        p.add_argument("--every", type=int, default=2, help="a DCP checkpoint every N steps")
        p.add_argument("--timeout", type=float, default=None,
                       help="seconds before the run is ended (default: sized to the work)")
        p.add_argument("--keep", action="store_true",
                       help="keep the run's directory (checkpoints, logs) and print its path")
        return
    add_library_flags(p, name)  # --ranks
    if name == "bytes":
        p.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8],
                       help="numbers of ranks to compare, one all-reduce each (under "
                       "torchrun: WORLD_SIZE alone)")
        p.add_argument("--numel", type=int, default=1 << 18, help="float32 elements")


COMMANDS = [("collectives", cmd_collectives), ("ring", cmd_ring), ("bytes", cmd_bytes),
            ("alpha-beta", cmd_alpha_beta), ("drill", cmd_drill), ("progress", cmd_progress),
            ("read-copies", cmd_read_copies),
            ("failover", cmd_failover)]


def main(argv=None) -> None:
    cli_main("python -m lessons", __doc__, COMMANDS, add_flags, printer(), argv)


if __name__ == "__main__":
    sys.exit(main())

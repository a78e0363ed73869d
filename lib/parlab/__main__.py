"""Every demo from a terminal, locally or under torchrun.

    python -m parlab info                      what is here
    python -m parlab collectives --ranks 4     each collective, before/after per rank
    python -m parlab ring --ranks 4            the ring all-reduce, step by step
    python -m parlab bytes --sizes 2 4 8       bytes per rank: ring vs naive vs formula
    python -m parlab alpha-beta --ranks 4      latency/bandwidth fit, all-reduce vs model
    python -m parlab train --steps 50          the single-device reference model
    python -m parlab dp --ranks 4              data parallelism vs the single-device run
    python -m parlab zero --ranks 4 --stage 3  ZeRO: losses, bytes held, bytes moved
    python -m parlab pipeline --ranks 4 --micro-batches 8  a pipeline schedule: losses, bubble, memory
    python -m parlab tp --ranks 4 --sequence-parallel   tensor parallelism: losses, traffic
    python -m parlab cp --ranks 4 --layout zigzag [--attention ring|ulysses]   context
                                               parallelism: losses, bytes, work per rank
    python -m parlab 3d --ranks 8 --dp 2 --pp 2 --tp 2 [--sequence-parallel] [--zero-stage 1]
                                               3D parallelism (PTD-P): mesh, losses vs one device
    python -m parlab ep --ranks 4 --experts 8 --top-k 2 [--capacity-factor 1.25] [--ep 2]
                                               expert parallelism: losses, drops, bytes
    python -m parlab gpu-report [--quick] [--json PATH]   the formulas vs this GPU
    python -m parlab plan --model 70B --gpus 512 --gpu H100-80GB [--global-batch N]
                          [--seq-len N] [--top N]    3D layouts ranked by predicted time
    python -m parlab drill [--topic pp,cp] [--n 10] [--seed 1]   interview drills on stdin
    python -m parlab failover [--ranks 2 --steps 8 --kill-at 5 --every 2]   a rank killed
                                               under torchrun; restart, resume from DCP

Locally, ``--ranks N`` processes are started by ``parlab.launch``. Under torchrun
(``torchrun --nproc-per-node 4 -m parlab collectives``, or across nodes with
``--nnodes`` and a rendezvous endpoint) this process is one rank: the number of
ranks is torchrun's, and rank 0 prints.
"""

from __future__ import annotations

import argparse
import os
import sys

from .cli_flags import HelpWithDefaults, add_flags, check_flags, name_the_flag, world as _world


def _printer():
    quiet = os.environ.get("RANK", "0") != "0"
    return (lambda *a, **k: None) if quiet else print


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def cmd_info(args, out):
    """this machine: CPU cores, memory, torch, GPUs, and the backend that --ranks would use"""
    from . import hardware
    out(hardware.describe(_world(args)))


def cmd_collectives(args, out):
    """each collective (all-reduce, all-gather, reduce-scatter...): every rank before / after"""
    from .collectives.experiments import collectives_table
    rows = collectives_table(_world(args))
    for op in dict.fromkeys(r["op"] for r in rows):
        out(f"\n{op}")
        for r in (r for r in rows if r["op"] == op):
            out(f"  rank {r['rank']}: {r['before']} -> {r['after']}")


def cmd_ring(args, out):
    """the ring all-reduce step by step: which chunk each rank sends, what each one holds"""
    from .collectives.experiments import ring_frames
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
    from .collectives.experiments import bytes_table
    sizes = [_world(args)] if "WORLD_SIZE" in os.environ else args.sizes
    rows = bytes_table(sizes, args.numel)
    out(f"all-reduce of S = {_bytes(4 * args.numel)}; bytes sent per rank (traced) vs formula")
    out(f"{'n':>3} {'algorithm':<8} {'rank':>4} {'measured':>12} {'formula':>12}")
    for r in rows:
        out(f"{r['n']:>3} {r['algorithm']:<8} {r['rank']:>4} {_bytes(r['measured']):>12} "
            f"{_bytes(r['formula']):>12}")


def cmd_alpha_beta(args, out):
    """this machine's latency and bandwidth (alpha-beta fit), then all-reduce vs the model"""
    from .collectives.experiments import all_reduce_vs_model, measure_alpha_beta, measure_gamma
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
        out(f"{r['algorithm']:<14} {_bytes(r['bytes']):>10} {r['measured'] * 1e6:>8.0f}us "
            f"{r['best'] * 1e6:>8.0f}us {r['predicted'] * 1e6:>8.0f}us")


def cmd_train(args, out):
    """the single-device reference model every parallel run is checked against: its losses"""
    import time
    from .data import MarkovData
    from .model import GPTConfig, reference_train
    config = GPTConfig()
    t0 = time.perf_counter()
    res = reference_train(config, args.steps, args.batch_size, lr=args.lr)
    dt = time.perf_counter() - t0
    floor = MarkovData(config.vocab_size).entropy_rate()
    for i in range(0, args.steps, max(1, args.steps // 10)):
        out(f"step {i:>4}  loss {res['losses'][i]:.4f}")
    out(f"final loss {res['losses'][-1]:.4f}; floor (entropy rate of the data) {floor:.4f} "
        f"nats; {args.steps} steps in {dt:.2f} s")


def _check_against_reference(out, losses, steps, batch_size, lr):
    from .model import GPTConfig, reference_train
    ref = reference_train(GPTConfig(), steps, batch_size, lr=lr)["losses"]
    for i, (a, b) in enumerate(zip(losses, ref)):
        out(f"step {i:>3}  loss {a:.6f}  single device {b:.6f}  |diff| {abs(a - b):.1e}")


def cmd_dp(args, out):
    """data parallelism (naive, bucketed, torch DDP; optional compression) vs one device"""
    from .data_parallel import DPRun, run
    res = run(DPRun(steps=args.steps, batch_size=args.batch_size, lr=args.lr, variant=args.variant,
                    bucket_bytes=args.bucket_kib * 1024, micro_batches=args.micro_batches,
                    compression=args.compression), _world(args))
    _check_against_reference(out, res["losses"], args.steps, args.batch_size, args.lr)
    sent = [r["bytes_sent"] / args.steps for r in res["ranks"]]
    out(f"{args.variant} DP on {_world(args)} ranks; bytes sent per rank per step: "
        + ", ".join(_bytes(b) for b in sent))


def cmd_zero(args, out):
    """ZeRO stage 0-3 (or torch's ddp / fsdp2): losses, bytes held and moved per rank"""
    from . import cost, zero
    from .model import GPT, GPTConfig
    stage = int(args.stage) if args.stage.isdigit() else args.stage
    n = _world(args)
    res = zero.run(zero.ZeroRun(steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                                zero_stage=stage), n)
    _check_against_reference(out, res["losses"], args.steps, args.batch_size, args.lr)
    if isinstance(stage, int):
        psi = GPT(GPTConfig()).num_params()
        want = cost.zero_memory(psi, n, stage, param_bytes=4, grad_bytes=4, optimizer_bytes=8)
        out("rank 0 holds (measured / ZeRO formula, fp32 AdamW): " + ", ".join(
            f"{k} {_bytes(res['memory'][0][k])} / {_bytes(want[k])}"
            for k in ("params", "grads", "optimizer")))
        out(f"bytes sent per rank per step: {_bytes(res.ranks[0]['comm_bytes'][-1])} traced, "
            f"{_bytes(cost.zero_comm_volume(psi, n, stage, grad_bytes=4))} formula")


def cmd_pipeline(args, out):
    """a pipeline schedule on P = ranks stages: losses, measured vs predicted bubble, stash"""
    from . import cost
    from . import pipeline_parallel as pp
    p = _world(args)
    m = args.micro_batches
    batch = m if args.batch_size is None else args.batch_size
    res = pp.run(pp.PPRun(schedule=args.schedule, p=p, micro_batches=m, v=args.v,
                          steps=args.steps, batch_size=batch, lr=args.lr, compute=args.compute), p)
    if args.compute == "real":
        _check_against_reference(out, res.losses, args.steps, batch, args.lr)
    sim = pp.simulate(args.schedule, p, m, args.v)
    out(f"{args.schedule}, P={p}, M={m}, v={args.v}: bubble (idle / total) measured "
        f"{res.bubble_fraction:.1%}, simulated {sim.bubble_fraction:.1%}, "
        f"(P-1)/(vM+P-1) = {cost.bubble_fraction(p, m, args.v):.1%}")
    out("micro-batches of activations held at the peak, per rank: measured "
        f"{res.stash_peak}, simulated {sim.peak_activations}")
    if args.compute == "real":
        out("(real compute: the stages are not equal -- embeddings, head and loss, messages -- "
            "and more ranks than cores wait for a core; --compute emulated shows the schedule alone)")


def cmd_tp(args, out):
    """tensor parallelism (Megatron; --sequence-parallel) vs one device; collectives per layer"""
    from . import cost
    from . import tensor_parallel as tp
    t = _world(args)
    run = tp.TPRun(steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                   sequence_parallel=args.sequence_parallel)
    res = tp.run(run, t)
    _check_against_reference(out, res.losses, args.steps, args.batch_size, args.lr)
    rows = {}  # (direction, op) -> [count, bytes sent], over all steps
    for c in res.ranks[0]["collectives"]:
        if c["layer"] == "blocks.0" or (c["layer"] or "").startswith("blocks.0."):
            row = rows.setdefault((c["direction"], c["op"]), [0, 0])
            row[0], row[1] = row[0] + 1, row[1] + c["bytes_sent"]
    cfg, steps = run.config, args.steps
    want = cost.tp_comm_per_layer(args.batch_size, cfg.seq_len, cfg.d_model, t,
                                  args.sequence_parallel, bytes_per_value=4)
    out(f"tensor parallelism on {t} ranks, sequence parallelism "
        f"{'on' if args.sequence_parallel else 'off'}; one transformer layer (blocks.0) per "
        "step on rank 0, traced (bytes: what a ring moves) | formula, cost.tp_comm_per_layer:")
    sites = cost.tensor_parallel.tp_comm_sites(t, args.sequence_parallel)
    order = {"forward": 0, "backward": 1}
    for (direction, op), (n, sent) in sorted(rows.items(), key=lambda r: (order.get(r[0][0], 2),
                                                                          r[0])):
        # the formula's count, its bytes (each a ring collective of one activation,
        # cost.collective_bytes) and the operators that issue it (cost's tp_comm_sites);
        # "none" where the formula has no such row
        k = want[direction].get(op, 0) if direction in order else 0
        formula = (f"{k} x  {_bytes(k * cost.collective_bytes(op, want['message_bytes'], t)):>10}"
                   f"  {sites[direction][op]}" if k else "none")
        out(f"  {direction:<8} {op:<15} {n / steps:>4g} x  {_bytes(sent / steps):>10} | {formula}")
    n, sent = sum(r[0] for r in rows.values()) / steps, sum(r[1] for r in rows.values()) / steps
    out(f"  {'total':<24} {n:>4g} x  {_bytes(sent):>10} | {want['collectives']} x  "
        f"{_bytes(want['bytes']):>10}  {10 if args.sequence_parallel else 8} (t-1)/t M, "
        f"M = {_bytes(want['message_bytes'])} (one activation)")


def cmd_cp(args, out):
    """context parallelism (ring attention or Ulysses; contiguous or zigzag) vs one device"""
    from . import context_parallel as cp
    from . import cost
    n = _world(args)
    run = cp.CPRun(steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                   layout=args.layout, attention=args.attention)
    res = cp.run(run, n)
    _check_against_reference(out, res.losses, args.steps, args.batch_size, args.lr)
    cfg = run.config
    want = cost.cp_comm_per_layer(args.batch_size, cfg.seq_len, cfg.d_model, n, args.attention,
                                  bytes_per_value=4)
    op = "p2p" if args.attention == "ring" else "all_to_all"
    out(f"\n{args.attention} attention on {n} ranks, {args.layout} layout; one layer "
        f"(blocks.0.attn), step 0, bytes sent per rank ({'exact' if op == 'p2p' else 'modelled'})"
        " | cost.cp_comm_per_layer:")
    for rank in res.ranks:
        lc = rank["layer_comm"]
        out(f"  rank {rank['rank']}: forward {lc['forward']['messages']} x {op} "
            f"{_bytes(lc['forward']['bytes'])}, backward {lc['backward']['messages']} x "
            f"{_bytes(lc['backward']['bytes'])}, total {_bytes(lc['bytes'])} | "
            f"{want['messages']} x, {_bytes(want['bytes'])}")
    sp = cost.cp_comm_per_layer(args.batch_size, cfg.seq_len, cfg.d_model, n, "megatron_sp",
                                bytes_per_value=4)
    out(f"  (Megatron sequence parallelism at t={n} would send {_bytes(sp['bytes'])} per layer)")
    block = cfg.n_heads * (cfg.seq_len // n) ** 2
    work = [r["attention_work"]["forward"] for r in res.ranks]
    out(f"\nattention scores computed per rank, one layer's forward, per sequence, in blocks "
        f"of (s/cp)^2 x {cfg.n_heads} heads = {block}:")
    if args.attention == "ring":
        f = cost.causal_work_per_rank(n, args.layout)
        for r, w in enumerate(work):
            out(f"  rank {r}: {w} = {w / block:g} blocks | cost.causal_work_per_rank {f['blocks'][r]:g}")
        out(f"  imbalance (max / mean): measured {max(work) / (sum(work) / n):.2f}, "
            f"predicted {f['imbalance']:.2f}")
    else:
        for r, w in enumerate(work):
            out(f"  rank {r}: {w} = {w / block:g} blocks ({cfg.n_heads // n} of {cfg.n_heads} "
                "heads x the whole s x s, the causal triangle masked, not skipped)")


def cmd_3d(args, out):
    """N-D parallelism (dp x pp x cp x tp, ZeRO 0-3 across replicas) vs one device"""
    from . import parallel_3d as p3
    n = _world(args)
    batch = args.batch_size or args.dp * args.micro_batches
    run = p3.Run3D(steps=args.steps, batch_size=batch, lr=args.lr, dp=args.dp, pp=args.pp,
                   cp=args.cp, tp=args.tp, micro_batches=args.micro_batches,
                   schedule=args.schedule, zero_stage=args.zero_stage,
                   sequence_parallel=args.sequence_parallel, compute=args.compute)
    run.check(n)
    out(p3.Mesh(dp=args.dp, pp=args.pp, cp=args.cp, tp=args.tp).describe())
    res = p3.run(run, n)
    if args.compute == "real":
        _check_against_reference(out, res.losses, args.steps, batch, args.lr)
    out(f"{args.schedule}, {args.micro_batches} micro-batches per replica, ZeRO stage "
        f"{args.zero_stage}, sequence parallelism {'on' if args.sequence_parallel else 'off'}, "
        f"{args.compute} compute; step times (s): "
        + ", ".join(f"{t:.3f}" for t in res.step_times))


def cmd_ep(args, out):
    """expert parallelism (MoE) vs one device: tokens per expert, drops, all-to-all bytes"""
    from .expert_parallel.report import ep_report
    ep_report(_world(args), args.experts, args.top_k, args.capacity_factor, args.ep,
              args.steps, args.batch_size, args.lr, out)


def cmd_gpu_report(args, out):
    """the lab's formulas vs this GPU: GEMM TFLOP/s, MFU, activation bytes, NCCL (skips without one)"""
    from .gpu_report import run_cli
    code = run_cli(args, out)
    if code:
        sys.exit(code)


def cmd_plan(args, out):
    """3D-parallel layouts ranked by predicted step time (parlab.planner), and the infeasible"""
    from .planner import plan
    from .validate import check_int
    top = check_int("top", args.top)
    p = plan(args.model, args.gpus, args.gpu, args.global_batch, seq_len=args.seq_len)
    out(f"{p.model['name']} ({p.model['n_layers']} layers, d_model {p.model['d_model']}) on "
        f"{p.n_gpus} x {p.gpu}, global batch {p.global_batch} x {p.seq_len} tokens")
    out(f"\nranked by predicted step time ({len(p.ranked)} layouts fit; top {top}):")
    for i, c in enumerate(p.ranked[:top], 1):
        e = c.estimate
        out(f"{i:>3}. {c.label}: {c.step_time:.2f} s/step, MFU {e.mfu:.0%}, "
            f"{e.memory_per_gpu.total / 1e9:.1f} GB/GPU")
        for r in c.reasons:
            out(f"       - {r}")
    out(f"\ninfeasible ({len(p.infeasible)}):")
    for i in p.infeasible:
        out(f"     {i.label}: " + "; ".join(i.reasons))


def cmd_failover(args, out):
    """a real failure under torchrun: a rank is killed, the group restarts and resumes from DCP"""
    from .reliability.failover import failover
    if "WORLD_SIZE" in os.environ:  # it starts torchrun itself
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']}: failover starts its own "
                         "torchrun; run it as one process (python -m parlab failover)")
    r = failover(args.ranks, args.steps, args.kill_at, args.every)
    out(f"torchrun --standalone --nproc-per-node {r['ranks']} --max-restarts 1: rank "
        f"{r['ranks'] - 1} SIGKILLed itself before step {r['kill_at']}; the group restarted "
        f"and resumed from the checkpoint of step {r['resumed_from']} (one every {r['every']})")
    out("losses:    " + " ".join(f"{x:.4f}" for x in r["losses"]))
    out("reference: " + " ".join(f"{x:.4f}" for x in r["reference"])
        + f"   (one device, uninterrupted; max |diff| {r['max_loss_diff']:.1e})")
    out(f"lost work: {r['redone_steps']} steps redone, {r['lost_seconds']:.1f} s from the kill "
        f"until step {r['kill_at']} again (restart about {r['restart_seconds']:.1f} s, "
        f"a step {r['step_seconds'] * 1e3:.0f} ms)")


def cmd_drill(args, out):
    """interview drills: questions on stdin, answers and explanations computed by parlab.cost"""
    from .drills.quiz import parse_topics, run_quiz
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # a quiz for one person, not one per rank
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']}: the drill must run as one "
                         "process (python -m parlab drill, not torchrun)")
    run_quiz(parse_topics(args.topic), args.n, args.seed, out=out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m parlab", description=__doc__.split("\n\n")[0],
                                 epilog="python -m parlab <command> --help: the command's flags")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, fn in [("info", cmd_info), ("collectives", cmd_collectives), ("ring", cmd_ring),
                     ("bytes", cmd_bytes), ("alpha-beta", cmd_alpha_beta), ("train", cmd_train),
                     ("dp", cmd_dp), ("zero", cmd_zero), ("pipeline", cmd_pipeline),
                     ("tp", cmd_tp), ("cp", cmd_cp), ("3d", cmd_3d), ("ep", cmd_ep),
                     ("gpu-report", cmd_gpu_report),
                     ("plan", cmd_plan), ("drill", cmd_drill), ("failover", cmd_failover)]:
        # the one line of cmd_<name>'s docstring: the command's line in --help and the
        # description atop its own --help (tests/test_cli_help.py holds every command to
        # one; a stand-in without one, as tests put there, gets none)
        about = (fn.__doc__ or "").strip()
        p = sub.add_parser(name, help=about or None, formatter_class=HelpWithDefaults,
                           description=about[:1].upper() + about[1:] + "." if about else None)
        p.set_defaults(fn=fn)
        add_flags(p, name)
    args = ap.parse_args(argv)
    try:
        check_flags(args)  # every flag value, before any rank starts or anything is measured
        args.fn(args, _printer())
    except ValueError as e:
        sys.exit(f"error: {name_the_flag(e, args, argv)}")


if __name__ == "__main__":
    main()

"""The library from a terminal, locally or under torchrun: every strategy trained and
checked against one device, the planner, and the report of a real GPU.

    python -m parlab info                      what is here
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

The lessons' own demos (each collective, the ring step by step, the interview drills, a
failure under torchrun) are ``python -m lessons``.

Locally, ``--ranks N`` processes are started by ``parlab.launch``. Under torchrun
(``torchrun --nproc-per-node 4 -m parlab dp``, or across nodes with
``--nnodes`` and a rendezvous endpoint) this process is one rank: the number of
ranks is torchrun's, and rank 0 prints.
"""

from __future__ import annotations

import sys

from .cli_flags import add_flags, cli_main, human_bytes, printer, world as _world


def cmd_info(args, out):
    """this machine: CPU cores, memory, torch, GPUs, and the backend that --ranks would use"""
    from . import hardware
    out(hardware.describe(_world(args)))


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
        + ", ".join(human_bytes(b) for b in sent))


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
            f"{k} {human_bytes(res['memory'][0][k])} / {human_bytes(want[k])}"
            for k in ("params", "grads", "optimizer")))
        out(f"bytes sent per rank per step: {human_bytes(res.ranks[0]['comm_bytes'][-1])} traced, "
            f"{human_bytes(cost.zero_comm_volume(psi, n, stage, grad_bytes=4))} formula")


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
    cfg = run.config
    steps = args.steps
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
        formula = (f"{k} x  {human_bytes(k * cost.collective_bytes(op, want['message_bytes'], t)):>10}"
                   f"  {sites[direction][op]}" if k else "none")
        out(f"  {direction:<8} {op:<15} {n / steps:>4g} x  {human_bytes(sent / steps):>10} | {formula}")
    n = sum(r[0] for r in rows.values()) / steps
    sent = sum(r[1] for r in rows.values()) / steps
    out(f"  {'total':<24} {n:>4g} x  {human_bytes(sent):>10} | {want['collectives']} x  "
        f"{human_bytes(want['bytes']):>10}  {10 if args.sequence_parallel else 8} (t-1)/t M, "
        f"M = {human_bytes(want['message_bytes'])} (one activation)")


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
            f"{human_bytes(lc['forward']['bytes'])}, backward {lc['backward']['messages']} x "
            f"{human_bytes(lc['backward']['bytes'])}, total {human_bytes(lc['bytes'])} | "
            f"{want['messages']} x, {human_bytes(want['bytes'])}")
    sp = cost.cp_comm_per_layer(args.batch_size, cfg.seq_len, cfg.d_model, n, "megatron_sp",
                                bytes_per_value=4)
    out(f"  (Megatron sequence parallelism at t={n} would send {human_bytes(sp['bytes'])} per layer)")
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
    from . import parallel_nd as p3
    n = _world(args)
    batch = args.batch_size or args.dp * args.micro_batches
    run = p3.NDRun(steps=args.steps, batch_size=batch, lr=args.lr, dp=args.dp, pp=args.pp,
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


COMMANDS = [("info", cmd_info), ("train", cmd_train), ("dp", cmd_dp), ("zero", cmd_zero),
            ("pipeline", cmd_pipeline), ("tp", cmd_tp), ("cp", cmd_cp), ("3d", cmd_3d),
            ("ep", cmd_ep), ("gpu-report", cmd_gpu_report), ("plan", cmd_plan)]


def main(argv=None) -> None:
    cli_main("python -m parlab", __doc__, COMMANDS, add_flags, printer(), argv)


if __name__ == "__main__":
    main()

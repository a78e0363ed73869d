"""Notebook 06's experiments: pure functions over ``parallel_nd.run``, ``mesh.Mesh``,
``parlab.cost`` and ``parlab.planner``, returning plain data that ``figures`` draws and
``widgets`` shows. The exercises' checkers are in ``lessons.l06_3d_parallel.exercises``.

Measured vs predicted (``emulated_sweep``, ``predict_emulated``): every dp x pp x tp
layout of 8 ranks trains the small GPT with emulated compute (each F/B sleeps its share
of ``t_fwd + t_bwd``; TP collectives, pipeline messages and the DP gradient all-reduce
are real gloo traffic). The prediction composes the planner's formulas -- the bubble
(``cost.bubble_ratio``) over a stage slot of compute + TP collectives
(``cost.tp_comm_per_layer`` timed by ``cost.collective_time``), the stage-to-stage
messages (``cost.pipeline_p2p_time``) and the gradient all-reduce (``cost.dp_grad_sync``)
-- with the sleep times in place of ``cost.layer_time`` and this machine's alpha-beta
per group size, measured by ``comm_probe`` (never fitted to the step times).
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import torch
import torch.distributed as dist

from parlab import cost, hardware, planner
from parlab.mesh import Mesh
from parlab.model import GPT, GPTConfig, llama_config, max_differences, reference_train
from parlab.parallel_nd.runner import NDRun, run

SMALL = GPTConfig(vocab_size=64, seq_len=16, d_model=64, n_heads=8, n_layers=8)
BATCH, MICRO = 32, 4           # the sweep's global batch and micro-batches per replica
T_FWD, T_BWD = 0.2, 0.4        # emulated seconds: the whole batch through the whole model
FP32 = 4


# --- 1. the mesh ------------------------------------------------------------------------

def mesh_layout(dp: int, pp: int, tp: int, gpus_per_node: int | None = None) -> list[dict]:
    """``Mesh(dp, pp, tp).layout()`` with each rank's node (rank // gpus_per_node)."""
    rows = Mesh(dp=dp, pp=pp, tp=tp).layout()
    for r in rows:
        r["node"] = r["rank"] // gpus_per_node if gpus_per_node else 0
    return rows


def factorizations(world: int = 8, config: GPTConfig = SMALL, batch_size: int = BATCH,
                   micro_batches: int = MICRO) -> list[tuple[int, int, int]]:
    """Every (dp, pp, tp) with dp pp tp = world that ``NDRun.check`` accepts."""
    out = []
    for tp in range(1, world + 1):
        for pp in range(1, world // tp + 1):
            if world % (tp * pp):
                continue
            dp = world // (tp * pp)
            try:
                NDRun(config=config, batch_size=batch_size, dp=dp, pp=pp, tp=tp,
                      micro_batches=micro_batches).check(world)
            except ValueError:
                continue
            out.append((dp, pp, tp))
    return sorted(out, reverse=True)


# --- 2. correct first: a 3D run equals one device ----------------------------------------

def reference_check(layouts=((2, 2, 2),), config: GPTConfig = SMALL, steps: int = 3,
                    batch_size: int = 16, micro_batches: int = 4, **kw) -> list[dict]:
    """Each (dp, pp, tp) trained for real, against ``reference_train``: largest |difference|
    of losses, last gradients and final parameters."""
    ref = reference_train(config, steps, batch_size)
    rows = []
    for dp, pp, tp in layouts:
        r = run(NDRun(config=config, steps=steps, batch_size=batch_size, dp=dp, pp=pp, tp=tp,
                      micro_batches=micro_batches, **kw), dp * pp * tp)
        rows.append(dict(dp=dp, pp=pp, tp=tp, **max_differences(r, ref),
                         coords=[x["coords"] for x in r.ranks]))
    return rows


# Today's layouts, composed from the same parts on 8 ranks (the test matrix's smallest cases).
TINY = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
TODAY = {
    "dp2·cp2·tp2, ZeRO-3 (Llama-style model)": (
        llama_config(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4),
        dict(dp=2, pp=1, cp=2, tp=2, zero_stage=3, micro_batches=2)),
    "pp2·cp2·tp2, ZeRO-1": (TINY, dict(dp=1, pp=2, cp=2, tp=2, zero_stage=1)),
    "dp4·tp2, experts over ep=2 (MoE with capacity), ZeRO-1": (
        GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4, n_experts=4,
                  top_k=2, capacity_factor=1.25),
        dict(dp=4, pp=1, tp=2, ep=2, zero_stage=1, micro_batches=1)),
}


def todays_layouts(layouts: dict = TODAY, steps: int = 3, batch_size: int = 16) -> list[dict]:
    """Each named (config, NDRun fields) trained on 8 ranks against ``reference_train``:
    the largest |difference| of losses, last gradients and final parameters."""
    rows = []
    for name, (config, kw) in layouts.items():
        r = run(NDRun(**{"config": config, "steps": steps, "batch_size": batch_size,
                         "micro_batches": 4, **kw}), 8)
        rows.append(dict(layout=name, **max_differences(r, reference_train(config, steps, batch_size))))
    return rows


# --- 3. this machine's communication constants ------------------------------------------

def _timed(fn, repeats: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)  # the best: what the link costs when nothing else gets in the way


def comm_probe_worker(sizes: list[int], groups: tuple, repeats: int) -> dict:
    """On every rank: for each group size g, the world cut into groups of g consecutive
    ranks (a TP axis), all groups at once; best time of one all-reduce per size."""
    torch.set_num_threads(1)
    out = {}
    for g in groups:
        mesh = Mesh(dp=dist.get_world_size() // g, tp=g).init()
        for n in sizes:
            x = torch.zeros(n // FP32)
            out[(g, n)] = _timed(lambda: dist.all_reduce(x, group=mesh.group("tp")), repeats)
    return out


def comm_probe(world: int = 8, sizes=(4096, 1 << 19), groups=(2, 4, 8), repeats: int = 6) -> dict:
    """This machine's alpha-beta per group size g, with all ``world`` ranks alive (as in the
    sweep): an all-reduce of n bytes on g ranks, t = 2(g-1) (alpha + n / (g bandwidth)),
    fitted by ``cost.fit_alpha_beta`` on the slowest rank's best times. Returns
    {g: {"alpha", "bandwidth", "times": {n: t}, "fitted"}} and the machine's load (when noise
    hides the size effect, alpha takes all the time and bandwidth is 1e12: "fitted" False)."""
    from parlab.launch import launch
    res = launch(comm_probe_worker, world, list(sizes), tuple(groups), repeats)
    out = {}
    for g in groups:
        times = {n: max(r[(g, n)] for r in res) for n in sizes}
        steps = cost.collective_steps("all_reduce", g)
        try:
            fit = cost.fit_alpha_beta([n / g for n in sizes], [times[n] / steps for n in sizes])
            out[g] = dict(alpha=fit.alpha, bandwidth=fit.bandwidth, times=times, fitted=True)
        except ValueError:  # noise hid the size effect: all latency, bandwidth unmeasurable
            out[g] = dict(alpha=min(times.values()) / steps, bandwidth=1e12, times=times,
                          fitted=False)
    return dict(groups=out, load=hardware.load())


def _link(probe: dict, g: int) -> tuple[float, float]:
    x = probe["groups"][min(max(g, 2), max(probe["groups"]))]
    return x["alpha"], x["bandwidth"]


# --- 4. measured vs predicted step times ----------------------------------------------

def predict_emulated(dp: int, pp: int, tp: int, probe: dict, config: GPTConfig = SMALL,
                     batch_size: int = BATCH, micro_batches: int = MICRO,
                     t_fwd: float = T_FWD, t_bwd: float = T_BWD) -> dict:
    """The planner's composition for one emulated layout on this machine (seconds):
    stage slot = F + B sleep of one micro-batch + its TP collectives; step = m slots
    x (1 + bubble_ratio) + p2p + exposed gradient all-reduce (after the flush)."""
    c, m = config, micro_batches
    rows = batch_size // (dp * m)
    op = (t_fwd + t_bwd) / (dp * m * pp * tp)
    layers = c.n_layers // pp
    a_t, bw_t = _link(probe, tp)
    comm = cost.tp_comm_per_layer(rows, c.seq_len, c.d_model, tp, bytes_per_value=FP32)
    tp1 = 0.0 if tp == 1 else layers * sum(
        n * cost.collective_time(o, comm["message_bytes"], tp, a_t, bw_t)
        for d in ("forward", "backward") for o, n in comm[d].items())
    slot = op + tp1
    bubble = cost.bubble_ratio(pp, m) * m * slot if pp > 1 else 0.0
    a_p, bw_p = _link(probe, 2)
    p2p = cost.pipeline_p2p_time(rows, c.seq_len, c.d_model, pp, m, a_p, bw_p,
                                 scatter_gather=False, bytes_per_value=FP32)
    a_d, bw_d = _link(probe, dp)
    params = stage_params(c, pp, tp)
    dp_s = cost.dp_grad_sync(params, dp, a_d, bw_d, 0, FP32, 0.0, False)["exposed_s"] \
        if dp > 1 else 0.0
    total = m * slot + bubble + p2p + dp_s
    return dict(compute=m * op, tp_comm=m * tp1, bubble=bubble, p2p=p2p, dp_comm=dp_s,
                total=total)


def stage_params(config: GPTConfig, pp: int, tp: int) -> int:
    """Parameters one rank of the first stage holds (its blocks and the embeddings,
    sliced by tp): counted on the reference model."""
    per_block = sum(p.numel() for n, p in GPT(config).named_parameters()
                    if n.startswith("blocks.0."))
    emb = sum(p.numel() for n, p in GPT(config).named_parameters() if n.startswith(("wte", "wpe")))
    return round((config.n_layers // pp * per_block + emb) / tp)


def spearman(xs, ys) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(list(xs)), ranks(list(ys))
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else 1.0


def _synced(result, step: int) -> float:
    """Seconds of one step's pipeline + gradient sync across all ranks (optimizer left out)."""
    ends = [x["step_times"][step] - x["phases"][step]["optimizer"] for x in result.ranks]
    # every rank starts the step at one barrier: its pipeline+sync is its step minus optimizer
    return max(ends)


def emulated_sweep(layouts=None, probe: dict | None = None, config: GPTConfig = SMALL,
                   batch_size: int = BATCH, micro_batches: int = MICRO, steps: int = 3,
                   t_fwd: float = T_FWD, t_bwd: float = T_BWD, world: int = 8) -> dict:
    """Each layout of ``world`` ranks run with emulated compute for ``steps`` steps (the
    first dropped). A step's time here is pipeline + gradient sync, from the first rank's
    start to the last rank's end: the optimizer step is real AdamW compute (8 ranks on
    this machine's cores), which the emulation does not replace and the model leaves out.
    ``measured``: the best step (other programs can only add time), ``median`` too;
    beside ``predict_emulated``. ``spearman``: rank agreement of
    measured and predicted; ``load``: the machine."""
    layouts = layouts or factorizations(world, config, batch_size, micro_batches)
    probe = probe or comm_probe(world)
    rows = []
    for dp, pp, tp in layouts:
        r = run(NDRun(config=config, steps=steps, batch_size=batch_size, dp=dp, pp=pp, tp=tp,
                      micro_batches=micro_batches, compute="emulated", t_fwd=t_fwd,
                      t_bwd=t_bwd), world)
        times = [_synced(r, s) for s in range(1, steps)]
        pred = predict_emulated(dp, pp, tp, probe, config, batch_size, micro_batches, t_fwd, t_bwd)
        rows.append(dict(dp=dp, pp=pp, tp=tp, label=f"{dp}×{pp}×{tp}", measured=min(times),
                         median=statistics.median(times), predicted=pred["total"], parts=pred))
    rho = spearman([r["measured"] for r in rows], [r["predicted"] for r in rows])
    return dict(rows=rows, spearman=rho, probe=probe, ideal=(t_fwd + t_bwd) / world,
                load=hardware.load())


# --- 5. GPU scale: the planner against published runs, plans --------------------------------

def table1() -> list[dict]:
    """``planner.narayanan_table1()``: Narayanan et al. 2021's Table 1, paper vs predicted."""
    return planner.narayanan_table1()


def validation_rows() -> list[dict]:
    """Every published run (``planner.RUNS``) as plain numbers, every one in the score:
    name, group, metric, published, predicted, error, within (15%), in_sample, known_miss
    (its explanation or ""), error_causal (the error if the source counted the attention
    square causally), searched (the unknown knobs searched, or ()), spread (the lowest and
    highest error over the variants that fit), fits (in the memory model)."""
    keys = ("name", "group", "metric", "published", "predicted", "error", "within",
            "in_sample", "known_miss", "error_causal", "searched", "spread")
    return [dict({k: r[k] for k in keys}, fits=r["memory"]["fits"]) for r in planner.validate()]


def convention_example() -> dict:
    """Llama 3's 128k row (Dubey et al. 2024, Table 4), one predicted step counted two
    ways: its MFU with the attention square full (PaLM's count) and causal, against the
    published MFU, whose count the source does not state."""
    r = next(r for r in planner.validate() if "128k" in r["name"])
    e = r["estimate"]
    full, causal = (e.flops_as("model", a)["mfu"] for a in ("full", "causal"))
    return dict(name=r["name"], published=r["published"], full=full, causal=causal,
                error_full=full / r["published"] - 1, error_causal=causal / r["published"] - 1,
                step_s=e.step_time.total)


# Chowdhery et al. 2022 (PaLM), Table 3: Megatron-Turing NLG 530B trained at 30.2% MFU on
# 2240 A100s, the run Smith et al. 2022 (§2.4) report at 126 teraFLOP/s per GPU
PALM_MTNLG_MFU = 0.302


def two_sources_example() -> dict:
    """One run, two published figures that differ only by convention: MT-NLG's own
    teraFLOP/s per GPU (Smith et al. 2022, §2.4: hardware FLOPs, the forward that full
    recomputation repeats included) as a share of the A100's peak, and PaLM's Table 3 MFU of
    the same training (model FLOPs). ``converted``: MT-NLG's figure with the repeated
    forward taken out, by the planner's own ratio of model to hardware FLOPs for that layout."""
    r = next(r for r in planner.validate() if r["name"] == "MT-NLG 530B 2240 GPUs")
    e = r["estimate"]
    peak = e.peak_tflops
    ratio = (e.flops_as("model", "full")["flops_per_token"]
             / e.flops_as("hardware", "full")["flops_per_token"])
    return dict(name=r["name"], gpus=e.n_gpus,
                tflops=r["published"], peak=peak, hfu=r["published"] / peak,
                model_share=ratio, converted=r["published"] * ratio / peak, palm=PALM_MTNLG_MFU)


CLUSTER_GPUS = {"A100-80GB": "A100-SXM4-80GB", "H100-80GB": "H100-SXM5-80GB",
                "A100-40GB": "A100-SXM4-40GB", "H200-141GB": "H200-SXM-141GB",
                "V100-32GB": "V100-SXM2-32GB", "H800-80GB": "H800-SXM5-80GB", "B200": "B200",
                "GB200": "GB200"}
INTERCONNECTS = ("IB-HDR", "IB-NDR", "RoCE-400", "IB-EDR", "100GbE", "25GbE")


def plan_view(model: str = "13B", gpu: str = "A100-80GB", gpus_per_node: int = 8,
              nodes: int = 2, interconnect: str = "IB-HDR", global_batch: int | None = None,
              seq_len: int | None = None, top: int = 8, nics_per_node: int | None = None) -> dict:
    """What the widget shows: ``planner.plan`` for the cluster, as plain rows -- ranked
    candidates (label, step time and its parts over the ideal, memory parts, error band,
    reasons), infeasible layouts with why, and the best one's mesh layout; or ``error``."""
    try:
        p = planner.plan(model, gpus_per_node * nodes, gpu, global_batch, seq_len=seq_len,
                         gpus_per_node=gpus_per_node, inter_link=interconnect,
                         nics_per_node=nics_per_node)
    except ValueError as e:  # named as this function's argument (the planner's inter_link)
        return dict(error=str(e).replace("inter_link=", "interconnect="))
    rows = [candidate_row(c) for c in p.ranked[:top]]
    best = p.best
    return dict(model=p.model["name"], n_gpus=p.n_gpus, gpu=p.gpu, global_batch=p.global_batch,
                seq_len=p.seq_len, ranked=rows, n_ranked=len(p.ranked),
                infeasible=[dict(label=i.label, reasons=list(i.reasons)) for i in p.infeasible],
                mesh=mesh_layout(best.dp, best.pp, best.tp, gpus_per_node) if best else None,
                best=rows[0] if rows else None)


def candidate_row(c) -> dict:
    """One ``planner.Candidate`` as plain numbers (seconds; ``ideal``: the model FLOPs at
    peak, so total / ideal - 1 is the overhead the parts add)."""
    e, t, mem = c.estimate, c.estimate.step_time, c.estimate.memory_per_gpu
    return dict(label=c.label, dp=c.dp, tp=c.tp, pp=c.pp, cp=c.cp, ep=c.ep, v=c.v,
                micro_batch=c.micro_batch, zero_stage=c.zero_stage, recompute=c.recompute,
                sp=c.sequence_parallel, step_s=t.total, ideal=t.ideal,
                compute=t.compute, communication=t.communication, bubble=t.bubble,
                mfu=e.mfu, tflops=e.tflops_per_gpu, band=c.band,
                params=mem.params, grads=mem.grads, optimizer=mem.optimizer,
                activations=mem.activations, capacity=mem.capacity, reasons=list(c.reasons))


def rule_of_thumb(plan_result, gpus_per_node: int = 8) -> dict:
    """Where the seed's order lands in a plan: TP = a node (largest ranked tp <=
    gpus_per_node), then the smallest PP that fits without ZeRO-3 (DP, not sharded weights,
    fills the rest), DP the rest; its rank and its step time against the best."""
    ranked = list(plan_result.ranked)
    mine = [c for c in ranked if c.tp <= gpus_per_node and c.zero_stage < 3 and c.cp == 1]
    if not mine:
        return dict(rank=None)
    tp = max(c.tp for c in mine)
    pick = min((c for c in mine if c.tp == tp), key=lambda c: c.pp)
    k = ranked.index(pick)
    return dict(rank=k + 1, of=len(ranked), label=pick.label, tp=pick.tp, pp=pick.pp,
                dp=pick.dp, slower=pick.step_time / ranked[0].step_time - 1,
                best=ranked[0].label)


def four_d_example() -> dict:
    """Llama 3 405B's long-context stage (Dubey et al. 2024, Table 4: TP 8 x CP 16 x PP 16
    x DP 8 on 16,384 H100s, 128k tokens), the planner's prediction for that layout, and
    what ``plan`` picks for the same job on the same cluster (its own degrees)."""
    run = next(r for r in planner.RUNS if "CP16" in r.name)
    e = planner.predict_run(run)
    model = planner.resolve_model(run.model)
    p = planner.plan(model, run.n_gpus, run.gpu, run.global_batch, tps=(4, 8, 16),
                     cps=(4, 8, 16, 32), pps=(8, 16), cp_kind="allgather",
                     ends_as_layers=True, nics_per_node=8, inter_link="RoCE-400")
    same = next((k + 1 for k, c in enumerate(p.ranked)
                 if (c.tp, c.cp, c.pp) == (e.tp, e.cp, e.pp)), None)
    return dict(run=run, estimate=e, published=run.value, plan=p, rank_of_published=same)


# --- 7. the interview corner's numbers -----------------------------------------------------

_T2 = {r.n_gpus: r for r in planner.RUNS if r.group == "Narayanan 2021 Table 2 (PTD-P)"
       and r.global_batch == 1536}  # GPT-3 175B, t x p = 8 x 12, batch 1536, as published


def _gpt3(n_gpus, tp, pp, batch=1536, zero=1):
    """GPT-3 175B as Table 2 ran it (Megatron 2021: fp16, materialized attention, full
    recomputation, micro-batch 1, gradients after the flush) at another tp x pp."""
    run = _T2[1536]
    lay = dict(run.layout, tp=tp, pp=pp, zero_stage=zero)
    return planner.predict(planner.resolve_model(run.model), planner.cluster_for(run.gpu),
                           planner.Layout(**lay), n_gpus, batch)


def fsdp_validated() -> dict:
    """How far FSDP2-style ZeRO-3 is checked: the largest GPU count of a published ZeRO-3
    row run as FSDP2 ("gpus") and each row at that count ("rows": name, error)."""
    rows = [r for r in planner.validate() if r["estimate"].layout.zero_stage == 3
            and r["estimate"].layout.fsdp_impl == "fsdp2"]
    n = max(r["estimate"].n_gpus for r in rows)
    return dict(gpus=n, rows=[dict(name=r["name"], error=r["error"]) for r in rows
                              if r["estimate"].n_gpus == n])


def _zero3(p) -> dict:
    """ZeRO-3 in a plan: its fastest ZeRO-3 layout without a pipeline (Table 2's kind), the
    same layout as DeepSpeed ran ZeRO-3 in 2021 (a gather per weight matrix, waited on),
    each with its band and its place in the plan's ranking, and how far FSDP2 is checked."""
    z3 = min((c for c in p.ranked if c.zero_stage == 3 and c.pp == 1),
             key=lambda c: c.rank_time, default=None)
    out = dict(best=z3, rank=p.ranked.index(z3) + 1 if z3 else None, of=len(p.ranked),
               band=z3.band if z3 else planner.error_band(planner.Layout(zero_stage=3)),
               fsdp=fsdp_validated())
    if z3 is None:
        return out
    e = z3.estimate
    ds = planner.predict(e.model, e.cluster, dataclasses.replace(e.layout, fsdp_impl="deepspeed2021"),
                         e.n_gpus, e.global_batch)
    ds_band = planner.error_band(ds.layout)
    ranked_s = ds.step_time.total / ds_band[1]  # as plan() would rank it
    others = [c for c in p.ranked if c is not z3]
    out.update(deepspeed=ds, deepspeed_band=ds_band, deepspeed_ranked_s=ranked_s,
               deepspeed_rank=1 + sum(c.rank_time < ranked_s for c in others))
    return out


def interview() -> dict:
    """The numbers that settle the seed's 3D claims, keyed (a)..(d)."""
    seed = planner.gpt3_seed_check()
    table2 = {n: dict(paper=r.value, predicted=planner.metric_of(planner.predict_run(r), r.metric))
              for n, r in sorted(_T2.items())}
    # (b) where TP goes: 175B on 1536 GPUs, ZeRO-1, full recomputation, micro-batch 1
    placement = {f"tp={t} pp={p}": _gpt3(1536, t, p) for t, p in ((8, 12), (16, 6), (4, 24))}
    one_card = planner.predict(planner.resolve_model(_T2[1536].model),
                               planner.cluster_for("A100", nics_per_node=1),
                               planner.Layout(**dict(_T2[1536].layout, tp=16, pp=6)), 1536, 1536)
    nodes = {name: planner.plan(*args) for name, args in (
        ("175B on 1024 A100", ("175B", 1024, "A100-80GB", 1536)),
        ("70B on 64 A100", ("70B", 64, "A100-80GB", 1024)),
        ("13B on 8 A100", ("13B", 8, "A100-80GB", 512)),
        ("13B on 16 A100", ("13B", 16, "A100-80GB", 512)))}
    order = {k: rule_of_thumb(p) for k, p in nodes.items()}
    best = {k: p.best.label for k, p in nodes.items()}
    p13 = nodes["13B on 8 A100"]
    thirteen = next((k + 1, c) for k, c in enumerate(p13.ranked) if (c.tp, c.pp) == (4, 2))
    zero3 = _zero3(nodes["175B on 1024 A100"])
    # (d) when PP pays: 175B, tp = 8, 1536 GPUs; pp = 1 does not fit without ZeRO-3
    pp_rows = {p: _gpt3(1536, 8, p) for p in (1, 2, 4, 12, 24)}
    return {"a": dict(seed=seed, table2=table2),
            "b": dict(placement=placement, one_card=one_card, best=best, zero3=zero3),
            "c": dict(order=order, thirteen=dict(rank=thirteen[0], label=thirteen[1].label,
                                                  of=len(p13.ranked),
                                                  slower=thirteen[1].step_time / p13.best.step_time - 1)),
            "d": pp_rows}

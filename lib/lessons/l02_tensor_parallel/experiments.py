"""Notebook 02's experiments: pure functions over ``tensor_parallel.run`` and ``parlab.cost``,
returning plain data that ``figures`` draws and ``widgets`` shows.

Every count is read off a real run's traced collectives (``result.ranks[r]["collectives"]``)
or saved-activation bytes (``["activations"]``) and set next to the formula that predicts
it, which lives once in ``parlab.cost``: ``tp_comm_per_layer`` (Shoeybi et al. 2019, §3;
Korthikanti et al. 2022, §4.2.2), ``activation_memory`` (Korthikanti §4, Eq. 1-4; for our
layer, ``layer="lab"``), ``tp_scaling`` / ``tp_scaling_curve`` (a GPU-scale time model).
The notebook's exercises and their checkers: ``lessons.l02_tensor_parallel.exercises``.
"""

from __future__ import annotations

import dataclasses

import statistics
import time
from collections import Counter

from parlab import cost, hardware
from parlab.model import GPTConfig
from parlab.validate import check_choice
from parlab.tensor_parallel.runner import TPRun, run
from lessons.common import record

SMALL = GPTConfig(vocab_size=64, seq_len=32, d_model=64, n_heads=4, n_layers=2)
MEDIUM = GPTConfig(vocab_size=64, seq_len=64, d_model=256, n_heads=4, n_layers=2)  # timings
BATCH = 4
FP32 = 4  # bytes per value: our ranks train in fp32
# GPU-scale shapes (n_layers, d_model, n_heads, seq_len): GPT-3 (Brown et al. 2020, Table 2.1)
# and the 13B of the seed's claim, LLaMA-13B's shape (cost.MODEL_PRESETS["13B"]).
GPU_MODELS = {"GPT-3 175B": dict(n_layers=96, d_model=12288, n_heads=96, seq_len=2048),
              "13B": {k: getattr(cost.MODEL_PRESETS["13B"], k)
                      for k in ("n_layers", "d_model", "n_heads", "seq_len")}}
# (GPU preset, link between nodes): the link inside a node is the GPU preset's own.
PLATFORMS = {"A100 (NVLink3, IB-HDR)": ("A100-SXM4-80GB", "IB-HDR"),
             "H100 (NVLink4, IB-NDR)": ("H100-SXM5-80GB", "IB-NDR"),
             "A100 PCIe box (PCIe4, IB-HDR)": ("A100-PCIe-80GB", "IB-HDR")}


# --- reading a run ------------------------------------------------------------------------

def block_of(layer: str | None) -> str:
    """'blocks.0.attn.proj' -> 'blocks.0'; 'wte', 'lm_head' and 'all' stay as they are."""
    parts = (layer or "").split(".")
    return ".".join(parts[:2]) if parts[0] == "blocks" else (layer or "")


def collectives(result, rank: int = 0, step: int = 0, block: str | None = None) -> list[dict]:
    """One rank's collectives of one step, in the order they ran, optionally of one block."""
    rows = [c for c in result.ranks[rank]["collectives"] if c["step"] == step]
    return [c for c in rows if block is None or block_of(c["layer"]) == block]


def tally(rows: list[dict]) -> dict:
    """{"forward": {op: n}, "backward": {op: n}, "collectives": n, "bytes": bytes sent}."""
    out = {d: dict(Counter(c["op"] for c in rows if c["direction"] == d))
           for d in ("forward", "backward")}
    return dict(out, collectives=len(rows), bytes=sum(c["bytes_sent"] for c in rows))


def _run(config, tp, sequence_parallel=False, batch_size=BATCH, **kw):
    return run(TPRun(config=config, batch_size=batch_size,
                     sequence_parallel=sequence_parallel, **kw), tp)


# --- 1. communication: counted vs formula ------------------------------------------------

def comm_table(config: GPTConfig = SMALL, tp: int = 2, sequence_parallel: bool = False,
               batch_size: int = BATCH, result=None) -> dict:
    """One block's collectives in one training step (rank 0, step 0), counted from a run,
    next to ``cost.tp_comm_per_layer`` (fp32). ``outside``: the collectives outside the
    blocks (embedding, lm_head and the vocab-parallel loss, the SP gradient sum)."""
    r = result or _run(config, tp, sequence_parallel, batch_size, steps=1)
    block = tally(collectives(r, block="blocks.0"))
    formula = cost.tp_comm_per_layer(batch_size, config.seq_len, config.d_model, tp,
                                     sequence_parallel, bytes_per_value=FP32)
    outside = Counter((c["layer"], c["direction"], c["operator"], c["op"], c["bytes_sent"])
                      for c in collectives(r) if not c["layer"].startswith("blocks."))
    return dict(tp=tp, sequence_parallel=sequence_parallel, measured=block, formula=formula,
                match=(block["forward"] == formula["forward"] and block["backward"] ==
                       formula["backward"] and block["bytes"] == round(formula["bytes"])),
                outside=[dict(zip(("layer", "direction", "operator", "op", "bytes"), k), n=n)
                         for k, n in outside.items()])


def comm_sweep(config: GPTConfig = SMALL, tps=(2, 4), batch_size: int = BATCH) -> list[dict]:
    """``comm_table`` for every t in ``tps``, without and with sequence parallelism."""
    return [comm_table(config, t, sp, batch_size) for t in tps for sp in (False, True)]


def layer_sequence(result, block: str = "blocks.0", step: int = 0, rank: int = 0) -> list[dict]:
    """The collectives one block issued in one step, in order: where f, g (and SP's pair) act."""
    return [{k: c[k] for k in ("layer", "direction", "operator", "op", "bytes_sent")}
            for c in collectives(result, rank, step, block)]


def step_events(result, step: int = 1) -> list[dict]:
    """Every rank's traced events (forward/backward/optimizer spans and collectives) of one
    step, for a timeline (needs a run with ``trace=True``)."""
    out = []
    for rank in {e["rank"] for e in result.events}:
        mine = [e for e in result.events if e["rank"] == rank]
        spans = [e for e in mine if e["kind"] != "comm" and (e.get("meta") or {}).get("step") == step]
        if spans:
            lo, hi = min(e["start"] for e in spans), max(e["end"] for e in spans)
            out += [e for e in mine if e in spans or (e["kind"] == "comm" and lo <= e["start"] <= hi)]
    return out


# --- 2. activation memory: measured vs formula -------------------------------------------

def activation_rows(config: GPTConfig = SMALL, batch_size: int = BATCH, tps=(1, 2, 4),
                    recomputes=("none", "selective")) -> list[dict]:
    """Bytes one block saves for backward on each rank (measured in the first forward)
    for every t, with/without SP, each recompute mode; ``formula``:
    ``cost.activation_memory(..., layer="lab")`` (our layer, fp32); ``korthikanti``: Eq. 1-4
    with dropout, rescaled to fp32; ``no_dropout``: the same without dropout's masks."""
    c, rows = config, []
    for t in tps:
        for sp in ((False,) if t == 1 else (False, True)):
            for rc in recomputes:
                r = _run(c, t, sp, batch_size, steps=1, recompute=rc)
                per_rank = [x["activations"]["per_layer"][0] for x in r.ranks]
                args = (c.seq_len, batch_size, c.d_model, c.n_heads)
                no_dropout = cost.LayerShape(c.d_model, c.n_heads, dropout=False)
                rows.append(dict(
                    tp=t, sequence_parallel=sp, recompute=rc, measured=per_rank[0],
                    ranks_equal=len(set(per_rank)) == 1,
                    formula=cost.activation_memory(*args, 1, rc, t, sp, FP32, layer="lab"),
                    korthikanti=cost.activation_memory(*args, 1, rc, t, sp, FP32),
                    no_dropout=cost.activation_memory(*args, 1, rc, t, sp, FP32, layer=no_dropout)))
    return rows


# Parameters every rank holds whole but feeds only its positions under SP: their gradients
# are partial sums, added up once per step (``TPGPT.sequence_parallel_params``, Korthikanti §4.2.2)
SP_PARAMS = ("ln1.", "ln2.", "ln_f.", "attn.proj.bias", "mlp.fc2.bias", "wpe.")


def sp_grad_values(config: GPTConfig) -> int:
    """How many gradient values SP's once-per-step all-reduce carries (``SP_PARAMS``,
    counted on the reference model)."""
    from parlab.model import GPT
    return sum(p.numel() for n, p in GPT(config).named_parameters() if any(k in n for k in SP_PARAMS))


def korthikanti_rows(model: str = "GPT-3 175B", micro_batch: int = 1, tp: int = 8) -> list[dict]:
    """Korthikanti et al.'s Table 2 rows (bytes per layer, 16-bit) at ``model``'s shape."""
    check_choice("model", model, tuple(GPU_MODELS))
    m = GPU_MODELS[model]
    return cost.activation_table(m["seq_len"], micro_batch, m["d_model"], m["n_heads"], tp)


# --- 3. speed: CPU ranks, and the GPU-scale model ---------------------------------------

def cpu_caveat(tps=(1, 2, 4)) -> str:
    """Why t ranks on this machine's cores cannot show tensor parallelism's speed-up."""
    cores = hardware.detect().usable_cpus or 1
    return (f"{cores} usable cores, one thread per rank: t ranks split each matmul t ways, but "
            f"at most {cores} of them run at any moment, so on an otherwise idle machine t > {cores} "
            f"cannot beat t = {cores}; every rank also repeats the unsplit work (LayerNorms, "
            "embeddings, the loss), and each collective is a memory copy through the kernel on the "
            "same cores. When other programs use the cores too, each rank is one more process "
            "sharing them, so more ranks get a larger share of the CPU and a larger t can look "
            "faster: that is the scheduler, not tensor parallelism. Tokens/s here show the "
            f"overheads, not a GPU's speed-up ({hardware.load()}).")


def throughput(config: GPTConfig = MEDIUM, tps=(1, 2, 4), batch_size: int = 8, steps: int = 4,
               repeats: int = 2, sequence_parallel: bool = False) -> list[dict]:
    """Tokens/s of real training steps at each t: launches interleaved over ``tps``
    ``repeats`` times (noise hits all alike), first step of each launch dropped."""
    times = {t: [] for t in tps}
    for _ in range(repeats):
        for t in tps:
            times[t] += _run(config, t, sequence_parallel and t > 1, batch_size,
                             steps=steps).step_times[1:]
    base = statistics.median(times[tps[0]])
    for t in tps:  # measured here: it goes in the learner's record
        name = f"TP t={t}{' + SP' if sequence_parallel and t > 1 else ''}"
        record.measurement("l02_tensor_parallel", name, batch_size * config.seq_len / statistics.median(times[t]),
                           "tokens/s", "张量并行 " + name[3:])
    return [dict(tp=t, step_s=statistics.median(times[t]), steps=len(times[t]),
                 tokens_per_s=batch_size * config.seq_len / statistics.median(times[t]),
                 speedup=base / statistics.median(times[t])) for t in tps]


def cpu_work_worker(run: TPRun) -> float:
    """Rank worker: ``runner.train_worker`` under ``time.process_time``: the CPU seconds
    this rank spent (its own work and its share of the collectives' copies; time spent
    waiting for the cores or for other ranks does not count)."""
    from parlab.tensor_parallel.runner import train_worker
    t0 = time.process_time()
    train_worker(run)
    return time.process_time() - t0


def cpu_work(config: GPTConfig = MEDIUM, tps=(1, 2, 4), batch_size: int = 8, steps: int = 5,
             repeats: int = 3) -> list[dict]:
    """CPU seconds per training step summed over the t ranks: a run of ``steps`` steps
    minus a run of 1 (set-up and the first step cancel), / (steps - 1), median of
    ``repeats`` interleaved rounds. Unlike wall-clock time it does not depend on who else
    uses the cores: it measures the *work*, which tensor parallelism splits but does not
    reduce (every rank repeats LayerNorms, embeddings and the loss; collectives copy)."""
    from parlab.launch import launch
    per = {t: [] for t in tps}
    for _ in range(repeats):
        for t in tps:
            one, many = (sum(launch(cpu_work_worker, t, TPRun(config=config, batch_size=batch_size,
                                                                steps=s))) for s in (1, steps))
            per[t].append((many - one) / (steps - 1))
    base = statistics.median(per[tps[0]])
    return [dict(tp=t, cpu_s=statistics.median(per[t]), samples=per[t],
                 ratio=statistics.median(per[t]) / base) for t in tps]


def gpu_scale(model: str = "GPT-3 175B", platform: str = "A100 (NVLink3, IB-HDR)",
              tps=(1, 2, 4, 8, 16, 32), micro_batch: int = 1, sequence_parallel: bool = False,
              gpus_per_node: int = 8, efficiency: float = 0.5,
              nics_per_node: int | None = None) -> list[dict]:
    """``cost.tp_scaling_curve`` for ``model`` on ``platform``: the link inside a node up to
    ``gpus_per_node`` ranks, the network beyond, over ``nics_per_node`` cards per node (default
    one per GPU, a DGX's layout; 1 for a node with a single card). Rows per t: compute_s, comm_s, step_s,
    tokens_per_s(_per_gpu), mfu, comm_fraction, link ("intra"/"inter"), link_name. Degrees
    that do not divide the model's heads are left out (a rank holds whole heads)."""
    check_choice("model", model, tuple(GPU_MODELS))
    check_choice("platform", platform, tuple(PLATFORMS))
    gpu, inter = PLATFORMS[platform]
    tps = [t for t in tps if GPU_MODELS[model]["n_heads"] % t == 0]
    spec = hardware.GPU_PRESETS[gpu]
    intra, net = hardware.LINK_PRESETS[spec.link], hardware.LINK_PRESETS[inter]
    rows = cost.tp_scaling_curve(
        **GPU_MODELS[model], micro_batch=micro_batch, tps=tps,
        peak_flops=hardware.peak_flops(spec, "bf16"),
        intra_bandwidth=intra.gb_per_s_per_direction * 1e9, intra_alpha=intra.latency_us * 1e-6,
        inter_bandwidth=net.gb_per_s_per_direction * 1e9, inter_alpha=net.latency_us * 1e-6,
        gpus_per_node=gpus_per_node, efficiency=efficiency, sequence_parallel=sequence_parallel,
        nics_per_node=nics_per_node)
    for r in rows:
        r["link_name"] = intra.name if r["link"] == "intra" else net.name
    return rows


def overlap(config: GPTConfig = MEDIUM, tp: int = 2, batch_size: int = 8, steps: int = 4,
            repeats: int = 3) -> dict:
    """Step time without and with the input-gradient all-reduce overlapped with the
    weight-gradient matmul (``TPRun.overlap``), launches interleaved, medians."""
    times = {False: [], True: []}
    for _ in range(repeats):
        for ov in (False, True):
            times[ov] += _run(config, tp, False, batch_size, steps=steps, overlap=ov).step_times[1:]
    off, on = statistics.median(times[False]), statistics.median(times[True])
    return dict(tp=tp, off_s=off, on_s=on, gain=off / on - 1, steps=len(times[True]),
                load=hardware.timing_note()[1])


# --- 4. ours vs PyTorch's DTensor tensor parallelism ---------------------------------------

def peer_check(cases, config: GPTConfig = SMALL, steps: int = 3, batch_size: int = BATCH) -> list[dict]:
    """Each (t, sequence_parallel): our run and torch's (``peer="dtensor"``) of the same
    TPRun; largest |difference| of the losses and of the final parameters."""
    rows = []
    for t, sp in cases:
        cfg = TPRun(config=config, steps=steps, batch_size=batch_size, sequence_parallel=sp)
        ours = run(cfg, t)
        theirs = run(dataclasses.replace(cfg, peer="dtensor"), t)
        rows.append(dict(tp=t, sequence_parallel=sp,
                         loss=max(abs(a - b) for a, b in zip(ours.losses, theirs.losses)),
                         params=max((ours.state_dict[k] - v).abs().max().item()
                                    for k, v in theirs.state_dict.items())))
    return rows


# --- 5. live: what the widget shows --------------------------------------------------------

def live(tp: int = 2, sequence_parallel: bool = False, seq_len: int = 32, d_model: int = 64,
         steps: int = 3) -> dict:
    """A real run on ``tp`` ranks of a 2-block GPT (4 heads, batch 4) and what it measured:
    median step time (first step dropped), tokens/s, one block's collectives and bytes per
    step next to ``cost.tp_comm_per_layer``, activation bytes one block saves on each rank
    next to ``cost.activation_memory(..., layer="lab")``; or ``error`` for a bad choice."""
    sp = bool(sequence_parallel) and tp > 1
    try:
        cfg = GPTConfig(vocab_size=64, seq_len=seq_len, d_model=d_model, n_heads=4, n_layers=2)
        r = _run(cfg, tp, sp, BATCH, steps=steps)
    except ValueError as e:
        return dict(error=str(e))
    step = statistics.median(r.step_times[1:])
    return dict(tp=tp, sequence_parallel=sp, step_s=step, tokens_per_s=BATCH * seq_len / step,
                block=tally(collectives(r, block="blocks.0")),
                formula=cost.tp_comm_per_layer(BATCH, seq_len, d_model, tp, sp, bytes_per_value=FP32),
                activations=[x["activations"]["per_layer"][0] for x in r.ranks],
                activation_formula=cost.activation_memory(seq_len, BATCH, d_model, 4, 1, "none", tp,
                                                          sp, FP32, layer="lab"),
                losses=r.losses, load=hardware.timing_note()[1])


# --- 6. the interview corner's numbers -----------------------------------------------------

def interview(comm: list[dict] | None = None, activations: list[dict] | None = None,
              overlap_row: dict | None = None, platform: str = "A100 (NVLink3, IB-HDR)") -> dict:
    """The numbers that settle each tensor-parallel claim of the seed, keyed (a)..(i).
    ``comm`` / ``activations`` / ``overlap_row``: the notebook's earlier measurements
    (``comm_sweep``, ``activation_rows``, ``overlap``); missing ones are measured small."""
    check_choice("platform", platform, tuple(PLATFORMS))  # before anything is measured
    comm = comm or comm_sweep(SMALL, (2,))
    g3 = GPU_MODELS["GPT-3 175B"]
    s, h, a = g3["seq_len"], g3["d_model"], g3["n_heads"]
    nv = hardware.LINK_PRESETS["NVLink3"]
    c8 = cost.tp_comm_per_layer(1, s, h, 8)                       # fp16 messages
    ar8 = cost.collective_bytes("all_reduce", c8["message_bytes"], 8)
    tp_row = next(r for r in comm if not r["sequence_parallel"])
    out = {"a": dict(measured=tp_row["measured"], tp=tp_row["tp"],
                     formula={k: c8[k] for k in ("forward", "backward")})}
    out["b"] = dict(params=cost.transformer_params(1, h), param_bytes=2 * cost.transformer_params(1, h),
                    activations=cost.activation_memory(s, 1, h, a, 1),
                    activations_tp8=cost.activation_memory(s, 1, h, a, 1, tp=8),
                    activations_tp8_sp=cost.activation_memory(s, 1, h, a, 1, tp=8,
                                                              sequence_parallel=True))
    out["c"] = dict(forward=sum(c8["forward"].values()), backward=sum(c8["backward"].values()))
    out["d"] = dict(per_direction=nv.gb_per_s_per_direction, total=nv.gb_per_s_total,
                    links=nv.gb_per_s_per_direction / 25)
    out["e"] = dict(message=c8["message_bytes"], per_all_reduce=ar8, forward=c8["forward"],
                    forward_bytes=ar8 * c8["forward"]["all_reduce"], step_bytes=c8["bytes"],
                    two_messages=2 * c8["message_bytes"])
    pairs = {r["tp"]: {} for r in comm}
    for r in comm:
        pairs[r["tp"]][r["sequence_parallel"]] = r
    out["f"] = dict(bytes={t: (p[False]["measured"]["bytes"], p[True]["measured"]["bytes"],
                               p[True]["formula"]["regather_bytes"])
                           for t, p in pairs.items() if len(p) == 2},
                    gpt3_tp8=(c8["bytes"], cost.tp_comm_per_layer(1, s, h, 8, True)["bytes"]))
    if activations:
        act = {(r["tp"], r["sequence_parallel"]): r["measured"] for r in activations
               if r["recompute"] == "none"}
        out["f"]["activations"] = {t: (act[t, False], act[t, True]) for t in (2, 4)
                                   if (t, True) in act}
    scale = {m: {r["tp"]: r for r in gpu_scale(m, platform, (1, 4, 8, 16))} for m in GPU_MODELS}
    g8 = scale["GPT-3 175B"][8]
    spec = hardware.GPU_PRESETS[PLATFORMS[platform][0]]
    link = hardware.LINK_PRESETS[spec.link]
    sp = {c: cost.tp_forward_overlap(**g3, micro_batch=1, tp=8, chunks=c,
                                     peak_flops=hardware.peak_flops(spec, "bf16"),
                                     alpha=link.latency_us * 1e-6,
                                     bandwidth=link.gb_per_s_per_direction * 1e9) for c in (4, 8)}
    out["g"] = dict(measured=overlap_row, comm_fraction=g8["comm_fraction"],
                    # no SP: hiding f's backward all-reduces (TPRun(overlap=True)) ...
                    best_gain=g8["step_s"] / (g8["step_s"] - g8["comm_s"] / 2) - 1,
                    # ... or all of it, had the forward all-reduces something to hide behind
                    full_gain=g8["step_s"] / (g8["step_s"] - g8["comm_s"]) - 1,
                    # with SP: backward hidden, forward chunked in c pieces (§8), all hidden
                    sp_comm_fraction=sp[4]["comm_fraction"], sp_backward_gain=sp[4]["gain_backward"],
                    sp_chunked_gain={c: r["gain"] for c, r in sp.items()},
                    sp_exposed_share={c: r["exposed_share"] for c, r in sp.items()},
                    sp_full_gain=sp[4]["full_gain"])
    out["h"] = {t: scale["GPT-3 175B"][t] for t in (8, 16)}
    m13 = GPU_MODELS["13B"]
    out["i"] = dict(rows={t: scale["13B"][t] for t in (1, 4, 8)},
                    comm_bytes={t: cost.tp_comm_per_layer(1, m13["seq_len"], m13["d_model"], t)["bytes"]
                                for t in (4, 8)})
    return out

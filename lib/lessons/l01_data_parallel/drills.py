"""Drills on data parallelism and ZeRO: gradient traffic, model states per GPU, what
each stage shards, speedup with and without overlap (notebook 01)."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S4 = ("01", 4, "Throughput at 1, 2 and 4 ranks: ours vs torch DDP")
S6 = ("01", 6, "ZeRO: stop replicating the model states")

DENSE = ("1.3B", "7B", "13B", "70B")
DP = (4, 8, 16, 64, 256, 1024)
ADAM = ("mixed-precision Adam: bf16 parameters and gradients (2 B each) and 12 B of fp32 "
        "optimizer state per parameter")


def params(rng) -> tuple[int, str]:
    """A preset's parameter count rounded to 10M (what the prompt states and the answer
    uses), and how to say it."""
    p = cost.MODEL_PRESETS[rng.choice(DENSE)]
    n = round(p.n_params / 1e7) * 10 ** 7
    return n, f"a {p.name} model ({fmt(n / 1e9)} billion parameters)"


def stage_name(stage: int) -> str:
    return cost.ZERO_STAGE_NAMES[stage]


@template("dp_gradient_traffic", "dp_zero", S6)
def dp_gradient_traffic(rng):
    (n, said), dp = params(rng), rng.choice(DP)
    gb = cost.zero_comm_volume(n, dp, 0) / 1e9
    return Ask(f"Plain data parallelism trains {said} on {dp} GPUs, bf16 gradients (2 B). "
               f"With a ring all-reduce, how many GB does each GPU send per step?", gb, "GB",
               f"One all-reduce of Ψ = {fmt(n / 1e9)}e9 × 2 B: 2(dp-1)/dp · Ψ = "
               f"2·{dp - 1}/{dp} · {fmt(2 * n / 1e9)} GB = {fmt(gb)} GB "
               f"(cost.zero_comm_volume, stage 0). Nearly 2Ψ whatever dp: the traffic per GPU "
               f"does not grow with the number of GPUs; the step count (latency) does.")


@template("zero_bytes_per_param", "dp_zero", S6)
def zero_bytes_per_param(rng):
    stage, dp = rng.choice((1, 2, 3)), rng.choice(DP[:4])
    per = cost.zero_memory(10 ** 9, dp, stage)["total"] / 1e9
    return Ask(f"With {ADAM}, how many bytes of model states does each GPU hold per "
               f"parameter under {stage_name(stage)} with dp = {dp}?", per, "bytes",
               f"ZeRO-1 shards the 12 B of optimizer state, ZeRO-2 also the 2 B of gradients, "
               f"ZeRO-3 also the 2 B of parameters, each over dp: {stage_name(stage)} at "
               f"dp = {dp} gives {fmt(per)} B per parameter (cost.zero_memory; plain DP: 16).")


@template("zero_memory_per_gpu", "dp_zero", S6)
def zero_memory_per_gpu(rng):
    (n, said), dp, stage = params(rng), rng.choice(DP[:4]), rng.choice((0, 1, 2, 3))
    m = cost.zero_memory(n, dp, stage)
    gb = m["total"] / 1e9
    return Ask(f"{said[0].upper()}{said[1:]} is trained with {ADAM}, {stage_name(stage)} over "
               f"dp = {dp} GPUs. How many GB of model states (no activations) does each GPU "
               f"hold?", gb, "GB",
               f"params {fmt(m['params'] / 1e9)} + grads {fmt(m['grads'] / 1e9)} + optimizer "
               f"{fmt(m['optimizer'] / 1e9)} = {fmt(gb)} GB (cost.zero_memory, Rajbhandari et "
               f"al. §5).")


@template("zero3_traffic", "dp_zero", S6)
def zero3_traffic(rng):
    (n, said), dp = params(rng), rng.choice(DP)
    gb = cost.zero_comm_volume(n, dp, 3) / 1e9
    return Ask(f"ZeRO-3 trains {said} on {dp} GPUs with bf16 parameters and gradients. With "
               f"ring collectives, how many GB does each GPU send per step?", gb, "GB",
               f"Parameters all-gathered in forward and again in backward, gradients "
               f"reduce-scattered: 3 · (dp-1)/dp · Ψ with Ψ = {fmt(2 * n / 1e9)} GB: {fmt(gb)} "
               f"GB (cost.zero_comm_volume, ZeRO §7.2.2).")


@template("zero3_traffic_ratio", "dp_zero", S6)
def zero3_traffic_ratio(rng):
    (n, said), dp = params(rng), rng.choice(DP)
    r = cost.zero_comm_volume(n, dp, 3) / cost.zero_comm_volume(n, dp, 0)
    return Ask(f"For {said} on {dp} GPUs: how many times the bytes per GPU per step of plain "
               f"DP does ZeRO-3 send?", r, "x",
               f"Plain DP: one all-reduce = reduce-scatter + all-gather, 2Ψ(dp-1)/dp. ZeRO-3: "
               f"two all-gathers of the parameters + one reduce-scatter, 3Ψ(dp-1)/dp. Ratio "
               f"{fmt(r)} (cost.zero_comm_volume), whatever the model and dp.")


@template("dp_speedup", "dp_zero", S4)
def dp_speedup(rng):
    n, tf = rng.choice((2, 4, 8, 16)), rng.choice((40, 60, 100, 150))
    tb, tc, overlap = 2 * tf, rng.choice((20, 50, 100, 150, 250, 400)), rng.random() < 0.5
    s = cost.dp_speedup(n, tf / 1e3, tb / 1e3, tc / 1e3, overlap)
    how = ("overlapped perfectly with backward (DDP buckets)" if overlap
           else "run after backward, not overlapped")
    return Ask(f"One GPU does a step in forward {tf} ms + backward {tb} ms. With {n} GPUs "
               f"(same per-GPU batch), the gradient all-reduce takes {tc} ms, {how}. What "
               f"throughput speedup over one GPU does that give?", s, "x",
               "step = t_f + " + ("max(t_b, t_c)" if overlap else "t_b + t_c") +
               f"; speedup = n (t_f + t_b) / step = {n}·{tf + tb} / "
               f"{fmt(cost.dp_step_time(tf, tb, tc, overlap))} = {fmt(s)} (cost.dp_speedup).")


@template("max_micro_batch", "dp_zero", S6)
def max_micro_batch(rng):
    while True:
        name, gpus = rng.choice(("1.3B", "7B", "13B")), rng.choice((8, 16, 64))
        gb, stage = rng.choice((40, 80)), rng.choice((1, 2, 3))
        recompute = rng.choice(("selective", "full"))
        b = cost.max_micro_batch(name, gpus, gb, stage, recompute)
        if b >= 1:
            break
    p = cost.MODEL_PRESETS[name]
    plan = cost.memory_plan(name, gpus, gb, stage, recompute, b)
    kept = ("s·b·h·34 bytes per GPT layer" if p.mlp == "gelu" else
            f"s·b·h·(16 + 6·{p.d_ff}/h) bytes per layer: SwiGLU, no dropout")
    act = (f"selective recomputation (all but the attention scores kept: {kept})" if recompute ==
           "selective" else "full recomputation (only each layer's input: 2·s·b·h bytes)")
    return Ask(f"{p.name} ({fmt(p.n_params)} parameters, {p.n_layers} layers, d_model "
               f"{p.d_model}, {p.seq_len}-token sequences), {ADAM}, {stage_name(stage)} over "
               f"{gpus} GPUs of {gb} GB, {act}. What is the largest micro-batch (sequences "
               f"per GPU) that fits?", b, "",
               f"Model states {fmt((plan['total'] - plan['activations']) / 1e9)} GB per GPU; "
               f"activations {fmt(plan['activations'] / b / 1e9)} GB per sequence; "
               f"floor(spare / per sequence) = {b} (cost.max_micro_batch; buffers, "
               f"fragmentation and the CUDA context left out, so this is optimistic).",
               rel_tol=0)


@template("fsdp_reshard_tradeoff", "dp_zero", S6)
def fsdp_reshard_tradeoff(rng):
    (n, said), dp = params(rng), rng.choice(DP)
    keep, reshard = (cost.fsdp_comm_volume(n, dp, r)["total"] for r in (False, True))
    gb = (reshard - keep) / 1e9
    return Ask(f"FSDP trains {said} on {dp} GPUs, bf16 parameters and gradients. Switching "
               f"reshard_after_forward from True to False: how many GB fewer does each GPU "
               f"send per step?", gb, "GB",
               f"True gathers every unit twice (forward, backward) and reduce-scatters once: "
               f"3Ψ(dp-1)/dp; False keeps the forward's weights until backward: 2Ψ(dp-1)/dp. "
               f"The difference is one all-gather, Ψ(dp-1)/dp = {fmt(gb)} GB "
               f"(cost.fsdp_comm_volume; Zhao et al. §3.2.1), paid for by holding every "
               f"unit's full weights from its forward to its backward.")


@template("hsdp_cross_node", "dp_zero", S6)
def hsdp_cross_node(rng):
    (n, said), nodes, per_node = params(rng), rng.choice((2, 4, 8, 16)), rng.choice((4, 8))
    gb = cost.hsdp_comm_volume(n, per_node, nodes)["inter_node"] / 1e9
    return Ask(f"HSDP trains {said} on {nodes} nodes of {per_node} GPUs: sharded within each "
               f"node, replicated across nodes, bf16 gradients. How many GB does each GPU "
               f"send across nodes per step (ring all-reduce)?", gb, "GB",
               f"Only the all-reduce of each GPU's gradient shard crosses nodes: "
               f"2 · (Ψ/{per_node}) · ({nodes}-1)/{nodes} with Ψ = {fmt(2 * n / 1e9)} GB: "
               f"{fmt(gb)} GB (cost.hsdp_comm_volume; Zhao et al. §3.2.2). The all-gathers and "
               f"reduce-scatters stay on the node's links.")

"""Drills on data parallelism and ZeRO: gradient traffic, model states per GPU, what
each stage shards, speedup with and without overlap (notebook 01)."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import ZERO_STAGE_ZH, Ask, fmt, template

S4 = ("01", 4, "Throughput at 1, 2 and 4 ranks: ours vs torch DDP")
S6 = ("01", 6, "ZeRO: stop replicating the model states")

DENSE = ("1.3B", "7B", "13B", "70B")
DP = (4, 8, 16, 64, 256, 1024)
ADAM = ("mixed-precision Adam: bf16 parameters and gradients (2 B each) and 12 B of fp32 "
        "optimizer state per parameter")
ADAM_ZH = "混合精度 Adam：bf16 参数和梯度（各 2 B），外加每参数 12 B 的 fp32 优化器状态"


def params(rng) -> tuple[int, str, str]:
    """A preset's parameter count rounded to 10M (what the prompt states and the answer
    uses), and how to say it, in English and Chinese."""
    p = cost.MODEL_PRESETS[rng.choice(DENSE)]
    n = round(p.n_params / 1e7) * 10 ** 7
    return (n, f"a {p.name} model ({fmt(n / 1e9)} billion parameters)",
            f"一个 {p.name} 模型（{fmt(n / 1e9)}B 参数）")


def stage_name(stage: int) -> str:
    return cost.ZERO_STAGE_NAMES[stage]


@template("dp_gradient_traffic", "dp_zero", S6)
def dp_gradient_traffic(rng):
    (n, said, said_zh), dp = params(rng), rng.choice(DP)
    gb = cost.zero_comm_volume(n, dp, 0) / 1e9
    return Ask(f"Plain data parallelism trains {said} on {dp} GPUs, bf16 gradients (2 B). "
               f"With a ring all-reduce, how many GB does each GPU send per step?", gb, "GB",
               f"One all-reduce of Ψ = {fmt(n / 1e9)}e9 × 2 B: 2(dp-1)/dp · Ψ = "
               f"2·{dp - 1}/{dp} · {fmt(2 * n / 1e9)} GB = {fmt(gb)} GB "
               f"(cost.zero_comm_volume, stage 0). Nearly 2Ψ whatever dp: the traffic per GPU "
               f"does not grow with the number of GPUs; the step count (latency) does.",
               prompt_zh=(f"纯数据并行在 {dp} 张 GPU 上训练{said_zh}，梯度为 bf16（2 B）。"
                          f"用环形 AllReduce 时，每张 GPU 每步发送多少 GB？"))


@template("zero_bytes_per_param", "dp_zero", S6)
def zero_bytes_per_param(rng):
    stage, dp = rng.choice((1, 2, 3)), rng.choice(DP[:4])
    per = cost.zero_memory(10 ** 9, dp, stage)["total"] / 1e9
    return Ask(f"With {ADAM}, how many bytes of model states does each GPU hold per "
               f"parameter under {stage_name(stage)} with dp = {dp}?", per, "bytes",
               f"ZeRO-1 shards the 12 B of optimizer state, ZeRO-2 also the 2 B of gradients, "
               f"ZeRO-3 also the 2 B of parameters, each over dp: {stage_name(stage)} at "
               f"dp = {dp} gives {fmt(per)} B per parameter (cost.zero_memory; plain DP: 16).",
               prompt_zh=(f"采用{ADAM_ZH}。在 dp = {dp} 的 {ZERO_STAGE_ZH[stage]} 下，"
                          f"每张 GPU 为每个参数保存多少字节的模型状态？"))


@template("zero_memory_per_gpu", "dp_zero", S6)
def zero_memory_per_gpu(rng):
    (n, said, said_zh), dp, stage = params(rng), rng.choice(DP[:4]), rng.choice((0, 1, 2, 3))
    m = cost.zero_memory(n, dp, stage)
    gb = m["total"] / 1e9
    return Ask(f"{said[0].upper()}{said[1:]} is trained with {ADAM}, {stage_name(stage)} over "
               f"dp = {dp} GPUs. How many GB of model states (no activations) does each GPU "
               f"hold?", gb, "GB",
               f"params {fmt(m['params'] / 1e9)} + grads {fmt(m['grads'] / 1e9)} + optimizer "
               f"{fmt(m['optimizer'] / 1e9)} = {fmt(gb)} GB (cost.zero_memory, Rajbhandari et "
               f"al. §5).",
               prompt_zh=(f"用{ADAM_ZH}训练{said_zh}，{ZERO_STAGE_ZH[stage]}，dp = {dp} 张 GPU。"
                          f"每张 GPU 持有多少 GB 模型状态（不含激活）？"))


@template("zero3_traffic", "dp_zero", S6)
def zero3_traffic(rng):
    (n, said, said_zh), dp = params(rng), rng.choice(DP)
    gb = cost.zero_comm_volume(n, dp, 3) / 1e9
    return Ask(f"ZeRO-3 trains {said} on {dp} GPUs with bf16 parameters and gradients. With "
               f"ring collectives, how many GB does each GPU send per step?", gb, "GB",
               f"Parameters all-gathered in forward and again in backward, gradients "
               f"reduce-scattered: 3 · (dp-1)/dp · Ψ with Ψ = {fmt(2 * n / 1e9)} GB: {fmt(gb)} "
               f"GB (cost.zero_comm_volume, ZeRO §7.2.2).",
               prompt_zh=(f"ZeRO-3 在 {dp} 张 GPU 上训练{said_zh}，参数和梯度均为 bf16。"
                          f"用环形集合通信时，每张 GPU 每步发送多少 GB？"))


@template("zero3_traffic_ratio", "dp_zero", S6)
def zero3_traffic_ratio(rng):
    (n, said, said_zh), dp = params(rng), rng.choice(DP)
    r = cost.zero_comm_volume(n, dp, 3) / cost.zero_comm_volume(n, dp, 0)
    return Ask(f"For {said} on {dp} GPUs: how many times the bytes per GPU per step of plain "
               f"DP does ZeRO-3 send?", r, "x",
               f"Plain DP: one all-reduce = reduce-scatter + all-gather, 2Ψ(dp-1)/dp. ZeRO-3: "
               f"two all-gathers of the parameters + one reduce-scatter, 3Ψ(dp-1)/dp. Ratio "
               f"{fmt(r)} (cost.zero_comm_volume), whatever the model and dp.",
               prompt_zh=f"{said_zh}，{dp} 张 GPU：ZeRO-3 每张 GPU 每步发送的字节数是纯数据并行的多少倍？")


@template("dp_speedup", "dp_zero", S4)
def dp_speedup(rng):
    n, tf = rng.choice((2, 4, 8, 16)), rng.choice((40, 60, 100, 150))
    tb, tc, overlap = 2 * tf, rng.choice((20, 50, 100, 150, 250, 400)), rng.random() < 0.5
    s = cost.dp_speedup(n, tf / 1e3, tb / 1e3, tc / 1e3, overlap)
    how = ("overlapped perfectly with backward (DDP buckets)" if overlap
           else "run after backward, not overlapped")
    how_zh = "与反向完全重叠（DDP 分桶）" if overlap else "在反向之后执行，不重叠"
    return Ask(f"One GPU does a step in forward {tf} ms + backward {tb} ms. With {n} GPUs "
               f"(same per-GPU batch), the gradient all-reduce takes {tc} ms, {how}. What "
               f"throughput speedup over one GPU does that give?", s, "x",
               "step = t_f + " + ("max(t_b, t_c)" if overlap else "t_b + t_c") +
               f"; speedup = n (t_f + t_b) / step = {n}·{tf + tb} / "
               f"{fmt(cost.dp_step_time(tf, tb, tc, overlap))} = {fmt(s)} (cost.dp_speedup).",
               prompt_zh=(f"单张 GPU 一步：前向 {tf} ms + 反向 {tb} ms。用 {n} 张 GPU（每卡 batch 不变）时，"
                          f"梯度 AllReduce 耗时 {tc} ms，{how_zh}。吞吐相对单卡的加速比是多少？"))


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
    kept_zh = ("每个 GPT 层 s·b·h·34 字节" if p.mlp == "gelu" else
               f"每层 s·b·h·(16 + 6·{p.d_ff}/h) 字节：SwiGLU，无 dropout")
    act_zh = (f"选择性激活重计算（除注意力分数外都保留：{kept_zh}）" if recompute == "selective"
              else "完全激活重计算（只保留每层的输入：2·s·b·h 字节）")
    return Ask(f"{p.name} ({fmt(p.n_params)} parameters, {p.n_layers} layers, d_model "
               f"{p.d_model}, {p.seq_len}-token sequences), {ADAM}, {stage_name(stage)} over "
               f"{gpus} GPUs of {gb} GB, {act}. What is the largest micro-batch (sequences "
               f"per GPU) that fits?", b, "",
               f"Model states {fmt((plan['total'] - plan['activations']) / 1e9)} GB per GPU; "
               f"activations {fmt(plan['activations'] / b / 1e9)} GB per sequence; "
               f"floor(spare / per sequence) = {b} (cost.max_micro_batch; buffers, "
               f"fragmentation and the CUDA context left out, so this is optimistic).",
               rel_tol=0,
               prompt_zh=(f"{p.name}（{fmt(p.n_params)} 个参数，{p.n_layers} 层，d_model {p.d_model}，序列长 "
                          f"{p.seq_len} token），{ADAM_ZH}，{ZERO_STAGE_ZH[stage]}，{gpus} 张 {gb} GB 的 GPU，"
                          f"{act_zh}。能放下的最大微批次（每张 GPU 的序列数）是多少？"))


@template("fsdp_reshard_tradeoff", "dp_zero", S6)
def fsdp_reshard_tradeoff(rng):
    (n, said, said_zh), dp = params(rng), rng.choice(DP)
    keep, reshard = (cost.fsdp_comm_volume(n, dp, r)["total"] for r in (False, True))
    gb = (reshard - keep) / 1e9
    return Ask(f"FSDP trains {said} on {dp} GPUs, bf16 parameters and gradients. Switching "
               f"reshard_after_forward from True to False: how many GB fewer does each GPU "
               f"send per step?", gb, "GB",
               f"True gathers every unit twice (forward, backward) and reduce-scatters once: "
               f"3Ψ(dp-1)/dp; False keeps the forward's weights until backward: 2Ψ(dp-1)/dp. "
               f"The difference is one all-gather, Ψ(dp-1)/dp = {fmt(gb)} GB "
               f"(cost.fsdp_comm_volume; Zhao et al. §3.2.1), paid for by holding every "
               f"unit's full weights from its forward to its backward.",
               prompt_zh=(f"FSDP 在 {dp} 张 GPU 上训练{said_zh}，参数和梯度为 bf16。把 "
                          f"reshard_after_forward 从 True 改为 False，每张 GPU 每步少发送多少 GB？"))


@template("hsdp_cross_node", "dp_zero", S6)
def hsdp_cross_node(rng):
    (n, said, said_zh), nodes, per_node = params(rng), rng.choice((2, 4, 8, 16)), rng.choice((4, 8))
    gb = cost.hsdp_comm_volume(n, per_node, nodes)["inter_node"] / 1e9
    return Ask(f"HSDP trains {said} on {nodes} nodes of {per_node} GPUs: sharded within each "
               f"node, replicated across nodes, bf16 gradients. How many GB does each GPU "
               f"send across nodes per step (ring all-reduce)?", gb, "GB",
               f"Only the all-reduce of each GPU's gradient shard crosses nodes: "
               f"2 · (Ψ/{per_node}) · ({nodes}-1)/{nodes} with Ψ = {fmt(2 * n / 1e9)} GB: "
               f"{fmt(gb)} GB (cost.hsdp_comm_volume; Zhao et al. §3.2.2). The all-gathers and "
               f"reduce-scatters stay on the node's links.",
               prompt_zh=(f"HSDP 在 {nodes} 个节点（每节点 {per_node} 张 GPU）上训练{said_zh}："
                          f"节点内切分，节点间复制，梯度为 bf16。每张 GPU 每步跨节点发送多少 GB（环形 AllReduce）？"))

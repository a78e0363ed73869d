"""Drills on memory and FLOPs: parameters, FLOPs per token, training time, MFU, model
states, activations, "does it fit?" (notebooks 01, 02, 06)."""

from __future__ import annotations

from parlab import cost
from parlab.hardware import GPU_PRESETS, peak_flops
from lessons.common.drills.core import ZERO_STAGE_ZH, Ask, fmt, template

S01_6 = ("01", 6, "ZeRO: stop replicating the model states")
S02_6 = ("02", 6, "Activation memory, measured")
S02_7 = ("02", 7, "Speed: what these CPU ranks can show, and what a GPU node would")
S06_4 = ("06", 4, "At GPU scale: the planner against published runs")

GPUS = ("A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB")


def dense(rng):
    p = cost.MODEL_PRESETS[rng.choice(("1.3B", "7B", "13B", "70B"))]
    n = cost.transformer_params(p.n_layers, p.d_model)
    return p, n, (f"a GPT with L = {p.n_layers} layers, d = {p.d_model}, sequence T = "
                  f"{p.seq_len} (N = 12·L·d² = {fmt(n / 1e9)} billion non-embedding "
                  f"parameters)")


def dense_zh(p, n) -> str:
    """``dense``'s description of the model, in Chinese."""
    return (f"一个 GPT：L = {p.n_layers} 层，d = {p.d_model}，序列长 T = {p.seq_len}"
            f"（N = 12·L·d² = {fmt(n / 1e9)}B 非嵌入参数）")


def gpu_zh(g) -> str:
    """``gpu``'s description of the GPU, in Chinese."""
    return f"{g.name}（bf16 稠密峰值 {fmt(g.peak_tflops['bf16'])} TFLOP/s）"


def gpu(rng):
    g = GPU_PRESETS[rng.choice(GPUS)]
    return g, peak_flops(g, "bf16"), f"{g.name} ({fmt(g.peak_tflops['bf16'])} bf16 TFLOP/s dense peak)"


@template("transformer_params", "memory_flops", S02_7)
def transformer_params(rng):
    L, d = rng.choice((12, 24, 32, 40, 48, 80, 96)), rng.choice((1024, 2048, 4096, 5120, 8192, 12288))
    n = cost.transformer_params(L, d) / 1e9
    return Ask(f"A GPT stack with L = {L} layers of width d = {d} and a 4d MLP: how many "
               f"billion non-embedding parameters (biases and norms ignored)?", n, "billion",
               f"Per layer 4d² (qkv + proj) + 8d² (MLP in + out) = 12d²: 12·{L}·{d}² = "
               f"{fmt(n)} billion (cost.transformer_params; Kaplan et al. Table 1).",
               prompt_zh=f"一个 GPT 堆叠 L = {L} 层、宽度 d = {d}、MLP 为 4d：非嵌入参数有多少十亿（忽略偏置和归一化）？")


@template("flops_per_token", "memory_flops", S02_7)
def flops_per_token(rng):
    p, n, said = dense(rng)
    f = cost.flops_per_token(n, p.n_layers, p.seq_len, p.d_model) / 1e9
    return Ask(f"Training {said}: how many GFLOP per token (matmuls, forward + backward, "
               f"attention scores included)?", f, "GFLOP",
               f"6N + 12·L·T·d = {fmt(6 * n / 1e9)} + {fmt(12 * p.n_layers * p.seq_len * p.d_model / 1e9)}"
               f" = {fmt(f)} GFLOP (cost.flops_per_token; PaLM App. B).",
               prompt_zh=f"训练{dense_zh(p, n)}：每个 token 需要多少 GFLOP（矩阵乘，前向 + 反向，含注意力分数）？")


@template("training_days", "memory_flops", S06_4)
def training_days(rng):
    p, n, said = dense(rng)
    g, peak, gsaid = gpu(rng)
    tokens, n_gpus, u = rng.choice((3e11, 1e12, 2e12, 15e12)), rng.choice((64, 128, 256, 512)), \
        rng.choice((0.35, 0.4, 0.45, 0.5))
    fpt = cost.flops_per_token(n, p.n_layers, p.seq_len, p.d_model)
    days = cost.training_time(tokens * fpt, n_gpus, peak, u) / 86400
    return Ask(f"Training {said} on {fmt(tokens / 1e9)} billion tokens with {n_gpus} {gsaid} "
               f"at {fmt(u * 100)}% MFU, counting 6N + 12·L·T·d FLOPs per token. How many "
               f"days?", days, "days",
               f"{fmt(fpt / 1e9)} GFLOP/token × {fmt(tokens / 1e9)}e9 tokens / ({n_gpus} × "
               f"{fmt(peak / 1e12)} TFLOP/s × {u}) = {fmt(days)} days (cost.flops_per_token, "
               f"cost.training_time).",
               prompt_zh=(f"用 {n_gpus} 张 {gpu_zh(g)} 训练{dense_zh(p, n)}，共 {fmt(tokens / 1e9)}B token，"
                          f"MFU 为 {fmt(u * 100)}%，每个 token 按 6N + 12·L·T·d 次浮点运算计。需要多少天？"))


@template("mfu_from_throughput", "memory_flops", S02_7)
def mfu_from_throughput(rng):
    p, n, said = dense(rng)
    g, peak, gsaid = gpu(rng)
    fpt = cost.flops_per_token(n, p.n_layers, p.seq_len, p.d_model)
    tps = float(f"{peak * rng.uniform(0.25, 0.6) / fpt:.2g}")
    m = cost.mfu(tps, fpt, peak) * 100
    return Ask(f"Training {said} reaches {fmt(tps)} tokens/s per {gsaid}. What is the model "
               f"FLOPs utilisation, counting 6N + 12·L·T·d FLOPs per token?", m, "%",
               f"tokens/s × FLOPs/token / peak = {fmt(tps)} × {fmt(fpt / 1e9)} GFLOP / "
               f"{fmt(peak / 1e12)} TFLOP/s = {fmt(m)}% (cost.mfu; PaLM §4.1).",
               prompt_zh=(f"训练{dense_zh(p, n)}，每张 {gpu_zh(g)} 达到 {fmt(tps)} token/s。"
                          f"按每个 token 6N + 12·L·T·d 次浮点运算计，模型 FLOPs 利用率（MFU）是多少？"))


@template("model_states_bytes", "memory_flops", S01_6)
def model_states_bytes(rng):
    n = rng.choice((13, 70, 130, 300, 700, 1750)) * 10 ** 8
    gb = cost.zero_memory(n, 1, 0)["total"] / 1e9
    return Ask(f"Mixed-precision Adam (bf16 parameters and gradients, fp32 master copy, "
               f"momentum and variance), no sharding: how many GB of model states for a "
               f"{fmt(n / 1e9)}B-parameter model?", gb, "GB",
               f"(2 + 2 + 12) B per parameter × {fmt(n / 1e9)}e9 = {fmt(gb)} GB "
               f"(cost.zero_memory, stage 0; ZeRO §3.1).",
               prompt_zh=(f"混合精度 Adam（bf16 参数和梯度，fp32 主权重副本、一阶矩和二阶矩），不切分："
                          f"一个 {fmt(n / 1e9)}B 参数的模型有多少 GB 模型状态？"))


@template("activation_recompute", "memory_flops", S02_6)
def activation_recompute(rng):
    p = cost.MODEL_PRESETS[rng.choice(("1.3B", "7B", "13B"))]
    b, recompute = rng.choice((1, 2, 4)), rng.choice(cost.RECOMPUTE)
    gb = cost.activation_memory(p.seq_len, b, p.d_model, p.n_heads, p.n_layers, recompute) / 1e9
    expr = {"none": "s·b·h·(34 + 5·a·s/h)", "selective": "s·b·h·34",
            "full": "2·s·b·h (the layer's input)"}[recompute]
    return Ask(f"{p.name}: L = {p.n_layers} layers, h = {p.d_model}, a = {p.n_heads} heads, "
               f"s = {p.seq_len}, micro-batch b = {b}, bf16, activation recomputation "
               f"'{recompute}'. How many GB of activations are kept for backward "
               f"(Korthikanti's GPT layer)?", gb, "GB",
               f"{expr} per layer × {p.n_layers} layers = {fmt(gb)} GB "
               f"(cost.activation_memory; Korthikanti et al. Table 2).",
               prompt_zh=(f"{p.name}：L = {p.n_layers} 层，h = {p.d_model}，a = {p.n_heads} 个头，"
                          f"s = {p.seq_len}，微批次 b = {b}，bf16，激活重计算策略 '{recompute}'。"
                          f"为反向保留的激活有多少 GB（Korthikanti 的 GPT 层）？"))


@template("memory_plan_total", "memory_flops", S01_6)
def memory_plan_total(rng):
    name, n_gpus = rng.choice(("7B", "13B", "70B")), rng.choice((8, 16, 64))
    stage, recompute, b = rng.choice((1, 2, 3)), rng.choice(("selective", "full")), \
        rng.choice((1, 2))
    plan = cost.memory_plan(name, n_gpus, GPU_PRESETS["A100-SXM4-80GB"].memory_gb, stage,
                            recompute, b)
    p = cost.MODEL_PRESETS[name]
    return Ask(f"{p.name} ({fmt(p.n_params)} parameters, {p.n_layers} layers, h = "
               f"{p.d_model}, {p.n_heads} heads, s = {p.seq_len}) with mixed-precision Adam "
               f"(16 B/param), {cost.ZERO_STAGE_NAMES[stage]} over {n_gpus} GPUs, micro-batch "
               f"{b}, '{recompute}' recomputation: GB per GPU for model states + activations?",
               plan["total"] / 1e9, "GB",
               f"{plan['verdict']} (cost.memory_plan).",
               prompt_zh=(f"{p.name}（{fmt(p.n_params)} 个参数，{p.n_layers} 层，h = {p.d_model}，"
                          f"{p.n_heads} 个头，s = {p.seq_len}），混合精度 Adam（16 B/参数），{ZERO_STAGE_ZH[stage]}，"
                          f"{n_gpus} 张 GPU，微批次 {b}，'{recompute}' 重计算：每张 GPU 的模型状态 + 激活共多少 GB？"))

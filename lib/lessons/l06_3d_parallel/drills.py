"""Drills on 3D parallelism: degrees, memory and bubble of a layout, its data-parallel
and pipeline traffic, an iteration's time at GPU scale, the global norm for clipping
(notebook 06)."""

from __future__ import annotations

from parlab import cost
from parlab.hardware import GPU_PRESETS, LINK_PRESETS
from lessons.common.drills.core import ZERO_STAGE_ZH, Ask, fmt, template

S1 = ("06", 1, "The mesh")
S2 = ("06", 2, "Correct first: a 3D run equals one device")  # its "Clipping by the global norm"
S3 = ("06", 3, "Prediction vs measurement: every layout of 8 ranks")
S4 = ("06", 4, "At GPU scale: the planner against published runs")
BUBBLE = ("03", 4, "The bubble, predicted and measured")

N_PARAMS = (7, 13, 70, 175)  # billions: round, so n / (tp pp) stays whole

A100 = GPU_PRESETS["A100-SXM4-80GB"]  # the GPU of Narayanan et al.'s runs


def layout(rng):
    """(n_gpus, tp, pp, dp) with tp inside an 8-GPU node."""
    tp, pp, dp = rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4, 8, 16)), \
        rng.choice((2, 4, 8, 16, 32, 64))
    return tp * pp * dp, tp, pp, dp


@template("dp_degree", "3d", S1)
def dp_degree(rng):
    n, tp, pp, dp = layout(rng)
    d = cost.data_parallel_degree(n, tp, pp)
    return Ask(f"{n} GPUs are laid out as tensor-parallel degree {tp} and pipeline-parallel "
               f"degree {pp}. What is the data-parallel degree?", d, "",
               f"n = dp·tp·pp, so dp = {n}/({tp}·{pp}) = {d} (cost.data_parallel_degree; "
               f"Narayanan et al. §3).", rel_tol=0,
               prompt_zh=f"{n} 张 GPU 按张量并行度 {tp}、流水线并行度 {pp} 排布。数据并行度是多少？")


@template("layout_model_states", "3d", S4)
def layout_model_states(rng):
    n, tp, pp, dp = layout(rng)
    N, stage = rng.choice(N_PARAMS) * 10 ** 9, rng.choice((0, 1))
    m = cost.zero_memory(N // (tp * pp), dp, stage)["total"] / 1e9
    return Ask(f"A {N // 10 ** 9}B-parameter model on tp = {tp}, pp = {pp}, dp = {dp}, "
               f"mixed-precision Adam (2 + 2 + 12 B per parameter), "
               f"{cost.ZERO_STAGE_NAMES[stage]} across the data-parallel replicas. How many GB "
               f"of model states per GPU (weights split evenly over tp·pp)?", m, "GB",
               f"Each GPU owns N/(tp·pp) = {fmt(N / (tp * pp) / 1e9)}e9 parameters; "
               + ("16 B each" if stage == 0 else "4 B each + 12 B / dp of optimizer state")
               + f": {fmt(m)} GB (cost.zero_memory).",
               prompt_zh=(f"一个 {N // 10 ** 9}B 参数的模型，tp = {tp}，pp = {pp}，dp = {dp}，"
                          f"混合精度 Adam（每参数 2 + 2 + 12 B），在数据并行副本间用 {ZERO_STAGE_ZH[stage]}。"
                          f"每张 GPU 有多少 GB 模型状态（权重在 tp·pp 上均分）？"))


@template("layout_bubble", "3d", BUBBLE)
def layout_bubble(rng):
    n, tp, pp, dp = layout(rng)
    pp = max(pp, 2)
    b = rng.choice((1, 2))
    m = rng.choice((4, 8, 16, 32))
    B = m * b * dp
    f = cost.bubble_fraction(pp, m) * 100
    return Ask(f"Global batch {B} sequences, micro-batch {b}, data-parallel degree {dp}, "
               f"pipeline of pp = {pp} stages (1F1B). What share of each step is the "
               f"pipeline bubble?", f, "%",
               f"m = B/(b·dp) = {B}/({b}·{dp}) = {m} micro-batches per replica; "
               f"(pp-1)/(m+pp-1) = {pp - 1}/{m + pp - 1} = {fmt(f)}% (cost.bubble_fraction). "
               f"More dp at a fixed global batch means fewer micro-batches and a bigger bubble.",
               prompt_zh=(f"全局 batch {B} 条序列，微批次 {b}，数据并行度 {dp}，pp = {pp} 级流水线（1F1B）。"
                          f"流水线气泡占每步的多少？"))


@template("layout_grad_sync", "3d", S3)
def layout_grad_sync(rng):
    n, tp, pp, dp = layout(rng)
    N = rng.choice(N_PARAMS) * 10 ** 9
    spec = LINK_PRESETS[rng.choice(("IB-HDR", "IB-NDR"))]
    alpha, bw = spec.latency_us * 1e-6, spec.gb_per_s_per_direction * 1e9
    ms = cost.dp_grad_sync(N // (tp * pp), dp, alpha, bw)["time_s"] * 1e3
    return Ask(f"A {N // 10 ** 9}B model on tp = {tp}, pp = {pp}, dp = {dp}; the data-parallel "
               f"groups cross nodes over {spec.name} (α = {fmt(spec.latency_us)} µs, B = "
               f"{fmt(spec.gb_per_s_per_direction)} GB/s). How many ms does each GPU's bf16 "
               f"gradient all-reduce (ring) take per step, if nothing overlaps it?", ms, "ms",
               f"Ψ = N/(tp·pp) × 2 B = {fmt(2 * N / (tp * pp) / 1e9)} GB; 2(dp-1)·α + "
               f"2(dp-1)/dp·Ψ/B = {fmt(ms)} ms (cost.dp_grad_sync).",
               prompt_zh=(f"一个 {N // 10 ** 9}B 模型，tp = {tp}，pp = {pp}，dp = {dp}；数据并行组跨节点，"
                          f"经 {spec.name}（α = {fmt(spec.latency_us)} µs，B = {fmt(spec.gb_per_s_per_direction)} GB/s）。"
                          f"若无任何重叠，每张 GPU 每步的 bf16 梯度 AllReduce（环形）需要多少 ms？"))


@template("layout_p2p_time", "3d", S3)
def layout_p2p_time(rng):
    n, tp, pp, dp = layout(rng)
    pp, b, s, h = max(pp, 2), rng.choice((1, 2)), rng.choice((2048, 4096)), \
        rng.choice((4096, 8192, 12288))
    m = rng.choice((8, 16, 32))
    spec = LINK_PRESETS[rng.choice(("IB-HDR", "IB-NDR"))]
    alpha, bw = spec.latency_us * 1e-6, spec.gb_per_s_per_direction * 1e9
    ms = cost.pipeline_p2p_time(b, s, h, pp, m, alpha, bw, tp=tp) * 1e3
    return Ask(f"1F1B pipeline, pp = {pp} stages across nodes over {spec.name} (α = "
               f"{fmt(spec.latency_us)} µs, B = {fmt(spec.gb_per_s_per_direction)} GB/s), "
               f"m = {m} micro-batches of b = {b} × s = {s} tokens, h = {h}, bf16, tp = {tp} "
               f"with the scatter/gather optimisation (each TP rank sends 1/tp). Blocking "
               f"sends: how many ms of point-to-point time per step on the critical path?",
               ms, "ms",
               f"2(m + pp - 1) transfers of α + b·s·h·2 B/(tp·B) = {2 * (m + pp - 1)} × "
               f"{fmt(ms / (2 * (m + pp - 1)))} ms = {fmt(ms)} ms (cost.pipeline_p2p_time; "
               f"Narayanan et al. §4.1).",
               prompt_zh=(f"1F1B 流水线，pp = {pp} 个阶段跨节点，经 {spec.name}（α = "
                          f"{fmt(spec.latency_us)} µs，B = {fmt(spec.gb_per_s_per_direction)} GB/s），m = {m} 个微批次，"
                          f"每个 b = {b} × s = {s} 个 token，h = {h}，bf16，tp = {tp} 并采用 scatter/gather 优化"
                          f"（每个 TP rank 只发 1/tp）。阻塞式发送：每步关键路径上有多少 ms 点对点通信时间？"))


@template("iteration_time", "3d", S4)
def iteration_time(rng):
    B, n_gpus = rng.choice((512, 1024, 1536)), rng.choice((384, 768, 1536, 3072))
    u, peak = rng.choice((0.4, 0.45, 0.5)), A100.peak_tflops["bf16"] * 1e12
    gpt3 = cost.LayerShape(12288, 96)
    flops = cost.flops_per_token(gpt3, 96, 2048, vocab_size=51200, count="megatron",
                                 recompute="full") * (B * 2048)
    sec = cost.training_time(flops, n_gpus, peak, u)
    return Ask(f"GPT-3 175B (L = 96, h = 12288, V = 51200, s = 2048), global batch {B}, full "
               f"activation recomputation, on {n_gpus} A100s ({fmt(peak / 1e12)} TFLOP/s bf16) reaching "
               f"{fmt(u * 100)}% of peak. How many seconds per iteration? Count FLOPs as "
               f"Narayanan et al.: 96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h)).", sec, "s",
               f"{fmt(flops / 1e18)} EFLOP per iteration (cost.flops_per_token, count "
               f"'megatron', × B·s) / ({n_gpus} × "
               f"{fmt(peak / 1e12)} TFLOP/s × {u}) = {fmt(sec)} s (cost.training_time).",
               prompt_zh=(f"GPT-3 175B（L = 96，h = 12288，V = 51200，s = 2048），全局 batch {B}，"
                          f"完全激活重计算，在 {n_gpus} 张 A100（bf16 {fmt(peak / 1e12)} TFLOP/s）上达到峰值的 "
                          f"{fmt(u * 100)}%。每次迭代多少秒？按 Narayanan 等人的公式计 FLOPs："
                          f"96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h))。"))


@template("clip_norm_overcount", "3d", S2)
def clip_norm_overcount(rng):
    tp, share = rng.choice((2, 4, 8)), rng.choice((0.1, 0.2, 0.3, 0.4, 0.5))
    dp, mistake = rng.choice((2, 4, 8, 16)), rng.choice(("replicated", "dp", "both"))
    rep, over_dp = mistake != "dp", mistake != "replicated"
    f = cost.clip_norm_overcount(1 - share, share, tp if rep else 1, dp_summed=dp if over_dp else 1)
    wrong, why = [], []
    if rep:
        a = cost.clip_norm_overcount(1 - share, share, tp)
        wrong.append(f"counts the tensors every TP rank holds whole on all {tp} TP ranks")
        why.append(f"the replicated squares R counted t times beside the split ones S: "
                   f"sqrt((S + t·R) / (S + R)) = sqrt({fmt(1 - share)} + {tp}·{fmt(share)}) = {fmt(a)}")
    if over_dp:
        wrong.append(f"also all-reduces the squares over the {dp} data-parallel replicas")
        why.append(f"the replicas hold the same averaged gradient, so the sum over DP counts it "
                   f"{dp} times: ×√{dp} = {fmt(dp ** 0.5)}")
    wrong_zh = ([f"把每个 TP rank 都完整持有的张量在全部 {tp} 个 TP rank 上各算了一遍"] if rep else [])
    wrong_zh += [f"还在 {dp} 个数据并行副本间对平方和做了 AllReduce"] if over_dp else []
    return Ask(f"A tp = {tp}, pp = 4, dp = {dp} run (plain DP) clips by the global gradient norm. "
               f"The layer norms and row-parallel biases, which every TP rank holds whole, carry "
               f"{fmt(share * 100)}% of ||g||². Its norm code {' and '.join(wrong)}. By what factor "
               f"is the norm it computes too large?", f, "x",
               "; ".join(why) + (f"; together {fmt(f)}" if len(why) > 1 else "")
               + " (cost.clip_norm_overcount). The clip factor max_norm/||g|| is that many times "
               "too small: every clipped step comes out that much shorter.",
               prompt_zh=(f"一个 tp = {tp}、pp = 4、dp = {dp} 的训练（普通数据并行）按全局梯度范数裁剪。"
                          f"每个 TP rank 都完整持有的 LayerNorm 和行并行偏置占 ||g||² 的 {fmt(share * 100)}%。"
                          f"它的范数代码{'，并且'.join(wrong_zh)}。算出的范数大了多少倍？"))

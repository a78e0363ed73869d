"""Drills on precision (notebook 07): the formats' ulps and thresholds, bytes per parameter
by recipe and ZeRO stage, the error bound of a bf16 gradient sum, fp8 scaling factors."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S1 = ("07", 1, "The formats")
S2 = ("07", 2, "Why fp32 master weights")
S5 = ("07", 5, "The precision of communication")
S6 = ("07", 6, "FP8")
S7 = ("07", 7, "16 bytes per parameter, byte by byte")


@template("vanishing_update", "precision", S2)
def vanishing_update(rng):
    w, f = rng.choice((0.5, 1.0, 2.0, 4.0, 0.03, 0.25)), rng.choice(("bf16", "fp16"))
    direction = rng.choice(("up", "down"))
    t = cost.vanishing_update(w, f, direction)
    up = direction == "up"
    side = "above" if up else "below"
    binade = ("" if up or cost.vanishing_update(w, f, "up") == t else
              f"; {w:g} is a power of two, so the gap below it is half that")
    return Ask(f"A weight of {w:g} is stored in {f} and updated in place with round-to-nearest. "
               f"What is the largest {'increase' if up else 'decrease'} that leaves it unchanged?",
               t, "", f"{f} has {cost.mantissa_bits(f)} mantissa bits: ulp({w:g}) = "
               f"{fmt(cost.ulp(w, f))} (the gap above){binade}. Half the gap {side}, {fmt(t)}, "
               f"rounds back (cost.vanishing_update).", digits=2,
               prompt_zh=(f"一个值为 {w:g} 的权重以 {f} 存储，用就近舍入原地更新。"
                          f"能让它保持不变的最大{'增量' if up else '减量'}是多少？"))


@template("unit_roundoff", "precision", S1)
def unit_roundoff(rng):
    f = rng.choice(("bf16", "fp16", "e4m3", "e5m2"))
    u = cost.unit_roundoff(f)
    return Ask(f"What is the unit roundoff u (largest relative error of one round-to-nearest) of "
               f"{f}?", u, "", f"u = 2^-(mantissa bits + 1) = 2^-{cost.mantissa_bits(f) + 1} = {fmt(u)} "
               f"(cost.unit_roundoff; Higham §2.1).", digits=2,
               prompt_zh=f"{f} 的单位舍入误差 u（一次就近舍入的最大相对误差）是多少？")


@template("training_bytes", "precision", S7)
def training_bytes(rng):
    n, stage, dp = rng.choice((1.3, 7, 13, 70)), rng.choice((0, 1, 2, 3)), rng.choice((8, 16, 64))
    r = cost.training_bytes(n * 1e9, "bf16_mixed", dp, stage)
    return Ask(f"A {n:g}B-parameter model trains with bf16 mixed precision and Adam (fp32 master "
               f"weights, m and v) on dp = {dp} GPUs with ZeRO stage {stage}. How many GB of model "
               f"states per GPU (no activations)?", r["total"] / 1e9, "GB",
               f"2 + 2 + 12 B per parameter, stage {stage} divides "
               f"{['nothing', 'the 12', 'the 12 and the grads', 'all 16'][stage]} by {dp}: "
               f"{fmt(r['total'] / 1e9)} GB (cost.training_bytes, ZeRO §5).",
               prompt_zh=(f"一个 {n:g}B 参数的模型用 bf16 混合精度和 Adam（fp32 主权重、m 和 v）在 dp = {dp} "
                          f"张 GPU 上训练，ZeRO-{stage}。每张 GPU 有多少 GB 模型状态（不含激活）？"))


@template("allreduce_error", "precision", S5)
def allreduce_error(rng):
    n = rng.choice((8, 32, 64, 128, 200))
    b = cost.summation_error_bound(n, "bf16")
    return Ask(f"A ring all-reduce sums gradients over {n} ranks in bf16, each hop rounding its "
               f"partial sum. What is the bound on |error| / sum|x_i| (gamma_(n-1)), in percent?",
               100 * b, "%", f"gamma_(n-1) = (n-1)u / (1-(n-1)u) with u = 2^-8: {fmt(100 * b)}% "
               f"(cost.summation_error_bound; Higham §4.2).",
               prompt_zh=(f"环形 AllReduce 以 bf16 在 {n} 个 rank 上对梯度求和，每一跳都对部分和做舍入。"
                          f"|误差| / sum|x_i| 的上界（gamma_(n-1)）是百分之几？"))


@template("fp8_scale", "precision", S6)
def fp8_scale(rng):
    amax, f = rng.choice((0.5, 3.0, 12.0, 80.0, 1000.0)), rng.choice(("e4m3", "e5m2"))
    top = {"e4m3": 448.0, "e5m2": 57344.0}[f]
    return Ask(f"Per-tensor current scaling to {f}: a tensor's amax is {amax:g}. By what factor "
               f"is it multiplied before the cast?", top / amax, "x",
               f"s = fp8 max / amax = {top:g} / {amax:g} = {fmt(top / amax)} (the largest value "
               f"lands on {f}'s max, from its bits in cost.FORMATS; Micikevicius et al. 2022).",
               prompt_zh=(f"按张量的实时缩放（current scaling）转为 {f}：张量的 amax 是 {amax:g}。"
                          f"转换前要乘以多大的系数？"))


@template("adam_state_share", "precision", S7)
def adam_state_share(rng):
    recipe = rng.choice(("fp32", "bf16_mixed"))
    b = cost.training_bytes_per_param(recipe)
    share = 100 * (b["master"] + b["adam_m"] + b["adam_v"]) / b["total"]
    return Ask(f"Recipe {recipe} with Adam: what share (%) of the model-state bytes per parameter "
               f"is optimizer state (master copy, m, v)?", share, "%",
               f"{b['master'] + b['adam_m'] + b['adam_v']:g} of {b['total']:g} B "
               f"(cost.training_bytes_per_param): what ZeRO-1 shards first.",
               prompt_zh=(f"配方 {recipe} 加 Adam：每参数的模型状态字节中，优化器状态（主权重副本、m、v）"
                          f"占百分之几？"))

"""Drills on reliability (notebook 08): checkpoint bytes and write time, interruptions per
day, Young's interval, goodput, and what a straggler costs a synchronous step."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S1 = ("08", 1, "Sharded checkpoints with DCP")
S2 = ("08", 2, "Sync and async saves")
S4 = ("08", 4, "Goodput at scale")
S5 = ("08", 5, "Stragglers")

MODELS = (7, 13, 70, 175, 405)


@template("checkpoint_total", "reliability", S2)
def checkpoint_total(rng):
    n, weights = rng.choice(MODELS), rng.choice((0, 2))
    r = cost.checkpoint_bytes(n * 1e9, weights=weights)
    extra = " and the bf16 weights as well" if weights else " (not the bf16 copy of the weights)"
    extra_zh = "，以及 bf16 权重" if weights else "（不含 bf16 权重副本）"
    return Ask(f"A {n}B-parameter model trains with mixed precision and AdamW. Its checkpoint "
               f"holds the fp32 master weights and both fp32 moments{extra}. How many GB is one "
               f"checkpoint?", r["total"] / 1e9, "GB",
               f"{r['per_param']} B per parameter x {n}e9 = {fmt(r['total'] / 1e9)} GB "
               f"(cost.checkpoint_bytes).",
               prompt_zh=(f"一个 {n}B 参数的模型用混合精度和 AdamW 训练。它的检查点保存 fp32 主权重和两个 fp32 "
                          f"动量{extra_zh}。一个检查点多少 GB？"))


@template("checkpoint_per_rank", "reliability", S1)
def checkpoint_per_rank(rng):
    n, dp = rng.choice(MODELS), rng.choice((8, 64, 256, 1024))
    r = cost.checkpoint_bytes(n * 1e9, dp)
    return Ask(f"A {n}B-parameter model, ZeRO-3/FSDP over dp = {dp} ranks, saved with sharded DCP: "
               f"each rank writes only its shard of the fp32 master weights and AdamW's two fp32 "
               f"moments. How many GB does one rank write?", r["per_rank"] / 1e9, "GB",
               f"{r['per_param']} B x {n}e9 / {dp} = {fmt(r['per_rank'] / 1e9)} GB (cost.checkpoint_bytes); "
               f"plus a small .metadata file for the whole checkpoint.",
               prompt_zh=(f"一个 {n}B 参数的模型，ZeRO-3/FSDP，dp = {dp} 个 rank，用分片 DCP 保存："
                          f"每个 rank 只写自己那份 fp32 主权重和 AdamW 的两个 fp32 动量。一个 rank 写多少 GB？"))


@template("checkpoint_write_time", "reliability", S2)
def checkpoint_write_time(rng):
    n, bw = rng.choice(MODELS), rng.choice((10, 50, 100, 500, 2000))
    size = cost.checkpoint_bytes(n * 1e9)["total"]
    c = cost.checkpoint_seconds(size, bw * 1e9)
    return Ask(f"A {n}B-parameter model's checkpoint at 12 B/param (fp32 master weights, AdamW m and "
               f"v: what a resume needs) is written to storage that sustains {bw} GB/s for the whole "
               f"job. How many seconds does a synchronous save stall training?", c, "s",
               f"{fmt(size / 1e12)} TB / {bw} GB/s = {fmt(c)} s (cost.checkpoint_bytes, "
               f"cost.checkpoint_seconds). An async save stalls only for the copy to host memory.",
               prompt_zh=(f"一个 {n}B 参数模型的检查点按每参数 12 B 计（fp32 主权重、AdamW 的 m 和 v："
                          f"恢复训练所需的全部），写入的存储在整个作业期间能持续 {bw} GB/s。"
                          f"一次同步保存让训练停顿多少秒？"))


@template("interruptions_per_day", "reliability", S4)
def interruptions_per_day(rng):
    n, years = rng.choice((2048, 4096, 16384, 32768, 100000)), rng.choice((1, 3, 5, 10))
    per_day = cost.interruptions_per_day(n, years * cost.reliability.HOURS_PER_YEAR)
    return Ask(f"Each GPU fails independently with a mean time between failures of {years} year(s). "
               f"A synchronous job on {n:,} GPUs stops at any failure. How many interruptions per day "
               f"does it expect?", per_day, "",
               f"24 h x {n:,} / ({years} x 8,760 h) = {fmt(per_day)} per day "
               f"(cost.interruptions_per_day). Llama 3 saw 419 unexpected ones in 54 days on 16,384 GPUs.",
               prompt_zh=(f"每张 GPU 独立失效，平均无故障时间（MTBF）为 {years} 年。一个在 {n:,} 张 GPU "
                          f"上运行的同步作业遇到任何一次失效就会中断。它每天预计中断几次？"))


@template("young_interval", "reliability", S4)
def young_interval(rng):
    c, m_h = rng.choice((10, 30, 60, 120, 300)), rng.choice((1, 2, 3, 6, 12))
    tau = cost.young_interval(c, m_h * 3600)
    return Ask(f"A checkpoint stalls training for C = {c} s and the job fails on average every "
               f"{m_h} h. By Young's first-order rule, how many minutes of training should pass "
               f"between checkpoints?", tau / 60, "min",
               f"tau = sqrt(2 C M) = sqrt(2 x {c} x {m_h * 3600}) s = {fmt(tau)} s = {fmt(tau / 60)} min "
               f"(cost.young_interval; Young 1974). Daly's higher-order form differs by under C.",
               prompt_zh=(f"一次检查点让训练停顿 C = {c} s，作业平均每 {m_h} h 失败一次。按 Young 的一阶公式，"
                          f"两次检查点之间应训练多少分钟？"))


@template("goodput", "reliability", S4)
def goodput(rng):
    c, m_h, r = rng.choice((10, 30, 60)), rng.choice((3, 6, 12, 24)), rng.choice((60, 300, 600))
    m = m_h * 3600
    tau = cost.young_interval(c, m)
    g = cost.goodput(tau, c, m, r)["goodput"] * 100
    return Ask(f"Checkpoint stall C = {c} s, job MTBF {m_h} h, restart R = {r} s, and a checkpoint "
               f"every tau = sqrt(2CM) = {tau:,.0f} s. Each failure loses on average tau/2 + C + R. "
               f"What percentage of wall time is useful training (goodput)?", g, "%",
               f"(1 - (tau/2 + C + R)/M) x tau/(tau + C) = {fmt(g)}% (cost.goodput).", rel_tol=0.01,
               prompt_zh=(f"检查点停顿 C = {c} s，作业 MTBF {m_h} h，重启 R = {r} s，每隔 tau = sqrt(2CM) = "
                          f"{tau:,.0f} s 存一次检查点。每次失效平均损失 tau/2 + C + R。墙钟时间中有百分之几是有效训练"
                          f"（goodput）？"))


@template("dp_straggler", "reliability", S5)
def dp_straggler(rng):
    n, t, s = rng.choice((8, 64, 1024)), rng.choice((100, 250, 500)), rng.choice((10, 20, 50))
    computes = [t] * n
    computes[0] = t * (1 + s / 100)
    comm = rng.choice((20, 50))
    step = cost.synchronous_step(computes, comm)
    return Ask(f"Data parallelism on {n} GPUs: each computes its micro-batch in {t} ms, then the "
               f"gradient all-reduce takes {comm} ms once everyone has joined. One GPU runs {s}% slow "
               f"(thermal throttling). How many ms is the step?", step, "ms",
               f"The all-reduce cannot finish before the last rank joins: max compute {fmt(max(computes))} "
               f"ms + {comm} ms = {fmt(step)} ms (cost.synchronous_step): one slow GPU slows all {n}.",
               prompt_zh=(f"在 {n} 张 GPU 上做数据并行：每张用 {t} ms 算完自己的微批次，全部到齐后梯度 "
                          f"AllReduce 再花 {comm} ms。有一张 GPU 慢了 {s}%（过热降频）。一步需要多少 ms？"))


@template("pipeline_straggler", "reliability", S5)
def pipeline_straggler(rng):
    p, m, tf, s = rng.choice((4, 8)), rng.choice((8, 16, 32)), rng.choice((5, 10)), rng.choice((25, 50, 100))
    t = cost.pipeline_time_with_straggler(p, m, tf, 2 * tf, s / 100)
    return Ask(f"A pipeline of p = {p} stages, m = {m} micro-batches, forward {tf} ms and backward "
               f"{2 * tf} ms per micro-batch per stage; one stage is {s}% slower. Counting the slow "
               f"stage's busy time plus one fill and drain through the others, how many ms is the "
               f"step (an upper bound for 1F1B)?", t, "ms",
               f"m (1 + s)(t_f + t_b) + (p - 1)(t_f + t_b) = {fmt(t)} ms "
               f"(cost.pipeline_time_with_straggler); all equal: {fmt((m + p - 1) * 3 * tf)} ms.",
               prompt_zh=(f"p = {p} 级流水线，m = {m} 个微批次，每个阶段每个微批次前向 {tf} ms、反向 "
                          f"{2 * tf} ms；其中一个阶段慢 {s}%。按慢阶段的忙碌时间加上经过其余阶段的一次填充和排空计，"
                          f"一步需要多少 ms（1F1B 的上界）？"))

"""Drills on pipeline parallelism: the bubble (1F1B, interleaved, both normalisations),
micro-batches needed, activations held (1F1B, GPipe, ZB-H2, interleaved; notebook 03)."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S4 = ("03", 4, "The bubble, predicted and measured")
S5 = ("03", 5, "What 1F1B really changes: memory")
S6 = ("03", 6, "Interleaving: a smaller ideal bubble, paid in messages")
S7 = ("03", 7, "Zero bubble: split the backward")

P = (2, 4, 8, 16)
M = (4, 8, 16, 32, 64)


@template("bubble_1f1b", "pp", S4)
def bubble_1f1b(rng):
    p, m = rng.choice(P), rng.choice(M)
    f = cost.bubble_fraction(p, m) * 100
    return Ask(f"A 1F1B pipeline with p = {p} equal stages runs m = {m} micro-batches per "
               f"step (no communication cost). What share of the step's time is each stage "
               f"idle (the bubble)?", f, "%",
               f"(p-1) / (m + p - 1) = {p - 1}/{m + p - 1} = {fmt(f)}% (cost.bubble_fraction). "
               f"GPipe has the same bubble; 1F1B changes the memory, not the idle time.",
               prompt_zh=(f"1F1B 流水线，p = {p} 个等长阶段，每步 m = {m} 个微批次（不计通信）。"
                          f"每个阶段空闲的时间（气泡）占一步的多少？"))


@template("bubble_interleaved", "pp", S6)
def bubble_interleaved(rng):
    p, v = rng.choice(P), rng.choice((2, 3, 4))
    m = p * rng.choice((1, 2, 4, 8))
    f = cost.bubble_fraction(p, m, v) * 100
    return Ask(f"Interleaved 1F1B: p = {p} ranks, each holding v = {v} model chunks, m = {m} "
               f"micro-batches. What share of the step's time is the bubble?", f, "%",
               f"Each fill/drain slot is v times shorter: (p-1)/(v·m + p - 1) = "
               f"{p - 1}/{v * m + p - 1} = {fmt(f)}% (cost.bubble_fraction; Narayanan et al. "
               f"§2.2.2 give it over the ideal time, (p-1)/(v·m)), paid for with v times "
               f"more point-to-point messages.",
               prompt_zh=(f"交错式 1F1B：p = {p} 个 rank，每个持有 v = {v} 个模型块，m = {m} 个微批次。"
                          f"气泡占一步时间的多少？"))


@template("micro_batches_for_bubble", "pp", S4)
def micro_batches_for_bubble(rng):
    p, target, v = rng.choice(P[1:]), rng.choice((0.05, 0.1, 0.2, 0.25)), rng.choice((1, 1, 2))
    m = cost.min_micro_batches(p, target, v)
    sched = "1F1B" if v == 1 else f"interleaved 1F1B with v = {v} chunks per rank"
    sched_zh = "1F1B" if v == 1 else f"交错式 1F1B，每个 rank v = {v} 个模型块"
    return Ask(f"{sched}, p = {p} stages: what is the smallest number of micro-batches m that "
               f"keeps the bubble (idle share of the step) at or under {fmt(target * 100)}%?",
               m, "",
               f"(p-1)/(v·m + p - 1) <= x  <=>  m >= (p-1)(1-x)/(v·x) = "
               f"{fmt((p - 1) * (1 - target) / (v * target))}, rounded up: {m} "
               f"(cost.min_micro_batches).", rel_tol=0,
               prompt_zh=(f"{sched_zh}，p = {p} 个阶段：要让气泡（一步中的空闲占比）不超过 {fmt(target * 100)}%，"
                          f"最少需要多少个微批次 m？"))


@template("peak_activations", "pp", S5)
def peak_activations(rng):
    sched, p = rng.choice(("gpipe", "1f1b")), rng.choice(P[1:])
    m, stage = rng.choice(M), rng.randrange(p)
    k = cost.pipeline_peak_activations(sched, p, m, stage)
    name = "GPipe" if sched == "gpipe" else "1F1B"
    return Ask(f"{name} schedule, p = {p} stages, m = {m} micro-batches. At its peak, how "
               f"many micro-batches' activations does stage {stage} (0 = first) hold?", k, "",
               (f"GPipe runs all m forwards before any backward: m = {m}." if sched == "gpipe"
                else f"1F1B lets stage s run at most p - s forwards ahead of its backwards: "
                     f"min(m, p - s) = min({m}, {p - stage}) = {k}.")
               + " (cost.pipeline_peak_activations)", rel_tol=0,
               prompt_zh=(f"{name} 调度，p = {p} 个阶段，m = {m} 个微批次。峰值时阶段 {stage}（0 为第一个）"
                          f"持有多少个微批次的激活？"))


@template("bubble_ratio", "pp", S4)
def bubble_ratio(rng):
    p, m, v = rng.choice(P), rng.choice(M), rng.choice((1, 1, 2))
    if v > 1:
        m = p * max(1, m // p)
    r = cost.bubble_ratio(p, m, v) * 100
    sched = "1F1B" if v == 1 else f"interleaved 1F1B (v = {v})"
    sched_zh = "1F1B" if v == 1 else f"交错式 1F1B（v = {v}）"
    return Ask(f"Narayanan et al. quote the bubble relative to the ideal (bubble-free) time. "
               f"{sched}, p = {p}, m = {m}: bubble time as a percentage of the ideal time?",
               r, "%",
               f"(p-1)/(v·m) = {p - 1}/{v * m} = {fmt(r)}% (cost.bubble_ratio). The share of "
               f"the whole step is smaller: (p-1)/(v·m + p - 1) = "
               f"{fmt(cost.bubble_fraction(p, m, v) * 100)}%.",
               prompt_zh=(f"Narayanan 等人把气泡表示为相对理想（无气泡）时间的比例。{sched_zh}，p = {p}，m = {m}："
                          f"气泡时间占理想时间的百分之几？"))


@template("gpipe_vs_1f1b_memory", "pp", S5)
def gpipe_vs_1f1b_memory(rng):
    p = rng.choice(P[1:])
    m = p * rng.choice((2, 4, 8))
    g, f = (cost.pipeline_peak_activations(s, p, m) for s in ("gpipe", "1f1b"))
    return Ask(f"p = {p} stages, m = {m} micro-batches. How many times more activation memory "
               f"does the first stage hold at its peak under GPipe than under 1F1B?", g / f, "x",
               f"GPipe holds all m = {g}; 1F1B at most p = {f} on the first stage: "
               f"{fmt(g / f)}x (cost.pipeline_peak_activations). Same bubble, less memory.",
               prompt_zh=(f"p = {p} 个阶段，m = {m} 个微批次。峰值时第一个阶段在 GPipe 下持有的激活显存"
                          f"是 1F1B 下的多少倍？"))



@template("zb_h2_memory", "pp", S7)
def zb_h2_memory(rng):
    p = rng.choice(P[1:])
    m = p * rng.choice((2, 4, 8))
    z, f = (cost.pipeline_peak_activations(s, p, m) for s in ("zb-h2", "1f1b"))
    return Ask(f"ZB-H2 removes the bubble by running more forwards in the warm-up. p = {p} "
               f"stages, m = {m} micro-batches: how many times 1F1B's activation memory does "
               f"the first stage hold at its peak?", z / f, "x",
               f"ZB-H2 holds up to 2p - 1 = {z} micro-batches (Qi et al. §2.3, Table 2), "
               f"1F1B p = {f}: "
               f"{fmt(z / f)}x (cost.pipeline_peak_activations); idle per rank drops from "
               f"(p-1)(T_F+T_B+T_W) to (p-1)(T_F+T_B-2T_W), zero at equal times.",
               prompt_zh=(f"ZB-H2 在预热阶段多跑一些前向来消除气泡。p = {p} 个阶段，m = {m} 个微批次："
                          f"峰值时第一个阶段持有的激活显存是 1F1B 的多少倍？"))


@template("interleaved_memory", "pp", S6)
def interleaved_memory(rng):
    p, v = rng.choice(P), rng.choice((2, 3, 4))
    x = cost.interleaved_memory_factor(p, v)
    return Ask(f"Interleaved 1F1B, p = {p} ranks with v = {v} chunks each, many micro-batches. "
               f"How many times 1F1B's activation memory does rank 0 hold at its peak?", x, "x",
               f"Its warm-up runs 2(p-1) + (v-1)p chunk forwards, plus one: (v+1)p - 1 = "
               f"{(v + 1) * p - 1} chunks of 1/v of the rank, over 1F1B's p: 1 + (p-1)/(p·v) = "
               f"{fmt(x)}x (cost.interleaved_memory_factor).",
               prompt_zh=(f"交错式 1F1B，p = {p} 个 rank，每个 v = {v} 个模型块，微批次很多。"
                          f"峰值时 rank 0 持有的激活显存是 1F1B 的多少倍？"))

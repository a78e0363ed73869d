"""Drills on collectives: ring bytes and steps, the alpha-beta model, bus bandwidth
(notebook 00)."""

from __future__ import annotations

from parlab import cost
from parlab.hardware import LINK_PRESETS
from lessons.common.drills.core import Ask, fmt, template

S2 = ("00", 2, "The collectives")
S3 = ("00", 3, "The ring all-reduce, by hand")
S4 = ("00", 4, "Bytes per rank: naive vs ring")
S5 = ("00", 5, "How fast does this machine move bytes? The α-β model")
S7 = ("00", 7, "Interview corner")

SIZES_GB = (0.5, 1, 2, 4, 6, 13.5, 26, 140)  # bf16 gradients of 0.25B .. 70B parameters
SIZES_MB = (1, 4, 16, 64, 256, 1024)
RANKS = (2, 4, 8, 16, 32, 64, 128)
LINKS = ("NVLink3", "NVLink4", "PCIe4-x16", "IB-HDR", "IB-NDR", "100GbE")


def link(rng):
    """(name, alpha in s, bandwidth in B/s, how the prompt states it, in English and Chinese)."""
    spec = LINK_PRESETS[rng.choice(LINKS)]
    alpha, bw = spec.latency_us * 1e-6, spec.gb_per_s_per_direction * 1e9
    return spec.name, alpha, bw, (f"{spec.name} (α = {fmt(spec.latency_us)} µs per message, "
                                  f"B = {fmt(spec.gb_per_s_per_direction)} GB/s per direction)"), \
        (f"{spec.name}（每条消息 α = {fmt(spec.latency_us)} µs，"
         f"单向带宽 B = {fmt(spec.gb_per_s_per_direction)} GB/s）")


@template("ring_all_reduce_bytes", "collectives", S4)
def ring_all_reduce_bytes(rng):
    S, n = rng.choice(SIZES_GB), rng.choice(RANKS)
    sent = cost.collective_bytes("all_reduce", S * 1e9, n) / 1e9
    return Ask(f"A ring all-reduce of a {fmt(S)} GB buffer runs on {n} ranks. How many GB "
               f"does each rank send?", sent, "GB",
               f"Reduce-scatter then all-gather, each n-1 steps of S/n: 2(n-1)/n · S = "
               f"2·{n - 1}/{n} · {fmt(S)} GB = {fmt(sent)} GB (cost.collective_bytes). It tends "
               f"to 2S as n grows: the bytes per rank hardly depend on n.",
               prompt_zh=f"在 {n} 个 rank 上对 {fmt(S)} GB 的缓冲区做环形 AllReduce，每个 rank 发送多少 GB？")


@template("naive_all_reduce_bytes", "collectives", S4)
def naive_all_reduce_bytes(rng):
    S, n = rng.choice(SIZES_GB), rng.choice(RANKS[1:])
    rank = rng.choice((0, rng.randrange(1, n)))
    sent = cost.collective_bytes("all_reduce", S * 1e9, n, "naive", rank) / 1e9
    who = "rank 0 (the root)" if rank == 0 else f"rank {rank} (not the root)"
    who_zh = "rank 0（根节点）" if rank == 0 else f"rank {rank}（非根节点）"
    return Ask(f"A naive all-reduce (everyone sends its {fmt(S)} GB buffer to rank 0, which "
               f"adds them up and sends the sum back to each) runs on {n} ranks. How many GB "
               f"does {who} send?", sent, "GB",
               f"The root sends the result to each of the n-1 others: (n-1)·S = {n - 1} · "
               f"{fmt(S)} GB; every other rank sends its buffer once: S. Here {fmt(sent)} GB "
               f"(cost.collective_bytes with algorithm='naive'). The root's link grows with n; "
               f"the ring's 2(n-1)/n·S does not.",
               prompt_zh=(f"朴素 AllReduce（每个 rank 把自己 {fmt(S)} GB 的缓冲区发给 rank 0，由它求和后再把结果发回每个 rank）"
                          f"在 {n} 个 rank 上运行。{who_zh}发送多少 GB？"))


@template("ring_steps", "collectives", S3)
def ring_steps(rng):
    op, n = rng.choice(("all_reduce", "all_gather", "reduce_scatter")), rng.choice(RANKS)
    steps = cost.collective_steps(op, n)
    return Ask(f"How many sequential message steps (each paying the latency α once) does a "
               f"ring {op.replace('_', '-')} take on {n} ranks?", steps, "",
               f"Ring reduce-scatter and all-gather take n-1 steps each; an all-reduce is "
               f"both, 2(n-1). Here {steps} (cost.collective_steps): the latency term grows "
               f"linearly with n, the bandwidth term does not.", rel_tol=0,
               prompt_zh=f"环形 {op.replace('_', '-')} 在 {n} 个 rank 上需要多少个串行的消息步（每步付一次延迟 α）？")


@template("all_reduce_time", "collectives", S5)
def all_reduce_time(rng):
    S, n = rng.choice(SIZES_MB), rng.choice((4, 8, 16, 32))
    name, alpha, bw, said, said_zh = link(rng)
    t = cost.collective_time("all_reduce", S * 1e6, n, alpha, bw) * 1e3
    return Ask(f"In the α-β model, how long does a ring all-reduce of {fmt(S)} MB take on "
               f"{n} ranks linked by {said}?", t, "ms",
               f"2(n-1)·α + 2(n-1)/n · S/B = {2 * (n - 1)}·{fmt(alpha * 1e6)} µs + "
               f"{fmt(2 * (n - 1) / n)} · {fmt(S)} MB / {fmt(bw / 1e9)} GB/s = {fmt(t)} ms "
               f"(cost.collective_time).",
               prompt_zh=f"按 α-β 模型，{n} 个 rank 经 {said_zh} 相连，对 {fmt(S)} MB 做环形 AllReduce 需要多少时间？")


@template("gather_scatter_bytes", "collectives", S4)
def gather_scatter_bytes(rng):
    op, S, n = rng.choice(("all_gather", "reduce_scatter")), rng.choice(SIZES_MB), \
        rng.choice(RANKS)
    sent = cost.collective_bytes(op, S * 1e6, n) / 1e6
    what = (f"an all-gather whose output (the whole gathered tensor) is {fmt(S)} MB"
            if op == "all_gather" else
            f"a reduce-scatter whose input (the whole tensor each rank starts with) is "
            f"{fmt(S)} MB")
    what_zh = (f"一次输出（拼好的完整张量）为 {fmt(S)} MB 的 AllGather" if op == "all_gather" else
               f"一次输入（每个 rank 起始持有的完整张量）为 {fmt(S)} MB 的 ReduceScatter")
    return Ask(f"With the ring algorithm on {n} ranks, how many MB does each rank send in "
               f"{what}?", sent, "MB",
               f"n-1 steps of one S/n chunk: (n-1)/n · S = {n - 1}/{n} · {fmt(S)} MB = "
               f"{fmt(sent)} MB (cost.collective_bytes) -- half an all-reduce, which is one "
               f"of each.",
               prompt_zh=f"在 {n} 个 rank 上用环形算法做{what_zh}，每个 rank 发送多少 MB？")


@template("ring_tree_crossover", "collectives", S5)
def ring_tree_crossover(rng):
    n = rng.choice((8, 16, 32, 64))
    name, alpha, bw, said, said_zh = link(rng)
    s = cost.ring_tree_crossover(n, alpha, bw) / 1e6
    return Ask(f"{n} ranks linked by {said}. A ring all-reduce costs 2(n-1)·α + 2(n-1)/n·S/B; "
               f"a two-tree all-reduce 2·log2(n)·α + 2·S/B. Below what message size S does "
               f"the tree win?", s, "MB",
               f"Equate the two: S* = n (n - 1 - log2 n) α B = {n}·{n - 1 - n.bit_length() + 1}"
               f"·{fmt(alpha * 1e6)} µs·{fmt(bw / 1e9)} GB/s = {fmt(s)} MB "
               f"(cost.ring_tree_crossover). Small messages are latency-bound (the tree's "
               f"log2 n steps win), large ones bandwidth-bound (the ring's (n-1)/n wins).",
               prompt_zh=(f"{n} 个 rank 经 {said_zh} 相连。环形 AllReduce 耗时 2(n-1)·α + 2(n-1)/n·S/B；"
                          f"双二叉树 AllReduce 耗时 2·log2(n)·α + 2·S/B。消息大小 S 小于多少时树算法更快？"))


@template("bus_bandwidth", "collectives", S7)
def bus_bandwidth(rng):
    S, n = rng.choice(SIZES_MB[2:]), rng.choice((4, 8, 16))
    name, alpha, bw, _, _ = link(rng)
    ms = float(f"{cost.collective_time('all_reduce', S * 1e6, n, alpha, bw) * 1e3 * rng.uniform(1.1, 1.8):.3g}")
    busbw = cost.bus_bandwidth("all_reduce", S * 1e6, n, ms * 1e-3) / 1e9
    return Ask(f"nccl-tests reports an all-reduce of {fmt(S)} MB on {n} GPUs taking "
               f"{fmt(ms)} ms. What is its bus bandwidth (busbw)?", busbw, "GB/s",
               f"algbw = S / t = {fmt(S)} MB / {fmt(ms)} ms; busbw = algbw · 2(n-1)/n = "
               f"{fmt(busbw)} GB/s (cost.bus_bandwidth): the bandwidth each link carried in a "
               f"ring, comparable with the link's peak.",
               prompt_zh=(f"nccl-tests 报告在 {n} 张 GPU 上对 {fmt(S)} MB 做 AllReduce 耗时 {fmt(ms)} ms。"
                          f"它的总线带宽（busbw）是多少？"))

"""Drills on context parallelism: ring attention and Ulysses bytes, Ulysses' head cap,
the causal imbalance of contiguous shards, attention memory per rank (notebook 05)."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S4 = ("05", 4, "Balance: work per rank, counted")
S6 = ("05", 6, "Bytes per rank per layer: ring, Ulysses, Megatron SP")
S7 = ("05", 7, "Memory of one attention call, against the sequence length")

CP = (2, 4, 8, 16)


def said_zh(b, s, h, cp) -> str:
    """``shape``'s description, in Chinese."""
    return f"微批次 b = {b}，序列 s = {s}，隐藏维 h = {h}，cp = {cp}"


def shape(rng):
    b, s = rng.choice((1, 2)), rng.choice((32768, 65536, 131072))
    h, cp = rng.choice((2048, 4096, 8192)), rng.choice(CP)
    return b, s, h, cp, f"micro-batch b = {b}, sequence s = {s}, hidden h = {h}, cp = {cp}"


@template("ring_attention_bytes", "cp", S6)
def ring_attention_bytes(rng):
    b, s, h, cp, said = shape(rng)
    r = cost.cp_comm_per_layer(b, s, h, cp, "ring")
    mb = r["bytes"] / 1e6
    return Ask(f"Ring attention, bf16, no grouped-query attention, {said}. K and V blocks "
               f"travel round the ring in forward; in backward K, V and their gradients dK, "
               f"dV do, the gradients one hop more to get home. How many MB does each rank "
               f"send for one attention layer per training step?", mb, "MB",
               f"One message = K and V shards, 2·b·(s/cp)·h·2 B = "
               f"{fmt(r['message_bytes'] / 1e6)} MB; forward cp-1 = {cp - 1} messages, "
               f"backward 2cp-1 = {2 * cp - 1}: (3cp-2) × = {fmt(mb)} MB "
               f"(cost.cp_comm_per_layer, ring; Liu et al. Alg. 1).",
               prompt_zh=(f"环形注意力（Ring Attention），bf16，不用分组查询注意力（GQA），{said_zh(b, s, h, cp)}。"
                          f"前向时 K、V 块沿环传递；反向时 K、V 及其梯度 dK、dV 都要传，梯度还要多走一跳回到原处。"
                          f"每个 rank 每个训练步为一个注意力层发送多少 MB？"))


@template("ulysses_bytes", "cp", S6)
def ulysses_bytes(rng):
    b, s, h, cp, said = shape(rng)
    r = cost.cp_comm_per_layer(b, s, h, cp, "ulysses")
    mb = r["bytes"] / 1e6
    return Ask(f"DeepSpeed-Ulysses, bf16, no grouped-query attention, {said}: all-to-alls "
               f"move q, k, v from sequence to head shards and the output back (4 in "
               f"forward, 4 in backward). How many MB does each rank send for one attention "
               f"layer per training step?", mb, "MB",
               f"Each all-to-all sends (cp-1)/cp of the local M = b·(s/cp)·h·2 B = "
               f"{fmt(r['message_bytes'] / 1e6)} MB: 8·(cp-1)/cp·M = {fmt(mb)} MB "
               f"(cost.cp_comm_per_layer, ulysses; Jacobs et al.). It shrinks as 1/cp; "
               f"the ring's does not.",
               prompt_zh=(f"DeepSpeed-Ulysses，bf16，不用 GQA，{said_zh(b, s, h, cp)}：All-to-All 把 q、k、v 从序列分片"
                          f"换成头分片，再把输出换回来（前向 4 次，反向 4 次）。每个 rank 每个训练步为一个注意力层"
                          f"发送多少 MB？"))


@template("ulysses_max_degree", "cp", S6)
def ulysses_max_degree(rng):
    heads, gpus = rng.choice((12, 24, 32, 40, 48, 64, 96)), rng.choice((16, 32, 64, 128))

    def allowed(cp):
        try:
            cost.cp_comm_per_layer(1, 4096, heads * 128, cp, "ulysses", n_heads=heads)
            return True
        except ValueError:
            return False
    best = max(cp for cp in range(1, gpus + 1) if allowed(cp))
    return Ask(f"A model with {heads} attention heads (no grouped-query attention) and up to "
               f"{gpus} GPUs for context parallelism: what is the largest Ulysses degree cp "
               f"you can use?", best, "",
               f"Ulysses gives each rank whole heads, so cp must divide the {heads} heads "
               f"(cost.cp_comm_per_layer refuses others): the largest divisor <= {gpus} is "
               f"{best}. Ring attention has no such cap.", rel_tol=0,
               prompt_zh=(f"一个有 {heads} 个注意力头（无 GQA）的模型，最多有 {gpus} 张 GPU 可用于上下文并行："
                          f"能用的最大 Ulysses 并行度 cp 是多少？"))


@template("contiguous_imbalance", "cp", S4)
def contiguous_imbalance(rng):
    cp = rng.choice((2, 3, 4, 8, 16))
    w = cost.causal_work_per_rank(cp, "contiguous")
    return Ask(f"Causal attention, the sequence cut into cp = {cp} contiguous shards. The "
               f"slowest rank sets the pace: how many times the mean work does the busiest "
               f"rank do?", w["imbalance"], "x",
               f"Rank r needs r+1 blocks (r full, its own triangular): the last does {cp}, "
               f"the mean is (cp+1)/2 = {fmt(w['mean'])}: 2cp/(cp+1) = {fmt(w['imbalance'])} "
               f"(cost.causal_work_per_rank). Zig-zag shards make it 1.",
               prompt_zh=(f"因果注意力，序列切成 cp = {cp} 个连续分片。最慢的 rank 决定速度：最忙的 rank "
                          f"的工作量是平均值的多少倍？"))


@template("last_rank_share", "cp", S4)
def last_rank_share(rng):
    cp = rng.choice((2, 4, 8, 16))
    w = cost.causal_work_per_rank(cp, "contiguous")
    share = w["share"][-1] * 100
    return Ask(f"Causal attention, contiguous shards over cp = {cp} ranks. What share of the "
               f"whole attention work (blocks of (s/cp)² scores, masked ones counted) does "
               f"the last rank do?", share, "%",
               f"It needs all {cp} blocks of its row; all ranks together cp(cp+1)/2 = "
               f"{fmt(w['total'])}: {fmt(share)}% (cost.causal_work_per_rank).",
               prompt_zh=(f"因果注意力，连续分片，cp = {cp} 个 rank。最后一个 rank 承担全部注意力工作"
                          f"（按 (s/cp)² 个分数的块计，被掩掉的也算）的多少？"))


@template("attention_memory", "cp", S7)
def attention_memory(rng):
    b, s, h, cp, said = shape(rng)
    heads, method = h // 128, rng.choice(("ring", "ulysses"))
    gb = cost.attention_memory_per_rank(s, b, heads, 128, cp, method) / 1e9
    how = ("ring attention: one block of scores b·a·(s/cp)² at a time plus six blocks "
           "(q, current K, V, incoming K, V, output) of b·(s/cp)·a·d_head" if method == "ring"
           else "Ulysses: the full s × s scores for a/cp heads plus q, k, v and output "
                "gathered over the whole sequence for those heads, 4·b·s·(a/cp)·d_head")
    how_zh = ("环形注意力：同一时刻一块分数 b·a·(s/cp)²，外加六块（q、当前 K、V、收到的 K、V、输出）"
              "各 b·(s/cp)·a·d_head" if method == "ring" else
              "Ulysses：a/cp 个头的完整 s × s 分数，外加这些头在整条序列上的 q、k、v 和输出，"
              "4·b·s·(a/cp)·d_head")
    return Ask(f"Without a fused kernel, bf16, {said}, {heads} heads of 128. Count {how}. "
               f"How many GB is one attention call's working set on one rank?", gb, "GB",
               f"= {fmt(gb)} GB (cost.attention_memory_per_rank). The score term falls as "
               f"1/cp² for the ring and 1/cp for Ulysses; FlashAttention removes it.",
               prompt_zh=(f"不用融合算子，bf16，{said_zh(b, s, h, cp)}，{heads} 个头、每头 128 维。计入{how_zh}。"
                          f"一次注意力调用在一个 rank 上的工作集是多少 GB？"))


@template("ring_messages", "cp", S6)
def ring_messages(rng):
    cp = rng.choice((2, 3, 4, 8, 16))
    n = cost.cp_comm_per_layer(1, 4096, 1024, cp, "ring")["messages"]
    return Ask(f"Ring attention over cp = {cp} ranks: how many point-to-point messages does "
               f"each rank send for one attention layer per training step (forward + "
               f"backward, K/V travelling together, dK/dV one hop more to get home)?", n, "",
               f"Forward cp-1, backward cp-1 (K, V) + cp (dK, dV), sent together in one "
               f"message each where they share a hop: 3cp-2 = {n} (cost.cp_comm_per_layer).",
               rel_tol=0,
               prompt_zh=(f"cp = {cp} 个 rank 上的环形注意力：每个 rank 每个训练步为一个注意力层发送多少条"
                          f"点对点消息（前向 + 反向；K/V 一起传，dK/dV 多走一跳回到原处）？"))

"""Drills on Mixture of Experts and expert parallelism: capacity, all-to-all bytes,
total vs active parameters, FLOPs per token, and §8's variants: fine-grained + shared
experts, expert choice, dropless padding (notebook 04)."""

from __future__ import annotations

from parlab import cost
from lessons.common.drills.core import Ask, fmt, template

S1 = ("04", 1, "Routing a batch: top-k, capacity, drops")
S4 = ("04", 4, "All-to-all bytes per rank per layer")
S6 = ("04", 6, "Try it")
S7 = ("04", 7, "EP vs TP: what each sends per layer")
S8 = ("04", 8, "Beyond top-k: shared experts, expert choice, dropless")


@template("expert_capacity", "moe_ep", S1)
def expert_capacity(rng):
    tokens, E = rng.choice((1024, 2048, 4096, 8192)), rng.choice((8, 16, 64, 128))
    cf, k = rng.choice((1.0, 1.25, 1.5, 2.0)), rng.choice((1, 2))
    c = cost.expert_capacity(tokens, E, cf, k)
    return Ask(f"A batch of {tokens} tokens is routed top-{k} to {E} experts with capacity "
               f"factor {cf}. How many assignments can one expert take (rounded down)?", c, "",
               f"floor(tokens · k / E · cf) = floor({tokens}·{k}/{E}·{cf}) = {c} "
               f"(cost.expert_capacity; Switch §2.2, eq. 3, GShard's 2N/E for top-2). Beyond it, "
               f"assignments are dropped and the token passes on through the residual.",
               rel_tol=0,
               prompt_zh=(f"一个 batch 的 {tokens} 个 token 以 top-{k} 路由到 {E} 个专家，容量因子 {cf}。"
                          f"一个专家最多能接收多少个分配（向下取整）？"))


def _a2a(rng):
    tokens, d = rng.choice((2048, 4096, 8192, 16384)), rng.choice((2048, 4096, 6144))
    return tokens, d, rng.choice((1, 2)), rng.choice((2, 4, 8, 16))


@template("moe_all_to_all_bytes", "moe_ep", S4)
def moe_all_to_all_bytes(rng):
    tokens, d, k, ep = _a2a(rng)
    r = cost.moe_all_to_all_bytes(tokens, d, k, ep, bytes_per_value=2)
    mb = r["total"] / 1e6
    return Ask(f"Expert parallelism over ep = {ep} ranks, experts spread evenly, routing "
               f"balanced and nothing dropped. A rank holds {tokens} tokens of width "
               f"d = {d} (bf16), each sent to top-{k} experts. How many MB does it send in one "
               f"MoE layer's all-to-alls per training step (forward + backward)?", mb, "MB",
               f"Remote assignments: tokens·k·(ep-1)/ep rows of d·2 B = "
               f"{fmt(r['dispatch'] / 1e6)} MB per all-to-all; dispatch + combine forward, the "
               f"same two backward: 4 × = {fmt(mb)} MB (cost.moe_all_to_all_bytes).",
               prompt_zh=(f"专家并行，ep = {ep} 个 rank，专家均匀分布，路由均衡且不丢 token。一个 rank 持有 "
                          f"{tokens} 个宽度 d = {d}（bf16）的 token，每个发往 top-{k} 个专家。一个 MoE 层每个训练步"
                          f"（前向 + 反向）的 All-to-All 中它发送多少 MB？"))


@template("moe_dispatch_skewed", "moe_ep", S4)
def moe_dispatch_skewed(rng):
    tokens, d, k, ep = _a2a(rng)
    remote = rng.choice((0.25, 0.5, 0.6, 0.75, 0.9))
    mb = cost.moe_all_to_all_bytes(tokens, d, k, ep, 2, remote)["dispatch"] / 1e6
    return Ask(f"A rank holds {tokens} tokens of width d = {d} (bf16), routed top-{k}; "
               f"{fmt(remote * 100)}% of the assignments go to experts on other ranks. How "
               f"many MB does it send in the forward dispatch all-to-all alone?", mb, "MB",
               f"tokens · k · remote share · d · 2 B = {tokens}·{k}·{remote}·{d}·2 = {fmt(mb)} "
               f"MB (cost.moe_all_to_all_bytes' dispatch). Rows for this rank's own experts "
               f"never leave it.",
               prompt_zh=(f"一个 rank 持有 {tokens} 个宽度 d = {d}（bf16）的 token，top-{k} 路由；其中 "
                          f"{fmt(remote * 100)}% 的分配发往其他 rank 上的专家。仅前向分发（dispatch）的 All-to-All "
                          f"它发送多少 MB？"))


def _moe_shape(rng):
    L, d = rng.choice((24, 32, 56)), rng.choice((4096, 6144))
    d_ff, E, k = rng.choice((14336, 16384)), rng.choice((8, 16)), rng.choice((1, 2))
    heads = d // 128
    r = cost.moe_params(L, d, d_ff, E, k, heads, 8, 32000, gated=True)
    said = (f"A decoder-only MoE: {L} layers, d = {d}, every layer {E} SwiGLU experts of "
            f"d_ff = {d_ff} (3·d·d_ff weights each), top-{k}, {heads} heads with 8 KV heads "
            f"(attention 2d² + 2d·d_kv, d_kv = d·8/{heads}), a router d·E, 2 RMSNorms per "
            f"layer, untied embeddings of a 32000 vocabulary (2·V·d) and a final norm")
    said_zh = (f"一个仅解码器的 MoE：{L} 层，d = {d}，每层 {E} 个 d_ff = {d_ff} 的 SwiGLU 专家"
               f"（每个 3·d·d_ff 个权重），top-{k}，{heads} 个头、8 个 KV 头（注意力 2d² + 2d·d_kv，"
               f"d_kv = d·8/{heads}），路由器 d·E，每层 2 个 RMSNorm，词表 32000 的非共享嵌入"
               f"（2·V·d）和最后一个归一化层")
    return r, said, said_zh


@template("moe_active_params", "moe_ep", S7)
def moe_active_params(rng):
    r, said, said_zh = _moe_shape(rng)
    b = r["active"] / 1e9
    return Ask(f"{said}. How many billion parameters does one token use (active)?", b,
               "billion",
               f"Everything shared + top-k experts per layer: {fmt(b)} billion of "
               f"{fmt(r['total'] / 1e9)} billion (cost.moe_params; Mixtral 8x7B: 12.9 of 46.7).",
               prompt_zh=f"{said_zh}。一个 token 用到（激活）的参数有多少十亿？")


@template("moe_total_over_active", "moe_ep", S7)
def moe_total_over_active(rng):
    r, said, said_zh = _moe_shape(rng)
    x = r["total"] / r["active"]
    return Ask(f"{said}. How many times the active parameters (used by one token) are the "
               f"total parameters (stored and trained)?", x, "x",
               f"total {fmt(r['total'] / 1e9)} B / active {fmt(r['active'] / 1e9)} B = {fmt(x)} "
               f"(cost.moe_params): memory pays for all experts, compute for top-k.",
               prompt_zh=f"{said_zh}。总参数（存储并训练的）是激活参数（一个 token 用到的）的多少倍？")


@template("moe_flops_per_token", "moe_ep", S6)
def moe_flops_per_token(rng):
    d, d_ff = rng.choice((2048, 4096, 6144)), rng.choice((8192, 14336, 16384))
    E, k, gated = rng.choice((8, 16, 64)), rng.choice((1, 2)), rng.random() < 0.5
    g = cost.moe_flops_per_token(d, d_ff, E, k, gated=gated) / 1e9
    mlp = "SwiGLU (3 matrices)" if gated else "two-matrix (up, down)"
    mlp_zh = "SwiGLU（3 个矩阵）" if gated else "两矩阵（up、down）"
    return Ask(f"One MoE layer: d = {d}, {E} {mlp} experts of d_ff = {d_ff}, top-{k}, a "
               f"router d·E. How many GFLOP per token does it cost in training (forward + "
               f"backward = 3x forward, 2 FLOPs per multiply-add)?", g, "GFLOP",
               f"3 · (2·d·E + k · 2 · {3 if gated else 2}·d·d_ff) = {fmt(g)} GFLOP "
               f"(cost.moe_flops_per_token): k experts, not E, whatever the number of experts.",
               prompt_zh=(f"一个 MoE 层：d = {d}，{E} 个 {mlp_zh} 专家，d_ff = {d_ff}，top-{k}，路由器 d·E。"
                          f"训练中每个 token 花多少 GFLOP（前向 + 反向 = 3 倍前向，每次乘加 2 FLOP）？"))


@template("moe_fine_grained_rows", "moe_ep", S8)
def moe_fine_grained_rows(rng):
    E, k, m = rng.choice((8, 16, 64)), rng.choice((1, 2)), rng.choice((2, 4, 8))
    ks = rng.choice((0, 1))
    f = cost.fine_grained_experts(E, k, 4096, m, ks)
    x = f["rows_per_token"] / k
    return Ask(f"A MoE layer has {E} experts, top-{k}. Following DeepSeekMoE, each expert is cut "
               f"into {m} of 1/{m} the width (top-{m * k} of {m * E}) and {ks} of the {m * k} "
               f"active ones made shared (always on, computed locally). How many times the "
               f"original dispatch all-to-all bytes does a token send now?", x, "x",
               f"Rows per token: m·K - K_s = {f['rows_per_token']} instead of {k}: {fmt(x)}x "
               f"(cost.fine_grained_experts; DeepSeekMoE §3.1-3.2). Same FLOPs, more traffic.",
               prompt_zh=(f"一个 MoE 层有 {E} 个专家，top-{k}。仿照 DeepSeekMoE，把每个专家切成 {m} 个宽度为 "
                          f"1/{m} 的细粒度专家（{m * E} 选 top-{m * k}），并把 {m * k} 个激活专家中的 {ks} 个设为共享专家"
                          f"（总是激活，在本地计算）。一个 token 现在发送的分发 All-to-All 字节数是原来的多少倍？"))


@template("expert_choice_unrouted", "moe_ep", S8)
def expert_choice_unrouted(rng):
    E, c = rng.choice((4, 8, 16, 64)), rng.choice((1.0, 2.0))
    p0 = cost.expert_choice_coverage(E, c)[0] * 100
    return Ask(f"Expert choice routing (Zhou et al. 2022, §3.2): {E} experts each pick the "
               f"top n·c/E tokens, c = {c}. If the experts chose independently at random, what "
               f"percentage of tokens would get no expert at all?", p0, "%",
               f"Each expert picks a token with p = c/E, so P(0) = (1 - c/E)^E = {fmt(p0)}% "
               f"(about e^-c; cost.expert_choice_coverage). Real routers differ: measure it.",
               prompt_zh=(f"Expert choice 路由（Zhou 等，2022，§3.2）：{E} 个专家各自挑选 top n·c/E 个 "
                          f"token，c = {c}。若专家之间独立随机地挑选，有百分之几的 token 一个专家也分不到？"))


@template("dropless_padding", "moe_ep", S8)
def dropless_padding(rng):
    E = rng.choice((4, 8))
    counts = [rng.choice((10, 20, 40, 80, 160)) for _ in range(E)]
    r = cost.grouped_gemm_rows(counts)
    x = r["padded"] / r["loop"]
    return Ask(f"A dropless MoE layer's {E} experts received {counts} rows. Padding every group "
               f"to the busiest for one batched GEMM, how many times the loop's (grouped GEMM) "
               f"rows are computed?", x, "x",
               f"E·max n_e / sum n_e = {r['padded']}/{r['loop']} = {fmt(x)}x "
               f"(cost.grouped_gemm_rows; MegaBlocks pads only to 128-row blocks, §5.1.2).",
               prompt_zh=(f"一个 dropless MoE 层的 {E} 个专家分别收到 {counts} 行。把每组都补齐到最忙的那组、"
                          f"做一次批量 GEMM，计算的行数是逐组计算（grouped GEMM）的多少倍？"))

"""Drills on tensor and sequence parallelism: collectives per layer, their bytes,
activation memory (Korthikanti et al.), communication time (notebook 02)."""

from __future__ import annotations

from parlab import cost
from parlab.hardware import GPU_PRESETS, LINK_PRESETS
from lessons.common.drills.core import Ask, fmt, template

S4 = ("02", 4, "Counting: trace vs formula")
S5 = ("02", 5, "Sequence parallelism: what it changes, what it does not")
S6 = ("02", 6, "Activation memory, measured")
S7 = ("02", 7, "Speed: what these CPU ranks can show, and what a GPU node would")


def shape(rng):
    """(b, s, h, a, t, text): a preset's width and heads, a sequence length, a micro-batch
    and a TP degree dividing the heads."""
    p = cost.MODEL_PRESETS[rng.choice(("1.3B", "7B", "13B", "70B"))]
    b, s = rng.choice((1, 2, 4)), rng.choice((2048, 4096, 8192))
    t = rng.choice([t for t in (2, 4, 8) if p.n_heads % t == 0])
    return b, s, p.d_model, p.n_heads, t, _said(b, s, p.d_model, p.n_heads, t)


def _said(b, s, h, a, t) -> str:
    return f"micro-batch b = {b}, sequence s = {s}, hidden h = {h}, {a} heads, tp = {t}"


def _said_zh(b, s, h, a, t) -> str:
    return f"微批次 b = {b}，序列 s = {s}，隐藏维 h = {h}，{a} 个头，tp = {t}"


@template("tp_collectives_per_layer", "tp_sp", S4)
def tp_collectives_per_layer(rng):
    b, s, h, a, t, said = shape(rng)
    sp = rng.random() < 0.5
    c = cost.tp_comm_per_layer(b, s, h, t, sp)
    what = ("Megatron tensor parallelism with sequence parallelism (each rank keeping only "
            "its sequence shard of the qkv / fc1 input for backward)" if sp
            else "Megatron tensor parallelism without sequence parallelism")
    what_zh = ("Megatron 张量并行加序列并行（每个 rank 只为反向保留 qkv / fc1 输入的序列分片）" if sp
               else "不带序列并行的 Megatron 张量并行")
    return Ask(f"{what}, tp = {t}: how many collectives does ONE transformer layer issue per "
               f"training step (forward + backward)?", c["collectives"], "",
               ("Forward 2 all-gathers (g) + 2 reduce-scatters (g-bar); backward 2 "
                "reduce-scatters + 4 all-gathers (2 conjugates + 2 re-gathers of the saved "
                "shard)" if sp else
                "Forward 2 all-reduces (g after attn.proj and mlp.fc2); backward 2 (f before "
                "qkv and fc1)") + f": {c['collectives']} (cost.tp_comm_per_layer; Shoeybi et "
               f"al. Fig. 4, Korthikanti §4.2.2).", rel_tol=0,
               prompt_zh=f"{what_zh}，tp = {t}：一个 Transformer 层每个训练步（前向 + 反向）发起多少次集合通信？")


@template("tp_bytes_per_layer", "tp_sp", S4)
def tp_bytes_per_layer(rng):
    b, s, h, a, t, said = shape(rng)
    c = cost.tp_comm_per_layer(b, s, h, t)
    mb = c["bytes"] / 1e6
    return Ask(f"Tensor parallelism without SP, bf16 activations, {said}. How many MB does "
               f"each rank send for one layer per training step (ring all-reduces)?", mb, "MB",
               f"4 all-reduces of M = b·s·h·2 B = {fmt(c['message_bytes'] / 1e6)} MB, each "
               f"2(t-1)/t·M: 8(t-1)/t·M = {fmt(mb)} MB (cost.tp_comm_per_layer; Narayanan et "
               f"al. §3.2: 8bsh(t-1)/t).",
               prompt_zh=(f"不带序列并行的张量并行，bf16 激活，{_said_zh(b, s, h, a, t)}。"
                          f"每个 rank 每个训练步为一层发送多少 MB（环形 AllReduce）？"))


@template("sp_bytes_per_layer", "tp_sp", S5)
def sp_bytes_per_layer(rng):
    b, s, h, a, t, said = shape(rng)
    c = cost.tp_comm_per_layer(b, s, h, t, True)
    mb = c["bytes"] / 1e6
    return Ask(f"Tensor + sequence parallelism, bf16 activations, {said}; each rank keeps "
               f"only its sequence shard of the qkv / fc1 inputs and re-gathers them in "
               f"backward. How many MB does each rank send for one layer per training step?",
               mb, "MB",
               f"6 all-gathers + 4 reduce-scatters of M = {fmt(c['message_bytes'] / 1e6)} MB, "
               f"each (t-1)/t·M: 10(t-1)/t·M = {fmt(mb)} MB (cost.tp_comm_per_layer). Without "
               f"the 2 re-gathers it is exactly TP's 8(t-1)/t·M: SP buys memory, not bandwidth.",
               prompt_zh=(f"张量并行 + 序列并行，bf16 激活，{_said_zh(b, s, h, a, t)}；每个 rank 只保留 qkv / fc1 "
                          f"输入的序列分片，反向时重新 AllGather。每个 rank 每个训练步为一层发送多少 MB？"))


@template("sp_all_gather_bytes", "tp_sp", S5)
def sp_all_gather_bytes(rng):
    b, s, h, a, t, said = shape(rng)
    M = cost.tp_comm_per_layer(b, s, h, t, True)["message_bytes"]
    mb = cost.collective_bytes("all_gather", M, t) / 1e6
    return Ask(f"Sequence parallelism, bf16, {said}. Before the qkv projection the g "
               f"all-gather turns each rank's s/t sequence shard into the full (b, s, h) "
               f"activation. How many MB does each rank send in it (ring)?", mb, "MB",
               f"The gathered tensor is b·s·h·2 B = {fmt(M / 1e6)} MB; each rank sends (t-1) "
               f"shards of M/t: {fmt(mb)} MB (cost.collective_bytes of "
               f"tp_comm_per_layer's message).",
               prompt_zh=(f"序列并行，bf16，{_said_zh(b, s, h, a, t)}。在 qkv 投影之前，g 算子的 AllGather 把每个 rank "
                          f"的 s/t 序列分片拼成完整的 (b, s, h) 激活。每个 rank 在其中发送多少 MB（环形）？"))


@template("activation_memory_layer", "tp_sp", S6)
def activation_memory_layer(rng):
    b, s, h, a, t, said = shape(rng)
    mb = cost.activation_memory(s, b, h, a, 1) / 1e6
    return Ask(f"A GPT layer (4h MLP, dropout), bf16 values and 1-byte dropout masks, "
               f"micro-batch b = {b}, sequence s = {s}, hidden h = {h}, {a} heads, no "
               f"parallelism, no recomputation. How many MB of activations does it keep for "
               f"backward?", mb, "MB",
               f"Korthikanti et al. Eq. 1: s·b·h·(34 + 5·a·s/h) = {s}·{b}·{h}·"
               f"{fmt(34 + 5 * a * s / h)} = {fmt(mb)} MB (cost.activation_memory).",
               prompt_zh=(f"一个 GPT 层（4h MLP，带 dropout），bf16 数值和 1 字节的 dropout 掩码，"
                          f"微批次 b = {b}，序列 s = {s}，隐藏维 h = {h}，{a} 个头，不做并行，不做重计算。"
                          f"它为反向保留多少 MB 激活？"))


@template("activation_memory_tp", "tp_sp", S6)
def activation_memory_tp(rng):
    b, s, h, a, t, said = shape(rng)
    sp, recompute = rng.choice(((False, "none"), (True, "none"), (True, "selective")))
    mb = cost.activation_memory(s, b, h, a, 1, recompute, t, sp) / 1e6
    expr = {(False, "none"): "s·b·h·(10 + 24/t + 5·a·s/(h·t))",
            (True, "none"): "s·b·h·(34 + 5·a·s/h)/t",
            (True, "selective"): "s·b·h·34/t"}[(sp, recompute)]
    how = {(False, "none"): "tensor parallelism", (True, "none"): "tensor + sequence parallelism",
           (True, "selective"): "tensor + sequence parallelism with selective recomputation"
           }[(sp, recompute)]
    how_zh = {(False, "none"): "张量并行", (True, "none"): "张量并行 + 序列并行",
              (True, "selective"): "张量并行 + 序列并行 + 选择性激活重计算"}[(sp, recompute)]
    return Ask(f"A GPT layer (Korthikanti's: 4h MLP, dropout, bf16), {said}, with {how}. How "
               f"many MB of activations does each GPU keep for one layer?", mb, "MB",
               f"Korthikanti et al. Table 2: {expr} = {fmt(mb)} MB (cost.activation_memory).",
               prompt_zh=(f"一个 GPT 层（Korthikanti 的：4h MLP，dropout，bf16），{_said_zh(b, s, h, a, t)}，采用{how_zh}。"
                          f"每张 GPU 为一层保留多少 MB 激活？"))


@template("tp_comm_time", "tp_sp", S7)
def tp_comm_time(rng):
    b, s, h, a, t, said = shape(rng)
    L = rng.choice((24, 32, 40))
    where = rng.choice(("NVLink3", "NVLink4", "2 nodes"))
    if where == "2 nodes":  # t/2 GPUs on each of two DGX A100s, one HDR card per GPU
        t = max(t, 4)  # 4 divides every preset's heads
        nv, card = LINK_PRESETS["NVLink3"], LINK_PRESETS["IB-HDR"]
        bw = cost.group_bandwidth("all_reduce", t, 1, t // 2, nv.gb_per_s_per_direction * 1e9,
                                  card.gb_per_s_per_direction * 1e9)
        alpha, said = card.latency_us * 1e-6, _said(b, s, h, a, t)
        link = (f"a TP group split over 2 nodes, {t // 2} GPUs on each, every GPU with its own "
                f"200 Gb/s HDR card ({fmt(card.gb_per_s_per_direction)} GB/s; α = "
                f"{fmt(card.latency_us)} µs)")
        why = (f"NCCL runs one ring per card, so the {t // 2} GPUs of a node drive {t // 2} "
               f"cards at once: bus bandwidth {t // 2} × {fmt(card.gb_per_s_per_direction)} = "
               f"{fmt(bw / 1e9)} GB/s (cost.group_bandwidth; a DGX A100's 8 cards measure "
               f"192 GB/s, nccl#812), not one port's {fmt(card.gb_per_s_per_direction)}.")
    else:
        spec = LINK_PRESETS[where]
        bw, alpha = spec.gb_per_s_per_direction * 1e9, spec.latency_us * 1e-6
        link = (f"{where} (α = {fmt(spec.latency_us)} µs, B = "
                f"{fmt(spec.gb_per_s_per_direction)} GB/s per direction)")
        why = "Inside a node every GPU has its own NVLink bandwidth through the NVSwitch."
    r = cost.tp_scaling(L, h, a, s, b, t, GPU_PRESETS["A100-SXM4-80GB"].peak_tflops["bf16"] * 1e12,
                        bw, alpha)
    ms = r["comm_s"] * 1e3
    link_zh = (f"跨 2 个节点的 TP 组，每节点 {t // 2} 张 GPU，每张 GPU 一块 200 Gb/s HDR 网卡"
               f"（{fmt(card.gb_per_s_per_direction)} GB/s；α = {fmt(card.latency_us)} µs）"
               if where == "2 nodes" else
               f"{where}（α = {fmt(spec.latency_us)} µs，单向 B = {fmt(spec.gb_per_s_per_direction)} GB/s）")
    return Ask(f"Tensor parallelism without SP over {link}, bf16, {said}, {L} layers. In the "
               f"α-β model with ring all-reduces, how many ms of communication does one "
               f"micro-batch's forward + backward take (not overlapped)?", ms, "ms",
               f"Per layer 4 all-reduces of b·s·h·2 B, each 2(t-1)·α + 2(t-1)/t·M/B; times "
               f"{L} layers = {fmt(ms)} ms (cost.tp_scaling's comm_s). {why}",
               prompt_zh=(f"不带序列并行的张量并行，经 {link_zh}，bf16，{_said_zh(b, s, h, a, t)}，{L} 层。按 α-β 模型、"
                          f"环形 AllReduce，一个微批次的前向 + 反向有多少 ms 通信（不重叠）？"))

S8 = ("02", 8, "Overlap: what can hide behind what")


@template("tp_chunked_exposed", "tp_sp", S8)
def tp_chunked_exposed(rng):
    c = rng.choice((2, 4, 8, 16))
    comm_ms, gemm_ms = rng.choice((0.1, 0.2, 0.4)), rng.choice((0.8, 1.6, 2.0))
    r = cost.chunked_overlap(comm_ms / c, gemm_ms / c, c)
    pct = 100 * r["exposed_fraction"]
    return Ask(f"Sequence parallelism: an all-gather of {comm_ms} ms feeds a column-parallel GEMM "
               f"of {gemm_ms} ms. Both are cut into c = {c} chunks and pipelined (chunk k+1's "
               f"all-gather runs during chunk k's GEMM), latency ignored. What percentage of the "
               f"all-gather stays exposed?", pct, "%",
               f"The first chunk's all-gather has no GEMM beside it; after that each chunk's "
               f"GEMM ({fmt(gemm_ms / c)} ms) is longer than the next chunk's all-gather "
               f"({fmt(comm_ms / c)} ms): exposed = 1/c = {fmt(pct)}% "
               f"(cost.chunked_overlap; Wang et al. ASPLOS 2023, §3).",
               prompt_zh=(f"序列并行：一次 {comm_ms} ms 的 AllGather 给一次 {gemm_ms} ms 的列并行 GEMM "
                          f"供数。两者都切成 c = {c} 块并流水执行（第 k+1 块的 AllGather 与第 k 块的 GEMM 同时进行），"
                          f"忽略延迟。AllGather 还有百分之几暴露在外？"))

"""The seed's main question with a 30-second and a 3-minute answer, in English and in
Chinese (中文), written for this lab; every number comes from ``facts()`` and every
sentence of the long answer names the notebook section that measures it."""

from __future__ import annotations

from lessons.common.i18n import LANGS, pick
from .facts import facts

__all__ = ["LANGS", "QUESTION", "thirty_second", "three_minute"]

QUESTION = {
    "en": "What parallel strategies are there for training large models, and when do you "
          "use which?",
    "zh": "训练大模型有哪些并行策略？分别在什么情况下使用？",
}


# lang=None: the session's language (lessons.lang); a code not in LANGS: a ValueError
_lang = pick


def thirty_second(lang: str | None = None) -> str:
    """The 30-second answer: the axes, each one's price, and how they combine."""
    f, lang = facts(), _lang(lang)
    b = f["bubble"]
    if lang == "en":
        return (
            "Two limits drive it: memory and time. Data parallelism copies the model and "
            "all-reduces the gradients; a ring sends 2(N−1)/N of the gradient per GPU, "
            f"{f['ring'][2]:.0f}× at two GPUs and never more than twice ({f['ring'][1024]:.3f}× "
            f"at 1024), and ZeRO/FSDP shards the {f['bytes_per_param']:.0f} bytes per parameter "
            "of training state when they do not fit. Tensor parallelism splits every matmul and "
            f"pays {f['tp']['collectives']} all-reduces per layer per step, so it stays inside "
            "one NVLink domain. Pipeline parallelism splits the layers and idles "
            f"(P−1)/(M+P−1) of the step, {b['fraction']:.1%} at P = {b['p']}, M = {b['m']}, the "
            "same for GPipe and 1F1B; 1F1B saves memory. Experts (EP) and long sequences (CP) "
            "get axes of their own. Large runs nest TP inside a node, the smallest PP that "
            "fits, and DP for the rest, chosen with a cost model rather than a fixed order.")
    return (
        "决定因素有两个：显存和时间。数据并行让每张卡持有完整模型，反向后对梯度做 all-reduce；"
        "用环形算法时每张卡发送梯度的 2(N−1)/N：2 卡时是梯度的 "
        f"{f['ring'][2]:.0f} 倍，卡数再多也不超过 2 倍（1024 卡时 {f['ring'][1024]:.3f} 倍）。训练状态每个参数占 "
        f"{f['bytes_per_param']:.0f} 字节，放不下时用 ZeRO/FSDP 把它们切分到各个数据并行副本上。"
        f"张量并行切分每个矩阵乘法，每层每个训练步要做 {f['tp']['collectives']} 次 all-reduce，"
        "所以应放在同一个 NVLink 域内。流水线并行按层切分，空闲比例为 (P−1)/(M+P−1)，"
        f"P = {b['p']}、M = {b['m']} 时是 {b['fraction']:.1%}，GPipe 与 1F1B 相同；1F1B "
        "省的是显存。MoE 专家（EP）和长序列（CP）各有自己的切分维度。大规模训练把它们组合起来："
        "TP 放在节点内，PP 取能放下模型的最小深度，剩下的卡做 DP；具体比例用代价模型来选，"
        "而不是套固定顺序。")


def three_minute(lang: str | None = None) -> list[tuple[str, str]]:
    """The 3-minute answer: (sentence, section key) pairs, in speaking order."""
    f, lang = facts(), _lang(lang)
    b, tp, d7, z1 = f["bubble"], f["tp"], f["7b_ddp"], f["7b_zero1"]
    d7n = f["7b_ddp_none"]
    m = max(b["peak"])  # the most micro-batches 03 §5 holds: GPipe keeps all of them
    ring, steps = f["ring"], f["ring_steps"][1024]
    l3 = f["llama3"]
    if lang == "en":
        return [
            (f"Two limits decide it. Memory: mixed-precision AdamW keeps {f['bytes_per_param']:.0f} "
             f"bytes per parameter, so 7B needs {(d7['params'] + d7['grads'] + d7['optimizer']) / 1e9:.0f} "
             "GB of state, more than one 80 GB GPU holds. Time: only more devices shorten it.",
             "bytes16"),
            ("Data parallelism copies the model, splits the batch and all-reduces the gradients; "
             "it is exactly single-device training on the global batch.", "dp_exact"),
            (f"A ring all-reduce sends 2(N−1)/N of the gradient per GPU: {ring[2]:.2f}× at 2 GPUs, "
             f"{ring[1024]:.3f}× at 1024. Bandwidth per GPU is flat, but the {steps:,} sequential "
             "steps at 1024 GPUs make latency grow with N.", "ring"),
            ("DDP hides most of it behind the backward pass by sending gradients in buckets as "
             "soon as they are ready.", "dp_buckets"),
            (f"When the states do not fit, ZeRO/FSDP shards them: 7B on four 80 GB GPUs, one "
             f"2048-token sequence per GPU, needs {z1['total'] / 1e9:.1f} GB per GPU with ZeRO-1 "
             f"and {d7n['total'] / 1e9:.1f} GB with plain DDP, both without recomputation; even "
             f"with full recomputation DDP needs {d7['total'] / 1e9:.1f} GB.", "seven_b"),
            ("Tensor parallelism splits each layer's matmuls, columns then rows (Megatron), and "
             f"pays {tp['collectives']} all-reduces per layer per training step: "
             f"{tp['step_mib']:.0f} MiB sent per GPU per layer for GPT-3 at t = 8. So it stays "
             "inside one NVLink domain, 8 GPUs on an HGX board.", "tp_count"),
            ("Sequence parallelism splits the norm and dropout activations along the sequence: "
             "it saves activation memory, not bytes on the wire.", "sp"),
            ("Pipeline parallelism cuts the layers into stages and passes activations point to "
             f"point. Its bubble is (P−1)/(M+P−1), {b['fraction']:.1%} at P = {b['p']}, "
             f"M = {b['m']}, for GPipe and 1F1B alike.", "bubble"),
            (f"1F1B's gain is memory: at most P micro-batches held instead of M "
             f"({b['peak'][m][1]} instead of {b['peak'][m][0]} at P = {b['p']}, M = {m}).",
             "pp_memory"),
            (f"Interleaving v chunks per GPU divides the bubble ({b['interleaved_v2']:.1%} at "
             "v = 2), and zero-bubble schedules fill it with weight-gradient work.", "interleave"),
            ("Expert parallelism puts MoE experts on different GPUs and moves tokens by "
             "all-to-all; a capacity factor caps each expert, and the busiest rank sets the "
             "step.", "busiest"),
            ("Context parallelism splits long sequences, by ring attention or Ulysses, when one "
             "sequence's activations do not fit.", "cp_why"),
            ("Large runs combine them on a mesh: TP inside the node, the smallest PP that fits, "
             f"DP with ZeRO for the rest. A quoted 8 × 64 × 64 for GPT-3 is "
             f"{f['gpt3_seed']['product']:,} GPUs and {f['gpt3_seed']['layers_per_stage']:g} of "
             "its 96 layers per stage: it does not divide.", "3d_interview"),
            ("Choose the degrees with a cost model checked against published runs, and report "
             f"MFU: Megatron's 52% for 1T counts recomputation ({f['mfu_1t']:.0%} in model "
             f"FLOPs); GPT-3 itself trained at {f['gpt3_mfu']:.1%} MFU.", "planner"),
            ("Around all of them: bf16 compute with fp32 master weights, and sharded, "
             "asynchronous checkpoints every √(2·C·MTBF), since a 16k-GPU job is interrupted "
             f"{l3['per_day']:.1f} times a day.", "goodput"),
        ]
    return [
        (f"决定因素有两个。显存：混合精度 AdamW 每个参数要 {f['bytes_per_param']:.0f} 字节，"
         f"7B 模型的训练状态约 {(d7['params'] + d7['grads'] + d7['optimizer']) / 1e9:.0f} GB，"
         "一张 80 GB 的卡放不下。时间：只有更多的设备才能缩短。", "bytes16"),
        ("数据并行复制模型、切分批次、对梯度做 all-reduce，结果与单卡在全局批次上训练完全相同。",
         "dp_exact"),
        (f"环形 all-reduce 每张卡发送梯度的 2(N−1)/N：2 卡时 {ring[2]:.2f} 倍，1024 卡时 "
         f"{ring[1024]:.3f} 倍。每卡带宽开销不随卡数增长，但 1024 卡时有 {steps:,} 个串行步骤，"
         "延迟随 N 增长。", "ring"),
        ("DDP 把梯度分桶，一旦某个桶就绪就开始通信，大部分通信被反向计算掩盖。", "dp_buckets"),
        (f"训练状态放不下时，用 ZeRO/FSDP 切分：7B 在 4 张 80 GB 卡上、每卡一条 2048 token 的序列，"
         f"都不做重计算时，ZeRO-1 每卡需要 {z1['total'] / 1e9:.1f} GB，普通 DDP 需要 "
         f"{d7n['total'] / 1e9:.1f} GB；DDP 即使做完整重计算也要 {d7['total'] / 1e9:.1f} GB。",
         "seven_b"),
        (f"张量并行切分每层的矩阵乘法（Megatron：先按列、再按行），每层每个训练步要 "
         f"{tp['collectives']} 次 all-reduce；GPT-3 在 t = 8 时每层每卡发送 {tp['step_mib']:.0f} MiB，"
         "因此应留在一个 NVLink 域内（HGX 上为 8 张卡）。", "tp_count"),
        ("序列并行沿序列维切分 LayerNorm 和 dropout 的激活：省的是激活显存，不是通信量。", "sp"),
        (f"流水线并行把层切成若干阶段，阶段之间点对点传激活。气泡为 (P−1)/(M+P−1)，"
         f"P = {b['p']}、M = {b['m']} 时为 {b['fraction']:.1%}，GPipe 和 1F1B 一样。", "bubble"),
        (f"1F1B 的收益在显存：最多同时保存 P 个微批次的激活，而不是 M 个"
         f"（P = {b['p']}、M = {m} 时是 {b['peak'][m][1]} 个而不是 {b['peak'][m][0]} 个）。",
         "pp_memory"),
        (f"交错调度让每张卡持有 v 个模型块，气泡缩小为原来的 1/v（v = 2 时 "
         f"{b['interleaved_v2']:.1%}）；零气泡调度用权重梯度的计算填满气泡。", "interleave"),
        ("专家并行把 MoE 的专家放在不同的卡上，用 all-to-all 分发 token；容量因子限制每个专家"
         "处理的 token 数，最忙的那张卡决定一步的时间。", "busiest"),
        ("上下文并行用环形注意力或 Ulysses 切分长序列，用于单条序列的激活放不下的情况。", "cp_why"),
        ("大规模训练把这些维度组合成网格：TP 在节点内，PP 取能放下的最小深度，其余用带 ZeRO 的 "
         f"DP。常被引用的 GPT-3「8 × 64 × 64」共 {f['gpt3_seed']['product']:,} 张卡，"
         f"每个阶段 {f['gpt3_seed']['layers_per_stage']:g} 层，96 层根本无法均分。", "3d_interview"),
        (f"并行度要用经过公开数据校验的代价模型来选，并报告 MFU：Megatron 报告 1T 模型的 52% "
         f"包含了重计算（按模型 FLOPs 算是 {f['mfu_1t']:.0%}）；GPT-3 本身训练时的 MFU 是 "
         f"{f['gpt3_mfu']:.1%}。", "planner"),
        ("此外：bf16 计算配 fp32 主权重；分片、异步地保存检查点，间隔约 √(2·C·MTBF)，"
         f"因为 1.6 万卡的作业每天要中断约 {l3['per_day']:.1f} 次。", "goodput"),
    ]

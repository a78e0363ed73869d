"""The lab's terms in English and Chinese (中文), as engineers say them in an interview: each
with the notebooks that teach it and one line of meaning in both languages. Rendered to
docs/glossary.md (``python -m lessons.common.glossary > docs/glossary.md``; a test keeps the
two in sync), and searchable from a notebook: ``glossary.find("气泡")``."""

from __future__ import annotations

from dataclasses import dataclass

from .i18n import pick


@dataclass(frozen=True)
class Term:
    en: str
    zh: str         # the Chinese term; an English name Chinese engineers keep is kept
    notebooks: str  # where it is taught: "03" or "01, 06"
    mean_en: str
    mean_zh: str


TERMS = (
    # collectives (00)
    Term("all-reduce", "全归约（AllReduce）", "00",
         "every rank ends with the sum of every rank's tensor",
         "每个 rank 最终都得到所有 rank 张量之和"),
    Term("reduce-scatter", "归约散射（ReduceScatter）", "00, 01",
         "the sum, cut into shards: each rank ends with one shard of it",
         "求和后切片：每个 rank 只得到和的一个分片"),
    Term("all-gather", "全收集（AllGather）", "00, 01",
         "every rank ends with every rank's shard, concatenated",
         "每个 rank 最终得到所有 rank 的分片拼接结果"),
    Term("all-to-all", "全交换（All-to-All）", "04, 05",
         "each rank sends a different piece to every other rank",
         "每个 rank 给其他每个 rank 发送不同的数据块"),
    Term("broadcast", "广播（Broadcast）", "00",
         "one rank's tensor copied to every rank", "把一个 rank 的张量复制到所有 rank"),
    Term("ring all-reduce", "环形全归约（Ring AllReduce）", "00",
         "reduce-scatter then all-gather round a ring: 2(N-1)/N of the data sent per rank",
         "沿环先做归约散射再做全收集：每个 rank 发送数据量的 2(N-1)/N"),
    Term("alpha-beta model", "α-β 模型", "00",
         "time = latency per message (α) + bytes / bandwidth", "时间 = 每条消息的延迟（α）+ 字节数 / 带宽"),
    Term("bus bandwidth (busbw)", "总线带宽（busbw）", "00",
         "nccl-tests' bandwidth per link, comparable with the link's peak",
         "nccl-tests 报告的每条链路带宽，可与链路峰值直接比较"),
    Term("bandwidth", "带宽", "00", "bytes per second a link carries", "链路每秒能传输的字节数"),
    Term("communication volume", "通信量", "00, 02, 05",
         "bytes a rank sends per step", "每个 rank 每步发送的字节数"),
    # data parallelism and ZeRO (01)
    Term("data parallelism (DP)", "数据并行（DP）", "01",
         "every rank holds the whole model and sees different data; gradients are all-reduced",
         "每个 rank 持有完整模型、处理不同数据，梯度做全归约"),
    Term("gradient bucketing", "梯度分桶", "01",
         "gradients all-reduced in buckets during backward, overlapping the compute",
         "反向过程中按桶对梯度做全归约，与计算重叠"),
    Term("ZeRO-1", "ZeRO-1（切分优化器状态）", "01",
         "optimizer states sharded over the data-parallel ranks", "优化器状态在数据并行 rank 间切分"),
    Term("ZeRO-2", "ZeRO-2（再切分梯度）", "01",
         "gradients sharded too: reduce-scatter instead of all-reduce",
         "梯度也切分：用归约散射代替全归约"),
    Term("ZeRO-3", "ZeRO-3（再切分参数）", "01",
         "parameters sharded too, all-gathered just before use", "参数也切分，用前才全收集"),
    Term("FSDP", "FSDP（全分片数据并行）", "01",
         "PyTorch's fully sharded data parallelism: ZeRO-3", "PyTorch 的全分片数据并行，即 ZeRO-3"),
    Term("HSDP", "HSDP（混合分片数据并行）", "01",
         "sharded within a node, replicated across nodes", "节点内切分、节点间复制"),
    Term("model states", "模型状态", "01, 07",
         "parameters, gradients and optimizer states", "参数、梯度和优化器状态"),
    Term("optimizer states", "优化器状态", "01, 07",
         "Adam's fp32 master weights, momentum and variance", "Adam 的 fp32 主权重、一阶矩和二阶矩"),
    Term("gradient accumulation", "梯度累积", "01, 03",
         "several micro-batches' gradients summed before one optimizer step",
         "多个微批次的梯度累加后再做一次优化器更新"),
    # tensor and sequence parallelism (02)
    Term("tensor parallelism (TP)", "张量并行（TP）", "02",
         "each matmul split over ranks; activations all-reduced inside every layer",
         "把每个矩阵乘法切到多个 rank 上，每层内对激活做全归约"),
    Term("column-parallel / row-parallel linear", "列并行 / 行并行线性层", "02",
         "Megatron's pair: split the output columns, then the input rows",
         "Megatron 的一对切法：先按输出列切，再按输入行切"),
    Term("sequence parallelism (SP)", "序列并行（SP）", "02",
         "TP's all-reduce split into reduce-scatter + all-gather; norms and dropout on sequence shards",
         "把 TP 的全归约拆成归约散射 + 全收集，LayerNorm 和 dropout 只处理序列分片"),
    Term("activation memory", "激活显存", "02, 03",
         "what the forward keeps for the backward", "前向为反向保留的张量所占显存"),
    Term("activation recomputation", "激活重计算（重计算）", "02",
         "drop activations in forward and recompute them in backward: memory for compute",
         "前向时丢弃激活、反向时重算：用计算换显存"),
    Term("GPU memory", "显存", "01, 02, 07", "the memory on the accelerator", "加速卡上的内存"),
    # pipeline parallelism (03)
    Term("pipeline parallelism (PP)", "流水线并行（PP）", "03",
         "layers split into stages on different ranks; micro-batches flow through them",
         "把层切成阶段放在不同 rank 上，微批次依次流过"),
    Term("micro-batch", "微批次", "03",
         "a slice of the batch that moves through the pipeline on its own", "批次的一小份，单独流过流水线"),
    Term("bubble", "气泡", "03",
         "the time a stage waits idle during fill and drain: (p-1)/(m+p-1) of the step",
         "阶段在填充和排空时的空闲时间：占一步的 (p-1)/(m+p-1)"),
    Term("1F1B", "1F1B（一前一后）", "03",
         "one forward, one backward: the same bubble as GPipe, at most p micro-batches held",
         "前向、反向交替：气泡与 GPipe 相同，最多持有 p 个微批次的激活"),
    Term("interleaved schedule", "交错式调度（虚拟流水线）", "03",
         "v model chunks per rank: a v times smaller bubble, v times more messages",
         "每个 rank 放 v 个模型块：气泡缩小 v 倍，消息多 v 倍"),
    Term("zero bubble (ZB-H2)", "零气泡（ZB-H2）", "03",
         "backward split into input and weight gradients to fill the bubble",
         "把反向拆成输入梯度和权重梯度来填满气泡"),
    # experts (04)
    Term("mixture of experts (MoE)", "混合专家（MoE）", "04",
         "a router sends each token to k of E expert MLPs", "路由器把每个 token 送到 E 个专家中的 k 个"),
    Term("expert parallelism (EP)", "专家并行（EP）", "04",
         "experts spread over ranks; tokens travel to them by all-to-all",
         "专家分布在不同 rank 上，token 通过 All-to-All 发过去"),
    Term("capacity factor", "容量因子", "04",
         "how many tokens an expert may take, as a multiple of an even share",
         "一个专家能接收的 token 数，相对平均份额的倍数"),
    Term("token dropping", "丢弃 token（token drop）", "04",
         "tokens past an expert's capacity skip it", "超过专家容量的 token 不经过该专家"),
    Term("load balancing loss", "负载均衡损失", "04",
         "an auxiliary loss that evens out the experts' loads", "让各专家负载均匀的辅助损失"),
    # context parallelism (05)
    Term("context parallelism (CP)", "上下文并行（CP）", "05",
         "one long sequence split over ranks, attention computed across the shards",
         "把一条长序列切到多个 rank 上，跨分片计算注意力"),
    Term("ring attention", "环形注意力（Ring Attention）", "05",
         "K and V blocks passed round a ring while each rank keeps its queries",
         "每个 rank 保留自己的 Q，K、V 块沿环传递"),
    Term("Ulysses", "Ulysses（DeepSpeed-Ulysses）", "05",
         "all-to-alls swap sequence shards for head shards around attention",
         "在注意力前后用 All-to-All 在序列分片与头分片之间切换"),
    Term("zig-zag layout", "之字形切分（负载均衡）", "05",
         "causal attention balanced by giving each rank an early and a late chunk",
         "每个 rank 各拿一段靠前和一段靠后的块，让因果注意力负载均衡"),
    # composition (06)
    Term("3D parallelism", "3D 并行", "06",
         "data, tensor and pipeline parallelism nested on one mesh", "数据、张量、流水线并行在同一网格上嵌套组合"),
    Term("device mesh", "设备网格（Device Mesh）", "06",
         "the ranks laid out on named axes (dp, pp, cp, tp, ep)", "按命名维度（dp、pp、cp、tp、ep）排布的 rank"),
    Term("MFU", "MFU（模型算力利用率）", "01, 06",
         "model FLOPs per second over the hardware's peak", "模型每秒浮点运算数占硬件峰值的比例"),
    # precision (07)
    Term("mixed precision", "混合精度", "07",
         "bf16 or fp16 compute with fp32 master weights", "用 bf16 或 fp16 计算、fp32 保存主权重"),
    Term("master weights", "主权重", "07",
         "the fp32 copy the optimizer updates", "优化器更新的 fp32 权重副本"),
    Term("loss scaling", "损失缩放", "07",
         "the loss multiplied so that fp16 gradients do not underflow", "放大损失以免 fp16 梯度下溢"),
    Term("FP8", "FP8（8 位浮点）", "07",
         "e4m3 / e5m2 formats with a scale per tensor", "e4m3 / e5m2 格式，每个张量一个缩放因子"),
    # reliability (08)
    Term("checkpoint", "检查点（checkpoint）", "08",
         "the saved training state a run resumes from", "训练中断后据以恢复的已保存训练状态"),
    Term("sharded checkpoint (DCP)", "分片检查点（DCP）", "08",
         "each rank writes its own shard; it loads back at another layout",
         "每个 rank 写自己的分片，可按另一种并行布局加载"),
    Term("MTBF", "平均无故障时间（MTBF）", "08",
         "mean time between failures", "两次故障之间的平均时间"),
    Term("goodput", "有效吞吐（goodput）", "08",
         "the share of wall time spent on training that is kept", "墙钟时间中真正保留下来的训练所占比例"),
    Term("straggler", "慢节点（straggler）", "08",
         "one slow rank that every synchronous step waits for", "同步训练中每一步都要等待的那个慢 rank"),
    Term("elastic training", "弹性训练", "08",
         "a run that restarts with the ranks that are left", "用剩下的 rank 重启并继续的训练"),
)


def find(text: str) -> list[Term]:
    """The terms whose English or Chinese contains ``text`` (case ignored)."""
    needle = text.strip().lower()
    if not needle:
        raise ValueError("text='' must name a term, in English or Chinese")
    return [t for t in TERMS if needle in t.en.lower() or needle in t.zh.lower()]


def meaning(term: Term, lang: str | None = None) -> str:
    """The term's line of meaning in ``lang`` (default: the session's)."""
    return term.mean_zh if pick(lang) == "zh" else term.mean_en


def markdown() -> str:
    """docs/glossary.md."""
    rows = "\n".join(f"| {t.en} | {t.zh} | {t.notebooks} | {t.mean_en} | {t.mean_zh} |"
                     for t in TERMS)
    return (
        "# Glossary · 术语表\n\n"
        "[README](../README.md) · the lab's terms in English and Chinese, as engineers say them "
        "in an interview, with the notebooks that teach them. 本实验的术语中英对照。\n\n"
        "*Generated from `lib/lessons/common/glossary.py` (`python -m lessons.common.glossary > "
        "docs/glossary.md`); edit it there.*\n\n"
        "| English | 中文 | notebooks | meaning | 含义 |\n"
        "|---|---|---|---|---|\n"
        f"{rows}\n")


if __name__ == "__main__":
    print(markdown(), end="")

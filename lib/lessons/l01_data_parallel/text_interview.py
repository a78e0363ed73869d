"""Notebook 01's interview answers in English and Chinese (``INTERVIEW``; keys as
``text.py`` says), read through ``text.INTERVIEW``.
"""

INTERVIEW = {
    # --- §5: "compression only below 10 Gbps" ------------------------------------------
    "compression": {"en": "Compression: one threshold?",
                    "zh": "梯度压缩：有统一的带宽阈值吗？"},
    "compression.1": {
        "en": "No single one. The prediction above (no overlap, free codec) saves at least 10% of the "
              "step when the link is slower than a threshold that moves with gradient bytes per second "
              "of compute and with the ranks: {cases}.",
        "zh": "没有统一的阈值。按上面的预测（不重叠、编解码零开销），链路慢于某个阈值时压缩至少能省下 "
              "10% 的步长时间，而这个阈值随“每秒计算对应的梯度字节数”和 rank 数变化：{cases}。"},
    "compression.2": {
        "en": "Ten times the compute per step moves the threshold ten times lower. And sign's all-gather "
              "grows with the ranks: at 64 ranks it sends as much as the exact all-reduce and never pays. "
              "DDP's overlap and a real codec cost both lower every threshold.",
        "zh": "每步计算量增大十倍，阈值就降低十倍。sign 的 all-gather 还随 rank 数增长：到 64 个 rank "
              "时，它发送的字节数和精确的 all-reduce 一样多，永远不划算。DDP 的计算通信重叠和真实的编解码"
              "开销，都会把每个阈值再往下压。"},
    "compression.3": {
        "en": "1-bit Adam (Tang et al., ICML 2021) reports up to 5× less communication volume and up to "
              "3.3× the throughput of BERT-Large pre-training on commodity TCP clusters (abstract). The 5×, "
              "not 32×, is its warm-up: the first steps run plain Adam until the variance settles, so the "
              "ratio is 1 / (w + (1 − w)/r) (<code>cost.onebit_adam_volume_ratio</code>): {ratios} with "
              "r = 16 from fp16.",
        "zh": "1-bit Adam（Tang 等，ICML 2021）报告：在普通 TCP 集群上预训练 BERT-Large，通信量最多减少 "
              "5×，吞吐量最高达到 3.3×（见摘要）。之所以是 5× 而不是 32×，是因为预热（warm-up）：前若干步"
              "跑普通 Adam，直到方差稳定下来，所以压缩比是 1 / (w + (1 − w)/r)"
              "（<code>cost.onebit_adam_volume_ratio</code>）：从 fp16 出发、r = 16 时，{ratios}。"},
    "compression.verdict": {
        "en": "Half holds: compression trades convergence for bytes, but '10 Gbps' is one point of a "
              "ratio, not a rule.",
        "zh": "只对了一半：压缩确实是拿收敛性换字节数，但“10 Gbps”只是某个比值下的一个点，不是普适规则。"},
    "compression.case": {
        "en": "{billions:.3g}B parameters, {ranks} ranks, {compute:g} s compute: fp16 {fp16}, sign {sign}",
        "zh": "{billions:.3g}B 参数、{ranks} 个 rank、每步计算 {compute:g} s：fp16 {fp16}，sign {sign}"},
    "compression.below": {"en": "below {gbit:,.0f} Gb/s", "zh": "低于 {gbit:,.0f} Gb/s 时划算"},
    "compression.never": {"en": "never", "zh": "从不划算"},
    "compression.ratio": {"en": "{ratio:.1f}× at w = {warmup:.0%}", "zh": "w = {warmup:.0%} 时为 {ratio:.1f}×"},

    # --- §6: FSDP across nodes (the "Interview question" of section 6) --------------------
    "fsdp_network": {"en": "An answer", "zh": "参考答案"},
    "fsdp_network.1": {
        "en": "With bf16 weights, Ψ = {psi:.0f} GB. Flat ZeRO-3 over {gpus} GPUs sends 3Ψ · {less}/{gpus} = "
              "<b>{flat:.1f} GB per GPU per step</b>, all of it in rings that cross nodes "
              "(<code>cost.fsdp_comm_volume</code>). Three moves, cheapest first:",
        "zh": "bf16 权重下 Ψ = {psi:.0f} GB。在 {gpus} 张 GPU 上做扁平的 ZeRO-3，每张 GPU 每步发送 "
              "3Ψ · {less}/{gpus} = <b>{flat:.1f} GB</b>，全部走跨节点的 ring"
              "（<code>cost.fsdp_comm_volume</code>）。三项改动，代价由小到大："},
    "fsdp_network.2": {
        "en": "<b>HSDP {shard} × {nodes}</b>: shard within the node, replicate across: {intra:.1f} GB stay on "
              "NVLink and only <b>{inter:.1f} GB</b> per GPU cross nodes (<code>cost.hsdp_comm_volume</code>; "
              "measured above at 2 × 2: {across:.2f} Ψ across, {inside:.2f} Ψ inside). Cost: "
              "{hsdp_shard:.2f} GB of weight shards per GPU instead of {flat_shard:.2f}.",
        "zh": "<b>HSDP {shard} × {nodes}</b>：节点内分片、节点间复制：{intra:.1f} GB 留在 NVLink 上，"
              "每张 GPU 只有 <b>{inter:.1f} GB</b> 跨节点（<code>cost.hsdp_comm_volume</code>；上面在 2 × 2 "
              "上实测：跨节点 {across:.2f} Ψ，节点内 {inside:.2f} Ψ）。代价：每张 GPU 存 "
              "{hsdp_shard:.2f} GB 的权重分片，而不是 {flat_shard:.2f} GB。"},
    "fsdp_network.3": {
        "en": "<b><code>reshard_after_forward=False</code></b>: {keep:.1f} GB instead of {flat:.1f} (one "
              "all-gather fewer; {fewer:.0%} fewer bytes measured above), but the full {psi:.0f} GB of "
              "weights sit on every GPU at the end of forward ({peak:.1f}× the gathered peak here): only if "
              "memory is to spare.",
        "zh": "<b><code>reshard_after_forward=False</code></b>：{keep:.1f} GB 而不是 {flat:.1f} GB（少一次 "
              "all-gather；上面实测字节数少 {fewer:.0%}），但前向结束时每张 GPU 上都放着完整的 {psi:.0f} GB "
              "权重（在本节的模型上是聚合峰值的 {peak:.1f}×）：只有显存有富余时才这么做。"},
    "fsdp_network.4": {
        "en": "<b>Prefetch</b> to hide what remains behind compute (it moves the same bytes), and if the "
              "nodes must shard too, <b>ZeRO++</b> ({zeropp:g}M across nodes instead of {zero3:g}M, with "
              "INT8/INT4 rounding to watch).",
        "zh": "用 <b>prefetch</b> 把剩下的通信藏到计算后面（传的字节数不变）；如果跨节点也必须分片，就用 "
              "<b>ZeRO++</b>（跨节点 {zeropp:g}M 而不是 {zero3:g}M，但要留意 INT8/INT4 量化的舍入误差）。"},

    # --- §7: "communication grows linearly with the cards" --------------------------------
    "bytes": {"en": "Answer: count the bytes", "zh": "答案：数一数字节"},
    "bytes.1": {"en": "{table}", "zh": "{table}"},
    "bytes.2": {
        "en": "Ring: 2(W−1)/W·S per rank, {first:.1f} GB at 2 ranks and {last:.1f} GB at 1024: bounded by "
              "2S. Section 5's traces measured {ratios} of the gradient size at {sizes} ranks.",
        "zh": "Ring：每个 rank 发送 2(W−1)/W·S，2 个 rank 时 {first:.1f} GB，1024 个时 {last:.1f} GB："
              "上界是 2S。第 5 节的 trace 在 {sizes} 个 rank 上实测到梯度大小的 {ratios}。"},
    "bytes.3": {
        "en": "Only the 2(W−1) latency steps grow, which matters for small messages or thousands of ranks "
              "(hence tree and hierarchical algorithms).",
        "zh": "增长的只有 2(W−1) 个串行步骤的延迟，只在消息很小或 rank 数上千时才显著（所以才有 tree "
              "和分层算法）。"},
    "bytes.4": {
        "en": "A parameter server's root exchanges (W−1)·S: {root:,.0f} GB at 1024 ranks — linear. So are "
              "<b>all-gather-based compressed exchanges</b> (top-k, sign; section 5): a real trap.",
        "zh": "参数服务器的根节点要交换 (W−1)·S：1024 个 rank 时 {root:,.0f} GB，线性增长。"
              "<b>基于 all-gather 的压缩交换</b>（top-k、sign；第 5 节）同样线性增长：这才是真正的坑。"},
    "bytes.5": {
        "en": "What does grow in practice is the chance that some link is slow (crossing nodes): the ring "
              "runs at the pace of its slowest link.",
        "zh": "实践中真正随卡数增长的，是某条链路变慢（跨节点）的概率：ring 的速度由最慢的那条链路决定。"},
    "bytes.verdict": {"en": "False for ring all-reduce, true for what it replaced.",
                      "zh": "对 ring all-reduce 不成立，对被它取代的方案成立。"},

    # --- §7: "Ring AllReduce has complexity O(1)" ------------------------------------------
    "ring_o1": {"en": "Answer", "zh": "答案"},
    "ring_o1.1": {
        "en": "(Counted in notebook 00.) <b>Bytes per rank O(1)</b> (2(W−1)/W·S, measured above); "
              "<b>steps O(W)</b> (2(W−1) messages in sequence, each paying α); <b>total traffic O(W)</b> "
              "(over W links in parallel).",
        "zh": "（notebook 00 里数过。）<b>每个 rank 的字节数是 O(1)</b>（2(W−1)/W·S，上面已实测）；"
              "<b>步数是 O(W)</b>（2(W−1) 条消息依次发出，每条都要付一次 α）；<b>总通信量是 O(W)</b>"
              "（分摊在 W 条并行的链路上）。"},
    "ring_o1.2": {
        "en": "\"O(1)\" holds for bandwidth only. DDP does not pick the ring: it calls the backend's "
              "all-reduce; NCCL picks ring or tree per call.",
        "zh": "“O(1)”只对带宽项成立。DDP 并不自己选 ring：它调用后端的 all-reduce，由 NCCL 针对每次调用"
              "选择 ring 或 tree。"},

    # --- §7: "4 cards give ~3.5× speedup" --------------------------------------------------
    "speedup": {"en": "Answer: it depends on the link, the batch and the overlap",
                "zh": "答案：取决于链路、batch 大小和计算通信重叠"},
    "speedup.1": {
        "en": "N = {n_b:.2f} B non-embedding parameters ({all_b:.2f} B minus the {vocab:,} × {d:,} input "
              "embedding table). Compute per step: forward {t_fwd:.2f} s, backward {t_bwd:.2f} s.",
        "zh": "N = {n_b:.2f} B 个非嵌入参数（{all_b:.2f} B 减去 {vocab:,} × {d:,} 的输入嵌入表）。"
              "每步计算：前向 {t_fwd:.2f} s，反向 {t_bwd:.2f} s。"},
    "speedup.2": {"en": "{table}", "zh": "{table}"},
    "speedup.3": {
        "en": "Within one NVLink node DP on 4 GPUs reaches {nv_plain:.2f}–{nv_overlap:.2f}×; {ib_plain:.1f}× "
              "is what the model gives over {ib_gbs:.0f} GB/s InfiniBand (PCIe 4.0: {pcie_plain:.2f}×) "
              "<i>without</i> overlap, or with a much smaller batch per GPU (less compute to hide the same "
              "all-reduce behind); with DDP's overlap those links hide the all-reduce behind backward, "
              "while over 10 GbE no overlap can save DP. This is a bound: the last bucket never overlaps, "
              "and real overlap is imperfect (section 2 measured it).",
        "zh": "在一个 NVLink 节点内，4 张 GPU 的数据并行能达到 {nv_plain:.2f}–{nv_overlap:.2f}×；"
              "{ib_plain:.1f}× 是模型在 {ib_gbs:.0f} GB/s 的 InfiniBand 上<i>不</i>重叠时给出的值"
              "（PCIe 4.0：{pcie_plain:.2f}×），或者每张 GPU 的 batch 小得多时的值（能掩盖同样一次 "
              "all-reduce 的计算更少）；有了 DDP 的重叠，这些链路都能把 all-reduce 藏到反向计算后面，"
              "而在 10 GbE 上怎么重叠也救不了数据并行。这只是上界：最后一个桶永远无法重叠，实际的重叠"
              "也不完美（第 2 节实测过）。"},
    "speedup.4": {
        "en": "The premise fails first on memory: with mixed-precision Adam the 7B model needs {states:.0f} GB "
              "of model states per GPU under plain DDP, more than an {card:.0f} GB card holds: the next "
              "question.",
        "zh": "这个前提首先在显存上就站不住：用混合精度 Adam 时，7B 模型在普通 DDP 下每张 GPU 需要 "
              "{states:.0f} GB 的模型状态，超过一张 {card:.0f} GB 的卡：这就是下一个问题。"},
    "speedup.5": {
        "en": "On this machine: the 2-rank timelines of section 2 show how much communication stays exposed "
              "after backward, and the throughput table of section 4 how little speedup the few cores leave "
              "room to measure.",
        "zh": "在本机上：第 2 节的 2-rank 时间线显示反向之后还有多少通信暴露在外，第 4 节的吞吐量表则说明"
              "这几个 CPU 核心能测出的加速比有多有限。"},
    "speedup.verdict": {"en": "A number without its conditions.", "zh": "一个脱离前提条件的数字。"},

    # --- §7: 7B on 4 × A100-80GB ------------------------------------------------------------
    "seven_b": {"en": "Answer: part by part, for LLaMA-7B with mixed-precision AdamW",
                "zh": "答案：逐项核对，以 LLaMA-7B 加混合精度 AdamW 为例"},
    "seven_b.1": {"en": "{states}", "zh": "{states}"},
    "seven_b.2": {"en": "{acts}", "zh": "{acts}"},
    "seven_b.3": {"en": "{micro}", "zh": "{micro}"},
    "seven_b.4": {
        "en": "'14 GB in fp16' is the weights only ({weights:.1f} GB). Training with Adam holds 16 bytes per "
              "parameter: {ddp_states:.0f} GB per GPU with plain DDP, more than {card:.0f} GB before a single "
              "activation. Even with full recomputation DDP needs {best_ddp:.0f} GB: {ddp_margin}.",
        "zh": "“fp16 下 14 GB”只是权重（{weights:.1f} GB）。用 Adam 训练时每个参数占 16 字节：普通 DDP "
              "下每张 GPU {ddp_states:.0f} GB，还没放一个激活值就超过了 {card:.0f} GB。即使完全重计算，"
              "DDP 也需要 {best_ddp:.0f} GB：{ddp_margin}。"},
    "seven_b.5": {
        "en": "ZeRO-1 alone makes it fit: {z1_states:.1f} GB of states per GPU, room for micro-batch "
              "{micro_batch} at 2048 tokens without recomputation ({z1_margin}, before buffers and "
              "fragmentation); ZeRO-2 and ZeRO-3 leave more room ({z2_states:.1f} and {z3_states:.1f} GB of "
              "states).",
        "zh": "单靠 ZeRO-1 就放得下：每张 GPU {z1_states:.1f} GB 的状态；不做重计算、序列长 2048 个 token "
              "时，微批次最大可以取 {micro_batch}（{z1_margin}，未计缓冲区和显存碎片）；ZeRO-2 和 ZeRO-3 "
              "留出的空间更多（状态分别为 {z2_states:.1f} 和 {z3_states:.1f} GB）。"},
    "seven_b.6": {
        "en": "'Below 20 GB with recomputation' never holds on 4 GPUs: the smallest total, ZeRO-3 with full "
              "recomputation, is {z3_total:.1f} GB. What recomputation really does is shrink activations per "
              "sequence from {act_none:.1f} GB (LLaMA's layer; GPT's 34 + 5as/h would say {act_gpt:.1f}) to "
              "{act_selective:.1f} (selective) or {act_full:.2f} GB (full), so the batch can grow far more "
              "than 2× once the states fit. Full recomputation costs one extra forward, +{extra:.0%} of the "
              "step's FLOPs; selective recomputes only the attention scores (a small share, Korthikanti et "
              "al. §5).",
        "zh": "“用重计算把显存压到 20 GB 以下”在 4 张 GPU 上从来不成立：最小的总量（ZeRO-3 加完全重计算）"
              "也有 {z3_total:.1f} GB。重计算真正做的，是把每条序列的激活值从 {act_none:.1f} GB（LLaMA "
              "的层；按 GPT 的 34 + 5as/h 算是 {act_gpt:.1f}）压到 {act_selective:.1f}（选择性）或 "
              "{act_full:.2f} GB（完全），所以模型状态放下之后，batch 能增长的远不止 2×。完全重计算多做一次"
              "前向，占一步 FLOPs 的 +{extra:.0%}；选择性重计算只重算注意力分数（占比很小，Korthikanti 等 "
              "§5）。"},
    "seven_b.7": {
        "en": "No TP or PP needed indeed, but DP must be ZeRO (or FSDP), not DDP. ZeRO-3's extra all-gather "
              "costs {ratio:.1f}× DDP's traffic: {zero3_gb:.1f} vs {ddp_gb:.1f} GB per GPU and step, "
              "~{zero3_ms:.0f} vs ~{ddp_ms:.0f} ms at NVLink3's {nvlink:.0f} GB/s — so ZeRO-1/2 (same "
              "traffic as DDP) is the first choice when it fits.",
        "zh": "确实不需要 TP 或 PP，但数据并行必须是 ZeRO（或 FSDP），而不是 DDP。ZeRO-3 多出的 all-gather "
              "让通信量变成 DDP 的 {ratio:.1f}×：每张 GPU 每步 {zero3_gb:.1f} 对 {ddp_gb:.1f} GB，按 "
              "NVLink3 的 {nvlink:.0f} GB/s 约为 {zero3_ms:.0f} 对 {ddp_ms:.0f} ms——所以放得下时，"
              "ZeRO-1/2（通信量与 DDP 相同）是首选。"},
    "seven_b.verdict": {"en": "It fits without TP or PP, but not with plain DDP: ZeRO-1 or more.",
                        "zh": "不用 TP 或 PP 也放得下，但普通 DDP 不行：至少要 ZeRO-1。"},
    "seven_b.fits": {"en": "fits, {gb:.1f} GB spare", "zh": "放得下，还剩 {gb:.1f} GB"},
    "seven_b.short": {"en": "does NOT fit, {gb:.1f} GB short", "zh": "放不下，还差 {gb:.1f} GB"},

    # --- §7: the 7B answer in 30 seconds -----------------------------------------------------
    "seven_b_30s": {"en": "A 30-second answer", "zh": "30 秒版回答"},
    "seven_b_30s.1": {
        "en": "\"The fp16 weights are only {weights:.1f} GB. At 16 bytes per parameter, plain DDP's training "
              "states are {states:.0f} GB, more than an {card:.0f} GB card holds. No tensor or pipeline "
              "parallelism is needed: ZeRO-1 (or ZeRO-2, same traffic as DDP) shards the optimizer states "
              "over the four GPUs and they fit with room to spare; ZeRO-3/FSDP also shards the weights, for "
              "{ratio:.1f}× the communication. Activations then set the micro-batch; recomputation shrinks "
              "them several-fold, so the batch can grow far more than the answer's doubling.\"",
        "zh": "“fp16 权重只有 {weights:.1f} GB。按每个参数 16 字节算，普通 DDP 的训练状态有 {states:.0f} GB，"
              "超过一张 {card:.0f} GB 的卡。不需要张量并行或流水线并行：ZeRO-1（或通信量与 DDP 相同的 "
              "ZeRO-2）把优化器状态分片到四张 GPU 上，放下之后还绰绰有余；ZeRO-3/FSDP 连权重也分片，代价是 "
              "{ratio:.1f}× 的通信量。然后由激活值决定微批次大小；重计算能把激活值压缩好几倍，所以 batch "
              "能增长的远不止原答案说的翻倍。”"},
    "seven_b_30s.2": {"en": "Numbers: the tables above.", "zh": "数字见上面的表格。"},

    # --- §7: synchronous vs asynchronous -----------------------------------------------------
    "sync": {"en": "Answer", "zh": "答案"},
    "sync.1": {
        "en": "DDP is <b>synchronous</b>: each step averages all ranks' gradients from the same parameters "
              "(hence section 1's match to rounding). Its \"async\" is <i>communication</i> (bucket "
              "all-reduces with <code>async_op=True</code> during backward, section 2), which changes "
              "nothing in the result.",
        "zh": "DDP 是<b>同步</b>的：每一步都对所有 rank 在同一份参数上算出的梯度取平均（所以第 1 节的结果"
              "与单卡一致到舍入误差）。它的“异步”指的是<i>通信</i>（反向过程中用 "
              "<code>async_op=True</code> 发起各个桶的 all-reduce，第 2 节），对结果没有任何影响。"},
    "sync.2": {
        "en": "<i>Asynchronous SGD</i> applies gradients computed on <b>stale</b> parameters, workers never "
              "waiting: through a parameter server in Downpour SGD (Dean et al., NeurIPS 2012), or "
              "lock-free threads writing into shared parameters in Hogwild! (Recht et al., NeurIPS 2011). "
              "It hides slow workers, but gradients τ steps old are not single-device training and need "
              "smaller learning rates or staleness bounds.",
        "zh": "<i>异步 SGD</i> 用在<b>过时</b>参数上算出的梯度去更新，worker 之间从不互相等待：Downpour SGD "
              "通过参数服务器实现（Dean 等，NeurIPS 2012），Hogwild! 则让多个线程无锁地写共享参数"
              "（Recht 等，NeurIPS 2011）。它能掩盖慢 worker，但落后 τ 步的梯度已经不等价于单卡训练，"
              "需要更小的学习率或限制过时的步数。"},
    "sync.3": {
        "en": "Large-model training is synchronous, handling stragglers with backup workers or elasticity "
              "(Chen et al., <i>Revisiting Distributed Synchronous SGD</i>, 2016).",
        "zh": "大模型训练都是同步的，掉队的节点靠备份 worker 或弹性训练来应对（Chen 等，"
              "<i>Revisiting Distributed Synchronous SGD</i>，2016）。"},

    # --- §7: gradient accumulation -----------------------------------------------------------
    "accumulation": {"en": "Answer", "zh": "答案"},
    "accumulation.1": {
        "en": "<b>Exactly, under conditions</b> (section 3 measured it: same losses, gradients, parameters "
              "and bytes per optimizer step, to rounding):",
        "zh": "<b>完全等价，但有条件</b>（第 3 节实测过：每个优化器步的损失、梯度、参数和字节数都相同，"
              "差异只在舍入误差级别）："},
    "accumulation.2": {
        "en": "divide each micro-batch loss by the number of micro-batches, or, when their token counts "
              "differ (padding, packing), by the <b>total token count of the whole batch</b>;",
        "zh": "每个微批次的损失要除以微批次个数；各微批次的 token 数不同时（padding、packing），要除以"
              "<b>整个 batch 的总 token 数</b>；"},
    "accumulation.3": {
        "en": "no batch-dependent layers (BatchNorm sees micro-batches; LayerNorm is per sample);",
        "zh": "不能有依赖 batch 的层（BatchNorm 只能看到微批次；LayerNorm 按样本计算，不受影响）；"},
    "accumulation.4": {
        "en": "in DDP, wrap all but the last micro-step in <code>no_sync()</code>, or every micro-step "
              "all-reduces (4× the traffic);",
        "zh": "在 DDP 里，除最后一个微步外都要包在 <code>no_sync()</code> 里，否则每个微步都做一次 "
              "all-reduce（4× 的通信量）；"},
    "accumulation.5": {"en": "learning-rate schedules and warm-up count optimizer steps, not micro-steps;",
                       "zh": "学习率调度和 warm-up 按优化器步计数，而不是按微步计数；"},
    "accumulation.6": {"en": "it buys memory, not speed: the micro-batches run one after another.",
                       "zh": "它换来的是显存，不是速度：各个微批次是一个接一个执行的。"},

    # --- §7: explain data parallelism in 30 seconds ------------------------------------------
    "thirty_seconds": {"en": "A 30-second answer", "zh": "30 秒版回答"},
    "thirty_seconds.1": {
        "en": "\"DP replicates the model and all-reduces gradients after each backward: exactly "
              "single-device training on the global batch. A ring sends ~{ring:.0f}× the gradient size per "
              "GPU whatever the GPU count, and DDP hides most of it behind backward with buckets; "
              "{ib_plain:.1f}× or {nv_plain:.2f}× on 4 GPUs depends on the link, the batch per GPU and that "
              "overlap. Accumulation with <code>no_sync</code> is exactly a bigger batch; compression helps "
              "on slow links, but all-gather-based schemes scale badly. When the model states do not fit, "
              "ZeRO/FSDP shard them.\"",
        "zh": "“数据并行把模型复制到每张卡上，每次反向之后对梯度做 all-reduce：与在全局 batch 上单卡训练"
              "完全等价。不管多少张 GPU，ring 在每张 GPU 上发送的字节数都约为梯度大小的 {ring:.0f}×，DDP "
              "再用分桶把大部分通信藏到反向计算后面；4 张 GPU 上是 {ib_plain:.1f}× 还是 {nv_plain:.2f}×，"
              "取决于链路、每张 GPU 的 batch 和这种重叠。配合 <code>no_sync</code> 的梯度累积与更大的 "
              "batch 完全等价；梯度压缩在慢链路上有用，但基于 all-gather 的方案扩展性很差。模型状态放不下时，"
              "就用 ZeRO/FSDP 把它们分片。”"},
}

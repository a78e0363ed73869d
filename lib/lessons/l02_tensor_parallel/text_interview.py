"""Notebook 02's interview answers in English and Chinese (``INTERVIEW``; keys as
``text.py`` says), read through ``text.INTERVIEW``.
"""

INTERVIEW = {
    # --- (a) -----------------------------------------------------------------------------
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.verdict": {
        "en": "Half right: the split yes, the count no — 4 per block per step.",
        "zh": "对一半：切分方式没错，次数不对——每个 block 每个训练步是 4 次。"},
    "a.1": {
        "en": "Counted in §2 and §4 (t = {tp}): one block issues {fwd} in forward and {bwd} in backward; "
              "<code>cost.tp_comm_per_layer</code> says the same at GPT-3's shape: {fwd_formula} + {bwd_formula}.",
        "zh": "§2 和 §4 里数过（t = {tp}）：一个 block 前向发起 {fwd}，反向发起 {bwd}；"
              "<code>cost.tp_comm_per_layer</code> 在 GPT-3 的形状下给出同样的结果：{fwd_formula} + {bwd_formula}。"},
    "a.2": {
        "en": "The split is right (q, k, v by columns = by heads; proj by rows; same for fc1/fc2), but 'once per step' is "
              "not: it is one all-reduce per sub-block per pass — attention and MLP, forward and backward.",
        "zh": "切分是对的（q、k、v 按列切 = 按注意力头切；proj 按行切；fc1/fc2 同理），但“每步通信一次”不对："
              "是每个子模块、每个方向各一次 all-reduce——attention 和 MLP，前向和反向。"},
    "a.3": {
        "en": "Embedding and loss add their own (§3): one for the embedding's g, one for lm_head's f, three tiny ones for the loss.",
        "zh": "embedding 和 loss 还有各自的通信（§3）：embedding 的 g 一次，lm_head 的 f 一次，loss 再加三次很小的。"},
    # --- (b) -----------------------------------------------------------------------------
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.verdict": {
        "en": "The number is near one layer's activations at micro-batch 1 ({act_gb:.2f} GB), "
              "not its parameters ({param_gb:.1f} GB in fp16).",
        "zh": "这个数接近的是微批次为 1 时一层的激活值（{act_gb:.2f} GB），"
              "而不是它的参数（fp16 下 {param_gb:.1f} GB）。"},
    "b.1": {
        "en": "Parameters of one layer: 12 h² = {params:,} (<code>cost.transformer_params(1, 12288)</code>) = "
              "{param_gb:.2f} GB in fp16 — not 2.8 GB, and no other count of one layer's weights gives it.",
        "zh": "一层的参数量：12 h² = {params:,}（<code>cost.transformer_params(1, 12288)</code>），"
              "fp16 下是 {param_gb:.2f} GB——不是 2.8 GB，一层的权重怎么数也得不到这个数。"},
    "b.2": {
        "en": "Activations of one layer, b = 1, s = 2048, no TP: sbh(34 + 5as/h) = {act_gb:.2f} GB "
              "({act_gib:.2f} GiB; <code>cost.activation_memory</code>): the only per-layer figure near 2.8 GB.",
        "zh": "一层的激活值，b = 1，s = 2048，不开 TP：sbh(34 + 5as/h) = {act_gb:.2f} GB"
              "（{act_gib:.2f} GiB；<code>cost.activation_memory</code>）：这是唯一接近 2.8 GB 的每层数字。"},
    "b.3": {
        "en": "With t = 8 each GPU keeps {act_tp8_gb:.2f} GB of them, {act_tp8_sp_gb:.2f} GB with SP; "
              "the layer's parameters become {param_tp8_gb:.2f} GB per GPU.",
        "zh": "t = 8 时每张 GPU 保存其中 {act_tp8_gb:.2f} GB，开序列并行后是 {act_tp8_sp_gb:.2f} GB；"
              "这一层的参数每张 GPU 只剩 {param_tp8_gb:.2f} GB。"},
    "b.4": {
        "en": "A layer fits on one 80 GB GPU easily; what does not fit is the whole model's training state — "
              "{state_tb:.2f} TB with mixed-precision Adam (16 bytes per parameter, <code>cost.zero_memory</code>) — "
              "plus the activations of all 96 layers.",
        "zh": "一层在一张 80 GB 的 GPU 上绰绰有余；放不下的是整个模型的训练状态——"
              "混合精度 Adam 下 {state_tb:.2f} TB（每个参数 16 字节，<code>cost.zero_memory</code>）——"
              "再加上全部 96 层的激活值。"},
    # --- (c) -----------------------------------------------------------------------------
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.verdict": {"en": "Does not hold: {fwd} and {bwd}.",
                  "zh": "不成立：前向 {fwd} 次，反向 {bwd} 次。"},
    "c.1": {
        "en": "Per layer: {fwd} all-reduces forward (g after attention, g after the MLP) and {bwd} "
              "backward (f before each), counted in §2 and §4.",
        "zh": "每层前向 {fwd} 次 all-reduce（attention 之后的 g、MLP 之后的 g），反向 {bwd} 次"
              "（各自前面的 f），§2 和 §4 里数过。"},
    "c.2": {
        "en": "Megatron's paper says it directly: 4 communication operations in the forward and backward pass of one layer "
              "(Shoeybi et al. 2019, Fig. 4).",
        "zh": "Megatron 的论文原话就是：一层的前向和反向一共 4 次通信操作"
              "（Shoeybi et al. 2019, Fig. 4）。"},
    # --- (d) -----------------------------------------------------------------------------
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.verdict": {
        "en": "Right as marketed, but it is both directions added: 300 GB/s each way.",
        "zh": "按宣传口径没错，但那是两个方向加起来的：每个方向 300 GB/s。"},
    "d.1": {
        "en": "600 GB/s is the marketed total: {links:g} NVLink3 links × 25 GB/s × 2 directions "
              "(<code>hardware.LINK_PRESETS['NVLink3']</code>: {per_direction:g} GB/s per direction, {total:g} total).",
        "zh": "600 GB/s 是宣传的总带宽：{links:g} 条 NVLink3 链路 × 25 GB/s × 2 个方向"
              "（<code>hardware.LINK_PRESETS['NVLink3']</code>：每个方向 {per_direction:g} GB/s，合计 {total:g}）。"},
    "d.2": {
        "en": "A ring sends and receives at the same time, each direction at {per_direction:g} GB/s: that is the β to use.",
        "zh": "环形算法同时收发，每个方向 {per_direction:g} GB/s：这才是该代入的 β。"},
    "d.3": {
        "en": "One 48 MiB all-reduce on 8 GPUs: {one_ms:.2f} ms (α-β model, <code>cost.collective_time</code>).",
        "zh": "8 张 GPU 上一次 48 MiB 的 all-reduce：{one_ms:.2f} ms（α-β 模型，<code>cost.collective_time</code>）。"},
    # --- (e) -----------------------------------------------------------------------------
    "e": {"en": "(e) answer", "zh": "(e) 答案"},
    "e.verdict": {
        "en": "48 MB holds (as 48 MiB); 96 MB undercounts what each GPU sends per layer: by "
              "{fwd_ratio:g}× in forward, {step_ratio:g}× over the step.",
        "zh": "48 MB 成立（准确说是 48 MiB）；96 MB 低估了每张 GPU 每层发送的数据量："
              "前向实际是它的 {fwd_ratio:g}×，整个训练步是 {step_ratio:g}×。"},
    "e.1": {
        "en": "Message: b·s·h·2 = {message:,.0f} B = {message_mib:g} MiB ({message_mb:.1f} MB): right, as a message size.",
        "zh": "消息大小：b·s·h·2 = {message:,.0f} B = {message_mib:g} MiB（{message_mb:.1f} MB）：作为单条消息的大小，没错。"},
    "e.2": {
        "en": "A ring all-reduce on 8 GPUs sends 2·7/8 of it per GPU: {per_ar_mib:g} MiB "
              "(<code>cost.collective_bytes</code>).",
        "zh": "8 张 GPU 上的 ring all-reduce，每张 GPU 发送它的 2·7/8：{per_ar_mib:g} MiB"
              "（<code>cost.collective_bytes</code>）。"},
    "e.3": {
        "en": "Forward only ({fwd}): {fwd_bytes:,.0f} B = {fwd_mib:g} MiB sent per GPU.",
        "zh": "只算前向（{fwd}）：每张 GPU 发送 {fwd_bytes:,.0f} B = {fwd_mib:g} MiB。"},
    "e.4": {
        "en": "Forward + backward, per layer per step: {step_bytes:,.0f} B = {step_mib:g} MiB "
              "(<code>cost.tp_comm_per_layer(1, 2048, 12288, 8)['bytes']</code>; 8·(7/8)·M).",
        "zh": "前向 + 反向，每层每个训练步：{step_bytes:,.0f} B = {step_mib:g} MiB"
              "（<code>cost.tp_comm_per_layer(1, 2048, 12288, 8)['bytes']</code>；8·(7/8)·M）。"},
    "e.5": {
        "en": "'96 MB' = two messages, {two_mib:g} MiB: the forward's two all-reduces counted by their size, "
              "neither the bytes on the wire nor the whole step.",
        "zh": "“96 MB”= 两条消息，{two_mib:g} MiB：按消息大小数了前向的两次 all-reduce，"
              "既不是线上实际传输的字节数，也不是整个训练步的。"},
    # --- (f) -----------------------------------------------------------------------------
    "f": {"en": "(f) answer", "zh": "(f) 答案"},
    "f.verdict": {
        "en": "Does not hold: SP moves the same bytes (more, counting the re-gather); it divides the activation memory by t.",
        "zh": "不成立：序列并行的通信量不变（算上反向的重新 all-gather 还更多）；它降低的是激活显存，除以 t。"},
    "f.tp_row": {
        "en": "t={tp}: TP {tp_kib:g} KiB, SP {sp_kib:g} KiB per block per step = TP + the re-gather {regather_kib:g} KiB "
              "(measured, §4)",
        "zh": "t={tp}：每个 block 每个训练步 TP {tp_kib:g} KiB，SP {sp_kib:g} KiB = TP + 重新 all-gather 的 {regather_kib:g} KiB"
              "（实测，§4）"},
    "f.1": {
        "en": "GPT-3, t=8, fp16: TP {gpt3_tp_mib:g} MiB, SP {gpt3_sp_mib:g} MiB per layer per step "
              "(an all-reduce = reduce-scatter + all-gather; Korthikanti et al. §4.2.2 say the bandwidth is the same).",
        "zh": "GPT-3，t=8，fp16：每层每个训练步 TP {gpt3_tp_mib:g} MiB，SP {gpt3_sp_mib:g} MiB"
              "（一次 all-reduce = reduce-scatter + all-gather；Korthikanti et al. §4.2.2 也说带宽开销相同）。"},
    "f.act_row": {
        "en": "t={tp}: activations per block {without:,} B without SP, {with_sp:,} B with it ({ratio:.2f}x; measured, §6)",
        "zh": "t={tp}：每个 block 的激活值，不开 SP {without:,} B，开 SP {with_sp:,} B（{ratio:.2f}x；实测，§6）"},
    # --- (g) -----------------------------------------------------------------------------
    "g": {"en": "(g) answer", "zh": "(g) 答案"},
    "g.verdict": {
        "en": "The named mechanism is wrong (a data dependency); overlap is real, in backward and, chunked with SP, in "
              "forward; what it buys is bounded by the communication share and by what the model lets overlap.",
        "zh": "说的机制是错的（有数据依赖）；但重叠确实存在：反向可以，开序列并行并分块后前向也可以；"
              "能换来多少，受通信占比和模型允许重叠的部分限制。"},
    "g.1": {
        "en": "Not as stated: the LayerNorm after g reads g's result (the residual stream), so it cannot run during that "
              "all-reduce — a data dependency.",
        "zh": "照原话做不到：g 之后的 LayerNorm 读的正是 g 的结果（残差流），所以它不能在这次 all-reduce 进行时运行"
              "——这是数据依赖。"},
    "g.2": {
        "en": "Forward overlap exists all the same: the dependency is row by row, so with SP the all-gather → column GEMM and "
              "row GEMM → reduce-scatter are cut into chunks and pipelined (Wang et al., ASPLOS 2023; Megatron-Core / NeMo "
              "<code>tp_comm_overlap</code>, TransformerEngine userbuffers; our <code>overlap_chunks</code>, §8).",
        "zh": "前向重叠照样存在：依赖是逐行的，所以开序列并行时，all-gather → 列并行 GEMM 和行并行 GEMM → reduce-scatter "
              "都可以切成块做流水（Wang et al., ASPLOS 2023；Megatron-Core / NeMo 的 "
              "<code>tp_comm_overlap</code>，TransformerEngine 的 userbuffers；本实验的 <code>overlap_chunks</code>，§8）。"},
    "g.3": {
        "en": "In backward, f's input-gradient all-reduce is independent of the weight-gradient matmul: start one, compute "
              "the other (Megatron-LM's async all-reduce; our <code>overlap=True</code>, §8).",
        "zh": "反向时，f 对输入梯度的 all-reduce 与权重梯度的矩阵乘互不依赖：先发起通信，同时算另一个"
              "（Megatron-LM 的异步 all-reduce；本实验的 <code>overlap=True</code>，§8）。"},
    "g.4": {
        "en": "Measured here (CPU, t = {tp}): {gain:+.1%} throughput ({load}).",
        "zh": "这里实测（CPU，t = {tp}）：吞吐 {gain:+.1%}（{load}）。"},
    "g.5": {
        "en": "GPU-scale model, GPT-3 at t = 8 on A100/NVLink3. Without SP communication is {comm:.1%} of "
              "the step and only the backward half has something to hide behind: at most {best:+.1%}. With SP "
              "({sp_comm:.1%}, the backward re-gathers included): backward hidden {sp_bwd:+.1%}; "
              "forward chunked too (<code>cost.tp_forward_overlap</code>) {sp_c4:+.1%} at c = 4 and "
              "{sp_c8:+.1%} at c = 8; everything hidden {sp_full:+.1%}.",
        "zh": "GPU 规模的模型，GPT-3，t = 8，A100/NVLink3。不开序列并行时通信占训练步的 {comm:.1%}，"
              "而且只有反向那一半有计算可以掩盖：最多 {best:+.1%}。开序列并行"
              "（{sp_comm:.1%}，含反向的重新 all-gather）：掩盖反向 {sp_bwd:+.1%}；"
              "前向也分块（<code>cost.tp_forward_overlap</code>）时，c = 4 为 {sp_c4:+.1%}，"
              "c = 8 为 {sp_c8:+.1%}；全部掩盖 {sp_full:+.1%}。"},
    "g.6": {
        "en": "So the {best:+.1%} ceiling belongs to a model of overlap (backward only), not to the hardware: model "
              "the forward's chunks and it moves. These are still bounds: what smaller GEMMs lose in efficiency, and the "
              "memory bandwidth the collectives take from them, are left out.",
        "zh": "所以 {best:+.1%} 这个上限来自对重叠的一种建模（只重叠反向），不是硬件决定的：把前向分块也建模进去，它就变了。"
              "这些仍然只是上界：更小的 GEMM 损失的效率，以及集合通信从 GEMM 那里抢走的显存带宽，都没有算进去。"},
    "g.7": {
        "en": "The '5–10%' comes with no source or setup; in the model only SP's chunked forward together with backward "
              "overlap reaches it.",
        "zh": "“5–10%”既没有出处也没有实验配置；在模型里，只有序列并行的前向分块加上反向重叠才能达到。"},
    # --- (h) -----------------------------------------------------------------------------
    "h": {"en": "(h) answer", "zh": "(h) 答案"},
    "h.verdict": {
        "en": "Partly: MFU falls when the TP ring crosses nodes, but on a node with a card per GPU by far less than half; "
              "t = 8 stays fastest.",
        "zh": "部分成立：TP 的环跨节点时 MFU 会下降，但在每张 GPU 配一张网卡的节点上，降幅远不到一半；"
              "t = 8 仍然最快。"},
    "h.1": {
        "en": "t = 8 over {link8}: MFU {mfu8:.1%}, communication {comm8:.1%} of the step.",
        "zh": "t = 8，走 {link8}：MFU {mfu8:.1%}，通信占训练步的 {comm8:.1%}。"},
    "h.2": {
        "en": "t = 16 across two nodes: NCCL runs one ring per network card, so the 8 GPUs of each node drive its 8 {link16} "
              "cards at once, {bw16_gb:g} GB/s of bus bandwidth (a DGX A100 measures 192 GB/s, nccl#812): MFU {mfu16:.1%}, "
              "communication {comm16:.1%}.",
        "zh": "t = 16，跨两个节点：NCCL 每张网卡跑一个环，所以每个节点的 8 张 GPU 同时用满它的 8 张 {link16} 网卡，"
              "总线带宽 {bw16_gb:g} GB/s（DGX A100 实测 192 GB/s，nccl#812）：MFU {mfu16:.1%}，"
              "通信占 {comm16:.1%}。"},
    "h.3": {
        "en": "A node with a single {ib_gb:g} GB/s card would give {port_mfu:.1%}: the 'collapse' is a one-card node's.",
        "zh": "如果一个节点只有一张 {ib_gb:g} GB/s 的网卡，MFU 是 {port_mfu:.1%}：所谓“暴跌”是单网卡节点的情况。"},
    "h.4": {
        "en": "With α = 0 the t = 16 communication is still {no_alpha:.0%} of what it is: mostly bandwidth "
              "({bw_ratio:g}× below NVLink3), some latency.",
        "zh": "令 α = 0，t = 16 的通信时间仍是原来的 {no_alpha:.0%}：主要是带宽问题"
              "（NVLink3 是它的 {bw_ratio:g}×），延迟只占一小部分。"},
    # --- (i) -----------------------------------------------------------------------------
    "i": {"en": "(i) answer", "zh": "(i) 答案"},
    "i.verdict": {
        "en": "The trend holds (t = 8 is less efficient); 30% is a slow-link (PCIe-class) share, not NVLink's; "
              "'saturation' is the wrong mechanism.",
        "zh": "趋势成立（t = 8 效率更低）；30% 是慢速链路（PCIe 一级）上的占比，不是 NVLink 的；"
              "“带宽饱和”这个机制说错了。"},
    "i.1": {
        "en": "A100/NVLink3, b = 1: communication {comm4:.1%} at t = 4, {comm8:.1%} at t = 8; "
              "MFU {mfu4:.1%} → {mfu8:.1%}.",
        "zh": "A100/NVLink3，b = 1：通信占比 t = 4 时 {comm4:.1%}，t = 8 时 {comm8:.1%}；"
              "MFU {mfu4:.1%} → {mfu8:.1%}。"},
    "i.2": {
        "en": "Bytes each GPU sends per layer: {bytes4_mib:g} MiB at t = 4, {bytes8_mib:g} MiB at t = 8 "
              "(×(7/8)/(3/4)); compute per GPU halves. The share grows because compute shrinks, not because the link fills up: "
              "each GPU keeps its own 300 GB/s through the NVSwitch at any t ≤ 8.",
        "zh": "每张 GPU 每层发送的字节数：t = 4 时 {bytes4_mib:g} MiB，t = 8 时 {bytes8_mib:g} MiB"
              "（×(7/8)/(3/4)）；而每张 GPU 的计算量减半。占比变大是因为计算变少了，不是因为链路被占满："
              "t ≤ 8 时，每张 GPU 经 NVSwitch 始终独享自己的 300 GB/s。"},
    "i.3": {
        "en": "The claimed 30% at t = 4 lies between the model's NVLink figure ({comm4:.1%}) and its "
              "PCIe-box figure ({pcie4:.1%}; t = 8: {pcie8:.1%}): far above NVLink, "
              "somewhat below PCIe, so it reads as a slow-link number; the model does not reproduce 30% exactly on either.",
        "zh": "所称 t = 4 时 30% 的通信占比，落在模型给出的 NVLink 数字（{comm4:.1%}）和 PCIe 机器的数字"
              "（{pcie4:.1%}；t = 8：{pcie8:.1%}）之间：远高于 NVLink，略低于 PCIe，"
              "所以更像是慢速链路上的数字；两种平台上模型都不能精确得出 30%。"},
    # --- (j), the 30-second answer, §8's fold-out on chunking ---------------------------
    "j": {"en": "(j) answer", "zh": "(j) 答案"},
    "j.1": {
        "en": "<i>Sequence Parallelism: Long Sequence Training from System Perspective</i> (Li et al., arXiv 2105.13120, "
              "ACL 2023) is a different technique: it splits the <i>whole</i> sequence across devices, attention included, "
              "and passes keys and values around a ring (Ring Self-Attention) — closer to context parallelism "
              "(notebook 05).",
        "zh": "<i>Sequence Parallelism: Long Sequence Training from System Perspective</i>（Li et al., arXiv 2105.13120，"
              "ACL 2023）是另一种技术：它把<i>整个</i>序列切到各设备上，连 attention 也切，"
              "key 和 value 沿环传递（Ring Self-Attention）——更接近上下文并行"
              "（notebook 05）。"},
    "j.2": {
        "en": "The SP of this notebook — LayerNorm/dropout regions split along the sequence, g/ḡ as "
              "all-gather/reduce-scatter, activations ÷ t — is Korthikanti et al., <i>Reducing Activation Recomputation "
              "in Large Transformer Models</i> (arXiv 2205.05198, MLSys 2023), §4.2.2.",
        "zh": "本 notebook 的序列并行——LayerNorm/dropout 区域沿序列维切分，g/ḡ 变成 "
              "all-gather/reduce-scatter，激活值 ÷ t——出自 Korthikanti et al. 的 <i>Reducing Activation Recomputation "
              "in Large Transformer Models</i>（arXiv 2205.05198，MLSys 2023），§4.2.2。"},
    "j.3": {
        "en": "Same name, two methods: cite the one you mean.",
        "zh": "同一个名字，两种方法：引用时要说清楚指的是哪一个。"},
    "thirty_seconds": {"en": "A 30-second answer", "zh": "30 秒回答"},
    "thirty_seconds.1": {
        "en": "\"Megatron splits the first matmul of each sub-block by columns and the second by rows, so each sub-block "
              "needs one all-reduce: 2 forward, 2 backward per layer, each of b·s·h values; a ring sends 2(t−1)/t of "
              "that per GPU, almost independent of t, while compute falls as 1/t — hence TP inside an NVLink node, "
              "where it costs a small share of the step. Across nodes every layer's collectives cross the network: "
              "with a card per GPU, as in a DGX A100, GPT-3 goes from {mfu8:.1%} MFU at t = 8 to {mfu16:.1%} at "
              "t = 16 in the time model of §7; with one card per node it falls to {port_mfu:.1%}. Sequence "
              "parallelism turns each all-reduce into reduce-scatter + all-gather: the same bytes (plus a re-gather "
              "in backward), but activations ÷ t. Overlap hides the backward all-reduces behind the weight-gradient "
              "matmuls and, with SP, most of the forward's too: the all-gather → GEMM and GEMM → reduce-scatter are "
              "cut into chunks and pipelined.\"",
        "zh": "“Megatron 把每个子模块的第一个矩阵乘按列切、第二个按行切，所以每个子模块只需要一次 all-reduce："
              "每层前向 2 次、反向 2 次，每次 b·s·h 个值；ring 算法每张 GPU 发送其中的 2(t−1)/t，几乎与 t 无关，"
              "而计算量按 1/t 下降——所以 TP 放在 NVLink 节点内，通信只占训练步的一小部分。跨节点时每一层的集合通信"
              "都要走网络：像 DGX A100 那样每张 GPU 一张网卡，按 §7 的时间模型，GPT-3 的 MFU 从 t = 8 的 {mfu8:.1%} "
              "降到 t = 16 的 {mfu16:.1%}；每个节点只有一张网卡则降到 {port_mfu:.1%}。序列并行把每次 all-reduce "
              "拆成 reduce-scatter + all-gather：通信量不变（反向还要多一次重新 all-gather），但激活值 ÷ t。"
              "通信重叠把反向的 all-reduce 藏在权重梯度的矩阵乘后面；开了序列并行，前向的大部分也能藏住："
              "把 all-gather → GEMM 和 GEMM → reduce-scatter 切成块做流水。”"},
    "chunking": {"en": "Interview: why can't chunking hide all of the forward communication?",
                 "zh": "面试题：为什么分块不能把前向通信全部藏住？"},
    "chunking.1": {
        "en": "The first chunk's all-gather (and the last chunk's reduce-scatter) has no GEMM to run beside: at least 1/c "
              "stays exposed, and each chunk pays the link latency again, while smaller GEMMs run less efficiently.",
        "zh": "第一块的 all-gather（以及最后一块的 reduce-scatter）旁边没有 GEMM 可以并行：至少有 1/c "
              "暴露在外；而且每一块都要再付一次链路延迟，更小的 GEMM 效率也更低。"},
    "chunking.2": {
        "en": "So c is a trade-off; the model above gives the 1/c part only.",
        "zh": "所以 c 是一个权衡；上面的模型只算了 1/c 这一部分。"},
    # --- the appendix ----------------------------------------------------------------------
    "numbers": {"en": "§11's numbers", "zh": "§11 的数字"},
    "numbers.1": {"en": "(a, c) per block per step: forward {fwd}, backward {bwd}",
                  "zh": "(a, c) 每个 block 每个训练步：前向 {fwd}，反向 {bwd}"},
    "numbers.2": {"en": "(b) GPT-3 layer: {params:,} params = {param_gb:.2f} GB fp16; "
                        "activations b=1 s=2048: {act_gb:.2f} GB",
                  "zh": "(b) GPT-3 的一层：{params:,} 个参数 = {param_gb:.2f} GB（fp16）；"
                        "激活值 b=1 s=2048：{act_gb:.2f} GB"},
    "numbers.3": {"en": "(d) NVLink3: {per_direction:g} GB/s per direction, {total:g} total",
                  "zh": "(d) NVLink3：每个方向 {per_direction:g} GB/s，合计 {total:g}"},
    "numbers.4": {"en": "(e) message {message:,.0f} B; sent per GPU per layer per step at t=8: {step_bytes:,.0f} B "
                        "(forward only {fwd_bytes:,.0f})",
                  "zh": "(e) 消息 {message:,.0f} B；t=8 时每张 GPU 每层每个训练步发送 {step_bytes:,.0f} B"
                        "（只算前向 {fwd_bytes:,.0f}）"},
    "numbers.5": {"en": "(f) GPT-3 t=8 bytes per layer per step: TP {gpt3_tp:,.0f}, SP {gpt3_sp:,.0f}",
                  "zh": "(f) GPT-3 t=8 每层每个训练步的字节数：TP {gpt3_tp:,.0f}，SP {gpt3_sp:,.0f}"},
    "numbers.6": {"en": "(g) GPT-3 t=8 A100: no SP comm share {comm:.1%}, backward overlap {best:.1%}; "
                        "SP {sp_comm:.1%}: backward {sp_bwd:.1%}, forward chunked c=4 "
                        "{sp_c4:.1%} (c=8 {sp_c8:.1%}), all hidden {sp_full:.1%}",
                  "zh": "(g) GPT-3 t=8 A100：不开 SP 通信占比 {comm:.1%}，反向重叠 {best:.1%}；"
                        "SP {sp_comm:.1%}：反向 {sp_bwd:.1%}，前向分块 c=4 "
                        "{sp_c4:.1%}（c=8 {sp_c8:.1%}），全部掩盖 {sp_full:.1%}"},
    "numbers.7": {"en": "(h) GPT-3 MFU: t=8 {mfu8:.1%} ({link8}), t=16 {mfu16:.1%} "
                        "({link16}, {bw16_gb:g} GB/s over 8 cards); one card a node: {port_mfu:.1%}",
                  "zh": "(h) GPT-3 MFU：t=8 {mfu8:.1%}（{link8}），t=16 {mfu16:.1%}"
                        "（{link16}，8 张网卡共 {bw16_gb:g} GB/s）；每节点一张网卡：{port_mfu:.1%}"},
    "numbers.8": {"en": "(i) 13B A100 comm share: t=4 {comm4:.1%}, t=8 {comm8:.1%}",
                  "zh": "(i) 13B A100 通信占比：t=4 {comm4:.1%}，t=8 {comm8:.1%}"},
}

"""Notebook 05's words in English and Chinese (``lessons.common.i18n`` catalogues).

``INTERVIEW``: §11's interview corner ((a)-(f), the 30-second answer) and the appendix's
numbers, shown by ``interview.py`` through ``lessons.common.interview.said``; keys with a
dot that are not numbered lines (``"b.item"``, ``"list.sep"``) are the pieces of a list an
answer writes. ``TEXT``: what the checkers of ``exercises.py`` tell the learner, and the
labels of ``widgets.py``. Every number is a field, formatted by the same spec in both
languages."""

INTERVIEW = {
    # how the answers join a list of numbers
    "list.sep": {"en": ", ", "zh": "，"},
    # (a) SP inside the TP group
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.verdict": {
        "en": "Does not hold for Megatron's SP: same bytes as TP (+25% with the re-gather); it saves "
              "memory, not traffic.",
        "zh": "对 Megatron 的序列并行不成立：通信量与张量并行相同（算上重新 gather 还要多 25%）；"
              "它省的是显存，不是通信。"},
    "a.1": {
        "en": "Counted in §6 (t = 2, fp32): Megatron SP sends {sp_kib:.0f} KiB per block and step; plain "
              "TP sends {tp2_kib:.0f} KiB (<code>cost.tp_comm_per_layer</code>, counted in notebook 02): "
              "SP sends more — the all-reduces become reduce-scatter + all-gather (same bytes) plus a "
              "re-gather of the saved shard in backward.",
        "zh": "§6 中实际计数（t = 2，fp32）：Megatron 序列并行每个 block 每步发送 {sp_kib:.0f} KiB；"
              "普通张量并行发送 {tp2_kib:.0f} KiB（<code>cost.tp_comm_per_layer</code>，在 notebook 02 "
              "中计数过）：序列并行发得更多——all-reduce 变成 reduce-scatter + all-gather（字节数相同），"
              "反向时还要把保存的分片再 all-gather 一次。"},
    "a.2": {
        "en": "At the 128k shape, t = 8, bf16: TP {tp8:.2f} GB, TP + SP {sp8:.2f} GB per layer per step "
              "(Korthikanti et al. §4.2.2: the bandwidth is the same as TP's).",
        "zh": "在 128k 的形状下，t = 8，bf16：张量并行每层每步 {tp8:.2f} GB，张量并行 + 序列并行 "
              "{sp8:.2f} GB（Korthikanti et al. §4.2.2：带宽与张量并行相同）。"},
    "a.3": {
        "en": "What SP divides is activation memory: {act_tp:.2f} GB -> {act_sp:.2f} GB per layer at "
              "t = 8 (<code>cost.activation_memory</code>, selective recomputation).",
        "zh": "序列并行切分的是激活值显存：t = 8 时每层从 {act_tp:.2f} GB 降到 {act_sp:.2f} GB"
              "（<code>cost.activation_memory</code>，选择性重计算）。"},
    "a.4": {
        "en": "What does send fewer bytes is a different design, outside the TP group: Ulysses at cp = 8 "
              "sends {ul8:.2f} GB per layer per step, {ratio:.0f}x less than Megatron SP's {msp8:.2f} GB "
              "at the same degree (§6); ring sends {ring8:.2f} GB.",
        "zh": "真正能少发字节的是另一种设计，而且在张量并行组之外：cp = 8 的 Ulysses 每层每步发送 "
              "{ul8:.2f} GB，同样并行度下 Megatron 序列并行要发 {msp8:.2f} GB，相差 {ratio:.0f}x（§6）；"
              "ring 发送 {ring8:.2f} GB。"},
    # (b) the cited paper
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.verdict": {
        "en": "The paper is real; it is a different technique from the one the sentence describes.",
        "zh": "论文确有其文；但它讲的是另一种技术，不是这句话描述的那种。"},
    "b.1": {
        "en": "The paper exists: Li, Xue, Baranwal, Li and You, ACL 2023 (Proceedings of the 61st Annual "
              "Meeting, long papers, pp. 2391–2404), first posted as arXiv 2105.13120 in May 2021. The "
              "year 2023 is the ACL version.",
        "zh": "这篇论文确实存在：Li、Xue、Baranwal、Li 和 You，ACL 2023（Proceedings of the 61st Annual "
              "Meeting，长文，pp. 2391–2404），最早于 2021 年以 arXiv 2105.13120 发布。2023 这个年份"
              "指的是 ACL 版本。"},
    "b.2": {
        "en": "It splits the <i>whole</i> input sequence across devices, attention included, and computes "
              "attention with <b>Ring Self-Attention</b>: keys and values passed round a ring of devices. "
              "It is the ancestor of ring attention (§5–§7) — not the SP that splits LayerNorm/dropout "
              "activations inside a TP group, which is Korthikanti et al., <i>Reducing Activation "
              "Recomputation in Large Transformer Models</i> (arXiv 2205.05198, MLSys 2023), §4.2.2.",
        "zh": "它把<i>整个</i>输入序列（包括注意力）切分到各设备上，用 <b>Ring Self-Attention</b> 计算注意力："
              "key 和 value 沿设备组成的环传递。它是 ring attention（§5–§7）的前身——而不是在张量并行组内切分 "
              "LayerNorm/dropout 激活值的那种序列并行；后者出自 Korthikanti et al.，<i>Reducing Activation "
              "Recomputation in Large Transformer Models</i>（arXiv 2205.05198，MLSys 2023），§4.2.2。"},
    "b.3": {
        "en": "Nor does it cut TP's traffic: its ring moves every K/V block past every rank, {ring} per "
              "layer and step at the 128k shape (our ring, Liu-style with dK/dV on the ring) — bounded, "
              "not falling. Its claim is memory: the paper reports 3.0x longer sequences (13.7x larger "
              "batches) than TP on 64 P100s.",
        "zh": "它也没有减少张量并行的通信：它的环要把每个 K/V 块传过每个 rank，在 128k 形状下每层每步 "
              "{ring}（我们的 ring，仿 Liu 等人的做法，dK/dV 也在环上传）——有上界，但不随 cp 下降。"
              "它主张的是显存：论文报告在 64 张 P100 上，它支持的序列长度是张量并行的 3.0x（batch 大 13.7x）。"},
    "b.4": {
        "en": "Same name, two methods; the cited paper is the right one for ring-style sequence splitting, "
              "the wrong one for 'splitting activations inside the TP group'.",
        "zh": "同一个名字，两种方法；要讲环式的序列切分，引这篇论文是对的；要讲“在 TP 组内切分激活值”，"
              "引它就错了。"},
    "b.item": {"en": "{gb:.1f} GB at cp = {cp}", "zh": "cp = {cp} 时 {gb:.1f} GB"},
    # (c) a missing dimension
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.verdict": {
        "en": "Incomplete: long-context training adds a fifth dimension, the sequence (context "
              "parallelism).",
        "zh": "不完整：长上下文训练还有第五个维度——序列（上下文并行）。"},
    "c.1": {
        "en": "Yes: the sequence. Data parallelism splits the batch, TP the hidden width, PP the depth, EP "
              "the experts; none of them divides the activations of one long sequence (Jacobs et al. open "
              "the Ulysses paper with this observation).",
        "zh": "缺了：序列。数据并行切 batch，张量并行切隐藏维度，流水线并行切层数，专家并行切专家；"
              "它们都不能切分单条长序列的激活值（Jacobs 等人的 Ulysses 论文开篇就指出了这一点）。"},
    "c.2": {
        "en": "At 128k tokens and LLaMA-2-7B's width, one layer keeps {flash:.1f} GB even with a fused "
              "attention kernel; {L} layers: {total:.0f} GB. TP = 8 with SP: {tp8:.0f} GB per GPU (§1).",
        "zh": "在 128k 个 token、LLaMA-2-7B 的宽度下，即使用融合的注意力 kernel，一层也要保留 {flash:.1f} GB；"
              "{L} 层就是 {total:.0f} GB。张量并行 = 8 加序列并行：每张 GPU {tp8:.0f} GB（§1）。"},
    "c.3": {
        "en": "Context parallelism divides that by cp on top (§1), and its three forms trade bytes, balance "
              "and memory as measured in §4–§7.",
        "zh": "上下文并行在此基础上再除以 cp（§1），它的三种形式在通信量、负载均衡和显存之间各有取舍，"
              "见 §4–§7 的实测。"},
    # (d) ring or Ulysses
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.verdict": {
        "en": "Ulysses sends less (~8bsh/cp vs ~6bsh); ring scales past the head count and overlaps.",
        "zh": "Ulysses 发送得更少（~8bsh/cp 对 ~6bsh）；ring 的并行度可以超过头数，并且通信能与计算重叠。"},
    "d.1": {
        "en": "Counted in §6 (fp32, small model): cp = 4, ring {ring4:.0f} KiB vs Ulysses {ul4:.0f} KiB per "
              "layer per step, both equal to <code>cost.cp_comm_per_layer</code>.",
        "zh": "§6 中实际计数（fp32，小模型）：cp = 4 时，每层每步 ring {ring4:.0f} KiB，Ulysses {ul4:.0f} KiB，"
              "两者都与 <code>cost.cp_comm_per_layer</code> 相等。"},
    "d.2": {
        "en": "128k shape, bf16: Ulysses {ulysses} (falls as 1/cp); ring {ring} (does not).",
        "zh": "128k 形状，bf16：Ulysses {ulysses}（按 1/cp 下降）；ring {ring}（不下降）。"},
    "d.3": {
        "en": "Ulysses wins on bytes and runs any attention kernel, but cp <= heads (whole heads per rank; "
              "fewer with GQA) and its all-to-alls sit on the critical path.",
        "zh": "Ulysses 通信量更小，并且可以配任何注意力 kernel，但要求 cp <= 头数（每个 rank 分到整数个头；"
              "用 GQA 时上限更低），而且它的 all-to-all 在关键路径上。"},
    "d.4": {
        "en": "Ring wins when cp must exceed the heads, or the links are neighbour-to-neighbour: its "
              "transfers hide behind compute once a block is long enough — c >= {nvlink:,} positions over "
              "NVLink3, {ib:,} over IB-HDR (§5's grid).",
        "zh": "当 cp 必须超过头数，或者链路只连相邻设备时，ring 占优：只要块足够长，它的传输就能藏在计算后面"
              "——NVLink3 上 c >= {nvlink:,} 个位置，IB-HDR 上 {ib:,} 个（§5 的网格）。"},
    "d.5": {
        "en": "Production systems combine them: Ulysses inside a node, ring across nodes.",
        "zh": "生产系统会把两者结合：节点内用 Ulysses，跨节点用 ring。"},
    "d.ulysses": {"en": "{gb:.2f} GB at cp = {cp}", "zh": "cp = {cp} 时 {gb:.2f} GB"},
    "d.ring": {"en": "{gb:.1f} GB", "zh": "{gb:.1f} GB"},
    # (e) zig-zag
    "e": {"en": "(e) answer", "zh": "(e) 答案"},
    "e.verdict": {
        "en": "Balance: the causal mask makes later positions more expensive.",
        "zh": "为了负载均衡：因果掩码让越靠后的位置计算量越大。"},
    "e.1": {
        "en": "Counted in §4, cp = 4: contiguous ranks compute {c4} blocks (max/mean {c4_imb:.2f}); "
              "zig-zag {z4} (max/mean {z4_imb:.2f}). Same total work.",
        "zh": "§4 中实际计数，cp = 4：连续切分时各 rank 计算的块数为 {c4}（最大/平均 {c4_imb:.2f}）；"
              "zig-zag 为 {z4}（最大/平均 {z4_imb:.2f}）。总工作量相同。"},
    "e.2": {
        "en": "The imbalance of contiguous shards is 2cp/(cp+1): {imb8:.2f} at cp = 8, {imb32:.2f} at 32 — "
              "and the ring runs at the slowest rank's pace.",
        "zh": "连续切分的不均衡度是 2cp/(cp+1)：cp = 8 时 {imb8:.2f}，32 时 {imb32:.2f}——而环的速度"
              "取决于最慢的 rank。"},
    "e.3": {
        "en": "Zig-zag gives each rank chunk r and chunk 2cp−1−r: one with little to attend to, one with "
              "much. Every foreign block is then needed by exactly half, so each hop also computes half a "
              "block.",
        "zh": "zig-zag 让每个 rank 拿第 r 块和第 2cp−1−r 块：一块要关注的内容少，一块多。这样每个外来的块"
              "恰好有一半被用到，所以每一跳也只计算半个块。"},
    "e.4": {
        "en": "It changes nothing for Ulysses (each rank attends over the whole sequence); our Ulysses only "
              "reorders the gathered sequence back to position order.",
        "zh": "它对 Ulysses 没有影响（每个 rank 都在整条序列上做注意力）；我们的 Ulysses 只是把收集到的序列"
              "重新排回位置顺序。"},
    # (f) attention memory
    "f": {"en": "(f) answer", "zh": "(f) 答案"},
    "f.verdict": {
        "en": "Yes: by cp for everything, by cp² for ring attention's working set.",
        "zh": "能：所有激活值都除以 cp，ring attention 的工作集除以 cp²。"},
    "f.1": {
        "en": "Measured in §7 (s = 1024, fp32): ring peak {r1:.1f} MiB at cp = 1 -> {r4:.2f} MiB at cp = 4 "
              "({r_ratio:.0f}x, ~cp²); Ulysses {u1:.1f} -> {u4:.1f} MiB ({u_ratio:.1f}x, ~cp).",
        "zh": "§7 中实测（s = 1024，fp32）：ring 的峰值从 cp = 1 时的 {r1:.1f} MiB 降到 cp = 4 时的 {r4:.2f} MiB"
              "（{r_ratio:.0f}x，约 cp²）；Ulysses 从 {u1:.1f} 降到 {u4:.1f} MiB（{u_ratio:.1f}x，约 cp）。"},
    "f.2": {
        "en": "The largest tensor equals the formula's score term exactly: one (s/cp)² block per head "
              "(ring), s² for n_heads/cp heads (Ulysses).",
        "zh": "最大的张量与公式中的分数项完全一致：ring 是每个头一个 (s/cp)² 的块，Ulysses 是 n_heads/cp "
              "个头各 s²。"},
    "f.3": {
        "en": "Every other activation of the layer is divided by cp too: each rank holds s/cp positions of "
              "the residual stream (§1).",
        "zh": "这一层的其他激活值也都除以 cp：每个 rank 只持有残差流中的 s/cp 个位置（§1）。"},
    # §11's question "Answer in 30 seconds" (its fold-out)
    "thirty": {"en": "A 30-second answer", "zh": "30 秒回答"},
    "thirty.1": {
        "en": "Long context needs a fifth split, the sequence: every rank keeps s/cp positions, and only "
              "attention has to talk.",
        "zh": "长上下文需要第五种切分——切序列：每个 rank 保存 s/cp 个位置，只有注意力需要通信。"},
    "thirty.2": {
        "en": "Ring attention passes K/V blocks round a ring, overlapped with compute and merged with the "
              "online softmax; it scales to any cp but needs long enough blocks and, with a causal mask, "
              "zig-zag shards — contiguous ones leave the last rank 2cp/(cp+1) times the mean work.",
        "zh": "Ring attention 让 K/V 块沿环传递，通信与计算重叠，结果用 online softmax 合并；它对任何 cp 都适用，"
              "但需要足够长的块，在因果掩码下还需要 zig-zag 切分——连续切分会让最后一个 rank 承担平均工作量的 "
              "2cp/(cp+1) 倍。"},
    "thirty.3": {
        "en": "Ulysses all-to-alls from sequence shards to head shards and back: fewer bytes, falling as "
              "1/cp, any attention kernel, but cp ≤ heads.",
        "zh": "Ulysses 用 all-to-all 把按序列的切分换成按头的切分，再换回来：通信量更小，按 1/cp 下降，"
              "可以配任何注意力 kernel，但要求 cp ≤ 头数。"},
    "thirty.4": {
        "en": "Megatron's sequence parallelism is a different thing — inside TP, it splits "
              "LayerNorm/dropout activations, saves memory and sends the same bytes as TP (more, with the "
              "backward re-gather).",
        "zh": "Megatron 的序列并行是另一回事——它在张量并行内部切分 LayerNorm/dropout 的激活值，省显存，"
              "通信量与张量并行相同（算上反向时的重新 gather 还更多）。"},
    # the appendix
    "numbers": {"en": "Every number of §11", "zh": "§11 用到的所有数字"},
    "numbers.1": {"en": "(a) 128k, t=8, bf16, per layer per step: TP {tp8:.2f} GB, TP+SP {sp8:.2f} GB",
                  "zh": "(a) 128k，t=8，bf16，每层每步：TP {tp8:.2f} GB，TP+SP {sp8:.2f} GB"},
    "numbers.2": {"en": "(a) same, cp=8: Ulysses {ul8:.2f} GB, ring {ring8:.2f} GB",
                  "zh": "(a) 同上，cp=8：Ulysses {ul8:.2f} GB，ring {ring8:.2f} GB"},
    "numbers.3": {"en": "(a) activations per layer, t=8: {act_tp:.2f} -> {act_sp:.2f} GB",
                  "zh": "(a) 每层激活值，t=8：{act_tp:.2f} -> {act_sp:.2f} GB"},
    "numbers.4": {"en": "(a) counted, fp32 small model, t=cp=2: Megatron SP {sp2:,} B vs TP formula {tp2:,.0f} B",
                  "zh": "(a) 实际计数，fp32 小模型，t=cp=2：Megatron SP {sp2:,} B，TP 公式值 {tp2:,.0f} B"},
    "numbers.5": {"en": "(b) ring bytes per layer at 128k: {ring}",
                  "zh": "(b) 128k 下 ring 每层的字节数：{ring}"},
    "numbers.6": {"en": "(c) one layer at 128k (selective): {flash:.2f} GB; {L} layers {total:.0f} GB",
                  "zh": "(c) 128k 下一层（选择性重计算）：{flash:.2f} GB；{L} 层 {total:.0f} GB"},
    "numbers.7": {"en": "(d) Ulysses bytes per layer at 128k: {ulysses}",
                  "zh": "(d) 128k 下 Ulysses 每层的字节数：{ulysses}"},
    "numbers.8": {"en": "(e) contiguous max/mean: cp=4 {c4:.2f}, cp=32 {c32:.3f}; zigzag {z4:.2f}",
                  "zh": "(e) 连续切分的最大/平均：cp=4 {c4:.2f}，cp=32 {c32:.3f}；zig-zag {z4:.2f}"},
    "numbers.ring": {"en": "cp={cp} {gb:.2f} GB", "zh": "cp={cp} {gb:.2f} GB"},
    "numbers.ulysses": {"en": "cp={cp} {gb:.3f} GB", "zh": "cp={cp} {gb:.3f} GB"},
}

TEXT = {
    # exercises.py: numeric answers
    "positions_ask": {"en": "answer = [positions], e.g. [0, 1, 14, 15]",
                      "zh": "answer = [位置列表]，例如 [0, 1, 14, 15]"},
    "positions_ok": {"en": "rank {rank} holds {want}: chunk {rank} and chunk {other}.",
                     "zh": "rank {rank} 持有 {want}：第 {rank} 块和第 {other} 块。"},
    "positions_no": {
        "en": "{got} is not it: cut the sequence into 2cp = {chunks} chunks of {size}; rank r holds chunk "
              "r and chunk 2cp-1-r, early one first.",
        "zh": "{got} 不对：把序列切成 2cp = {chunks} 块，每块 {size} 个位置；rank r 持有第 r 块和第 2cp-1-r 块，"
              "靠前的一块在前。"},
    "ring_bytes_hint": {
        "en": "How many hops forward (cp-1), how many backward (K/V again, and the dK/dV accumulators, "
              "which need one hop more), and how big is one hop (K and V of one shard)?",
        "zh": "前向要传几跳（cp-1）？反向要传几跳（K/V 再传一遍，dK/dV 累加器还要多传一跳）？每一跳有多大"
              "（一个分片的 K 和 V）？"},
    "ring_bytes_why": {"en": "(3cp-2) hops of 2*b*(s/cp)*h values = {gb:.2f} GB.",
                       "zh": "(3cp-2) 跳，每跳 2*b*(s/cp)*h 个数值 = {gb:.2f} GB。"},
    "imbalance_hint": {"en": "rank r needs the blocks of ranks 0..r: r+1 blocks.",
                       "zh": "rank r 需要 rank 0..r 的块：共 r+1 块。"},
    "imbalance_why": {"en": "2cp/(cp+1) = {want:.3g}.", "zh": "2cp/(cp+1) = {want:.3g}。"},
    "cap_A": {"en": "after the all-to-all each rank computes whole heads: cp ranks share n_heads heads",
              "zh": "all-to-all 之后每个 rank 计算整数个头：cp 个 rank 分 n_heads 个头"},
    "cap_B": {"en": "all-to-all only works on a power-of-two number of ranks",
              "zh": "all-to-all 只能在 rank 数为二的幂时工作"},
    "cap_C": {"en": "the (s, s) scores of one head would not fit on a rank",
              "zh": "一个头的 (s, s) 分数矩阵在一个 rank 上放不下"},
    "cap_missing": {"en": "answer = \"A\", \"B\" or \"C\"", "zh": "answer = \"A\"、\"B\" 或 \"C\""},
    "cap_letter": {"en": "answer with one of {letters}, got {answer}",
                   "zh": "请回答 {letters} 中的一个，收到的是 {answer}"},
    "cap_ok": {"en": "{why}: at most one rank per head.", "zh": "{why}，所以每个头最多对应一个 rank。"},
    "cap_no": {"en": "that is not it: look at what the all-to-all trades (sequence for heads).",
               "zh": "不对：看看 all-to-all 交换的是什么（用序列换头）。"},
    # exercises.py: the coding exercises
    "write_it": {"en": "write {name} (it still raises NotImplementedError)",
                 "zh": "请实现 {name}（它现在仍然抛出 NotImplementedError）"},
    "shard_type": {"en": "rank {rank}: returned a {type}, expected a tensor",
                   "zh": "rank {rank}：返回了 {type}，应返回一个张量"},
    "shard_size": {"en": "rank {rank}: holds {got} positions, expected {want} (s/cp = {s}/{cp})",
                   "zh": "rank {rank}：持有 {got} 个位置，应为 {want} 个（s/cp = {s}/{cp}）"},
    "shard_slot": {
        "en": "rank {rank}, local slot {i}: holds position {got}, expected {want} (rank {rank} should "
              "hold {positions}: chunks {rank} and {other} of {chunks})",
        "zh": "rank {rank}，本地第 {i} 个位置：持有位置 {got}，应为 {want}（rank {rank} 应持有 {positions}："
              "{chunks} 块中的第 {rank} 块和第 {other} 块）"},
    "shard_ok": {
        "en": "every rank holds its zig-zag shard. Causal scores per rank: {work} (max/mean {imb:.2f}; "
              "contiguous would give {contiguous}).",
        "zh": "每个 rank 都持有正确的 zig-zag 分片。各 rank 的因果分数个数：{work}（最大/平均 {imb:.2f}；"
              "连续切分则是 {contiguous}）。"},
    "ring_where": {"en": "rank {rank}", "zh": "rank {rank}"},
    "ring_value": {
        "en": "rank {rank}, head {h}, position {pos} (local {i}), channel {d}: {got:.5g}, expected "
              "{want:.5g} (off by {diff:.3g}); {n} of {total} values wrong on this rank",
        "zh": "rank {rank}，头 {h}，位置 {pos}（本地 {i}），通道 {d}：{got:.5g}，应为 {want:.5g}"
              "（相差 {diff:.3g}）；这个 rank 上 {total} 个值中有 {n} 个不对"},
    "ring_own_block": {
        "en": ". It equals attention over the rank's own block only: are the K/V blocks passed on?",
        "zh": "。它等于只在本 rank 自己的块上做的注意力：K/V 块传下去了吗？"},
    "ring_ok": {
        "en": "all {cp} ranks equal full softmax attention over the {s} positions ({heads} heads): the "
              "blocks merged exactly.",
        "zh": "全部 {cp} 个 rank 的结果都等于在 {s} 个位置上的完整 softmax 注意力（{heads} 个头）："
              "各块的合并结果完全精确。"},
    # widgets.py: the explorer
    "w_seq": {"en": "sequence length", "zh": "序列长度"},
    "w_cp": {"en": "CP degree", "zh": "上下文并行度"},
    "w_layout": {"en": "layout", "zh": "切分方式"},
    "w_attention": {"en": "attention", "zh": "注意力"},
    "w_run": {"en": "run live on CPU ranks", "zh": "在 CPU rank 上实际运行"},
    "w_running": {"en": "running ...", "zh": "运行中 ..."},
    "w_press": {"en": "press <i>run live</i>", "zh": "请点击<i>在 CPU rank 上实际运行</i>"},
    "w_predicted": {"en": "predicted (parlab.cost)", "zh": "预测（parlab.cost）"},
    "w_bytes": {"en": "bytes per rank, one layer, one step", "zh": "每个 rank 的字节数，一层，一步"},
    "w_bytes_sp": {"en": "{bytes} (Megatron SP at t={cp}: {sp})",
                   "zh": "{bytes}（t={cp} 的 Megatron 序列并行：{sp}）"},
    "w_memory": {"en": "attention memory per rank", "zh": "每个 rank 的注意力显存"},
    "w_work": {"en": "work per rank (blocks)", "zh": "每个 rank 的工作量（块）"},
    "w_imbalance": {"en": "imbalance (max/mean)", "zh": "不均衡度（最大/平均）"},
    "w_measured": {"en": "measured on CPU ranks", "zh": "在 CPU rank 上实测"},
    "w_sent": {"en": "bytes rank 0 sent, one layer, one step", "zh": "rank 0 发送的字节数，一层，一步"},
    "w_sent_formula": {"en": "{bytes} (formula {formula})", "zh": "{bytes}（公式 {formula}）"},
    "w_peak": {"en": "attention memory per rank (peak allocated)", "zh": "每个 rank 的注意力显存（分配峰值）"},
    "w_peak_largest": {"en": "{peak} (largest tensor {largest})", "zh": "{peak}（最大张量 {largest}）"},
    "w_work_counted": {"en": "work per rank (blocks, counted)", "zh": "每个 rank 的工作量（块，实际计数）"},
    "w_step": {"en": "training step (median)", "zh": "训练一步（中位数）"},
    "w_step_ms": {"en": "{ms:.1f} ms", "zh": "{ms:.1f} ms"},
    "w_machine": {"en": "machine", "zh": "机器"},
    "w_timeline": {"en": "one forward attention call, {attention}, cp={cp}, {layout}",
                   "zh": "一次前向注意力调用，{attention}，cp={cp}，{layout}"},
}

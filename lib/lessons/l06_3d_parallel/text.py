"""Notebook 06's words in English and Chinese, as catalogues (``lessons.common.i18n``): every
number is a field, formatted once by the code that passes it, so both languages print it alike.

``INTERVIEW``  the answers of the interview corner (§6), of §2's ZeRO-2 question and of the
               30-second answer: for an answer ``b``, ``"b"`` (its summary, shown before
               the click), ``"b.1"``, ``"b.2"``, ... (its lines) and ``"b.verdict"``; keys
               such as ``"b.row"`` are the pieces ``interview.py`` lists inside a line.
``TEXT``       what the checkers (``exercises.py``, ``exercises_clip.py``) tell the learner,
               the planner explorer's labels (``widgets.py``), and the small words lists are
               joined with. The "Correct." / "Not yet." before a checker's message is the
               answer boxes' own (``checkers.answers.verdict``).
"""

INTERVIEW = {
    # --- (a) the GPT-3 layout of the seed text -----------------------------------------------
    "a": {"en": "(a) answer", "zh": "(a) 答案"},
    "a.verdict": {
        "en": "Does not hold: the layout does not divide GPT-3's layers, the bubble would eat "
              "{bubble:.0%} of the step, and 312 TFLOP/s is the A100's peak, not a throughput.",
        "zh": "不成立：这个布局连 GPT-3 的层数都切不均，气泡会吃掉一步的 {bubble:.0%}，"
              "而且 312 TFLOP/s 是 A100 的峰值，不是吞吐量。"},
    "a.1": {
        "en": "8 × 64 × 64 = {product}: the arithmetic holds. But GPT-3 has 96 layers: PP = 64 is "
              "{layers_per_stage:g} layers per stage — stages of 2 and of 1 layer, the 2-layer ones "
              "set the pace: at most {balanced_ceiling:.0%} of a balanced pipeline.",
        "zh": "8 × 64 × 64 = {product}：算术没错。但 GPT-3 有 96 层：PP = 64 意味着每个阶段 "
              "{layers_per_stage:g} 层——只能切成 2 层和 1 层的阶段，节奏由 2 层的阶段决定："
              "效率最多只有均衡流水线的 {balanced_ceiling:.0%}。"},
    "a.2": {
        "en": "312 TFLOP/s is the A100's dense bf16 <i>peak</i> (NVIDIA's datasheet; Narayanan et al. "
              "§5 use it too), not a throughput; 52% of it is {claimed:.0f}. '312 at 52%' "
              "contradicts itself.",
        "zh": "312 TFLOP/s 是 A100 稠密 bf16 的<i>峰值</i>（NVIDIA 数据手册；Narayanan et al. §5 "
              "用的也是它），不是吞吐量；它的 52% 是 {claimed:.0f}。“312、利用率 52%”本身就自相矛盾。"},
    "a.3": {
        "en": "With GPT-3's batch of 1536 sequences and DP = 64, each pipeline gets {n_micro} "
              "micro-batches for 64 stages: the planner predicts a bubble of {bubble:.0%} of the "
              "step and {tflops:.0f} TFLOP/s per GPU (MFU {mfu:.0%}).",
        "zh": "按 GPT-3 的 batch（1536 条序列）和 DP = 64，每条流水线只分到 {n_micro} 个微批次，"
              "却有 64 个阶段：规划器预测气泡占一步的 {bubble:.0%}，每张 GPU {tflops:.0f} TFLOP/s"
              "（MFU {mfu:.0%}）。"},
    "a.4": {
        "en": "A 10% bubble at PP = 64 needs m = {m10} micro-batches per pipeline: a global batch "
              "of {batch10:,} sequences ({tokens10:.0f}M tokens, {times10:.0f}× GPT-3's 3.2M); "
              "even then {tflops10:.0f} TFLOP/s.",
        "zh": "PP = 64 时要把气泡压到 10%，每条流水线需要 m = {m10} 个微批次：全局 batch 达 "
              "{batch10:,} 条序列（{tokens10:.0f}M 个 token，是 GPT-3 的 3.2M 的 {times10:.0f} 倍）；"
              "即便如此也只有 {tflops10:.0f} TFLOP/s。"},
    "a.5": {
        "en": "What the paper reports for GPT-3 175B (Narayanan et al. 2021, Table 2: model-parallel "
              "size 96, which with t = 8 means p = 12; batch 1536): {table2}; §5.1: 1024 GPUs at "
              "140 TFLOP/s, 34 days for 300B tokens. Table 1 has no 175B row; its 145.6B row is "
              "t = 8, p = 8 on 1536 GPUs at 148 TFLOP/s (47%).",
        "zh": "论文对 GPT-3 175B 的实测（Narayanan et al. 2021, Table 2：模型并行规模 96，t = 8 "
              "即 p = 12；batch 1536）：{table2}；§5.1：1024 张 GPU 上 140 TFLOP/s，300B 个 token "
              "训练了 34 天。Table 1 没有 175B 这一行；它的 145.6B 一行是 t = 8、p = 8，1536 张 GPU，"
              "148 TFLOP/s（47%）。"},
    "a.row": {"en": "{gpus} GPUs {paper} TFLOP/s (planner: {predicted:.0f})",
              "zh": "{gpus} 张 GPU {paper} TFLOP/s（规划器：{predicted:.0f}）"},
    "a.6": {
        "en": "The interview answer's numbers look like Table 1's 1T row garbled: t = 8, p = 64, "
              "d = 6 on 3072 GPUs, 163 TFLOP/s = 52% of 312. (The GPT-3 paper, Brown et al. 2020 "
              "§2.3, trained on V100s and names model parallelism within each matrix multiply and "
              "across layers, but gives no degrees.)",
        "zh": "面试答案里的数字像是把 Table 1 中 1T 那一行记串了：t = 8、p = 64、d = 6，3072 张 GPU，"
              "163 TFLOP/s = 312 的 52%。（GPT-3 论文 Brown et al. 2020 §2.3 用 V100 训练，"
              "提到了矩阵乘法内部和跨层的模型并行，但没有给出并行度。）"},
    "a.7": {
        "en": "And 52% is hardware FLOPs utilisation: Narayanan et al. count the forward that full "
              "recomputation repeats (§5.1). Model FLOPs utilisation counts only the model's FLOPs "
              "(PaLM, §4.1): that 1T run is {mfu_1t:.0%} MFU. GPT-3 itself trained at 21.3% MFU "
              "(Chowdhery et al. 2022, PaLM, Table 3).",
        "zh": "而且 52% 是硬件 FLOPs 利用率（HFU）：Narayanan et al. 把完全重计算时重做的那次前向"
              "也算了进去（§5.1）。模型 FLOPs 利用率（MFU）只计模型本身的 FLOPs（PaLM，§4.1）："
              "那次 1T 训练的 MFU 是 {mfu_1t:.0%}。GPT-3 本身训练时的 MFU 是 21.3%"
              "（Chowdhery et al. 2022，PaLM，Table 3）。"},

    # --- (b) TP inside the node, PP across nodes ----------------------------------------------
    "b": {"en": "(b) answer", "zh": "(b) 答案"},
    "b.verdict": {
        "en": "Holds for the models that need both TP and PP (past a node TP pays the slower hop "
              "on every collective); not a rule for those that do not.",
        "zh": "对既需要 TP 又需要 PP 的模型成立（TP 一旦跨出节点，每次集合通信都要走更慢的那一跳）；"
              "对不需要的模型，这不是规则。"},
    "b.1": {
        "en": "GPT-3 175B on 1536 A100s ({gpus_per_node} per node, {nics} HDR cards each), "
              "batch 1536, ZeRO-1, full recomputation: {rows}.",
        "zh": "GPT-3 175B，1536 张 A100（每节点 {gpus_per_node} 张 GPU、{nics} 张 HDR 网卡），"
              "batch 1536，ZeRO-1，完全重计算：{rows}。"},
    "b.row": {"en": "{layout}: {tflops:.0f} TFLOP/s, TP comm {tp_comm:.0%}, bubble {bubble:.0%}",
              "zh": "{layout}：{tflops:.0f} TFLOP/s，TP 通信占 {tp_comm:.0%}，气泡 {bubble:.0%}"},
    "b.2": {
        "en": "TP = 16 crosses the node: NCCL runs one ring per network card, so its all-reduces "
              "ride all {nics} cards of the node instead of NVLink, and the step loses "
              "{loss_16:.0%} of its throughput. On a node with one card it would lose "
              "{loss_one_card:.0%}. TP = 4 stays inside but needs twice the pipeline, and trades TP "
              "communication for a doubled bubble. Narayanan et al. measured t = 8 best (§5.4.1, "
              "Fig. 13): every layer's collectives pay the slower hop past a node.",
        "zh": "TP = 16 跨出了节点：NCCL 每张网卡跑一个环，所以它的 all-reduce 走的是节点的全部 "
              "{nics} 张网卡而不是 NVLink，一步的吞吐量损失 {loss_16:.0%}。如果每个节点只有一张网卡，"
              "会损失 {loss_one_card:.0%}。TP = 4 留在节点内，但流水线要加深一倍，等于用翻倍的气泡"
              "换更少的 TP 通信。Narayanan et al. 实测 t = 8 最好（§5.4.1，Fig. 13）：跨出节点后，"
              "每一层的集合通信都要走更慢的那一跳。"},
    "b.3": {
        "en": "It does not hold as a rule for smaller models: the planner's best layouts are {best}.",
        "zh": "对更小的模型，这并不是一条规则：规划器给出的最优布局是 {best}。"},
    "b.best": {"en": "{setup}: {label}", "zh": "{setup}：{label}"},
    "b.4": {
        "en": "The fastest raw prediction for 175B on 1024 A100s is a ZeRO-3 layout ({label}, "
              "{step:.1f} s a step), but the published ZeRO-3 runs were measured at "
              "{low:.2f}-{high:.2f} of what the planner predicts for them: ranked at "
              "{ranked:.1f} s, it falls behind {best_175}.",
        "zh": "只看原始预测，175B 在 1024 张 A100 上最快的是一个 ZeRO-3 布局（{label}，每步 "
              "{step:.1f} s），但已发表的 ZeRO-3 训练实测速度只有规划器预测值的 {low:.2f}-{high:.2f} 倍："
              "按 {ranked:.1f} s 排名，它排在 {best_175} 之后。"},
    "b.5": {
        "en": "'PP across nodes' is a consequence, not a choice: once t = a node, every pipeline "
              "hop is between nodes; with t < a node, the mesh order decides (§1's picture: with "
              "4-GPU nodes the DP all-reduce crossed nodes instead).",
        "zh": "“PP 跨节点”是结果，不是选择：一旦 t 等于一个节点的 GPU 数，流水线的每一跳都在节点之间；"
              "t 小于一个节点时，由网格的排列顺序决定（§1 的图：在 4-GPU 的节点上，跨节点的反而是"
              " DP 的 all-reduce）。"},

    # --- (c) TP first, then PP, then DP ---------------------------------------------------------
    "c": {"en": "(c) answer", "zh": "(c) 答案"},
    "c.verdict": {
        "en": "Partly: 'TP at most a node' holds; 'always fix TP first' does not: it is right only "
              "when the model needs TP.",
        "zh": "部分成立：“TP 不超过一个节点”成立；“总是先定 TP”不成立：只有模型需要 TP 时它才对。"},
    "c.1": {
        "en": "The rule read literally (TP = the largest degree up to a node, the smallest PP that "
              "fits without ZeRO-3, DP the rest), ranked among every layout the planner keeps: "
              "{rows}.",
        "zh": "按字面执行这条规则（TP 取不超过一个节点的最大并行度，PP 取不用 ZeRO-3 也放得下的最小值，"
              "其余给 DP），它在规划器保留的全部布局中的排名：{rows}。"},
    "c.row": {"en": "{setup}: {label} is #{rank} of {of} ({slower:+.0%} vs the best)",
              "zh": "{setup}：{label} 在 {of} 个布局中排第 {rank}（与最优相差 {slower:+.0%}）"},
    "c.2": {
        "en": "For the 175B model the rule lands {slower_175:+.0%} from the best, inside the "
              "planner's error bar; for 70B it is {slower_70:+.0%} and for 13B {slower_13:+.0%}: "
              "TP = 8 when nothing forces it makes every matmul 8x thinner and adds its "
              "collectives to every layer.",
        "zh": "对 175B 模型，这条规则与最优相差 {slower_175:+.0%}，在规划器的误差范围之内；70B 是 "
              "{slower_70:+.0%}，13B 是 {slower_13:+.0%}：没有必要时用 TP = 8，会让每个矩阵乘法"
              "窄 8 倍，还给每一层都加上它的集合通信。"},
    "c.3": {
        "en": "13B on one 8-GPU A100 node: TP = 4, PP = 2 is #{rank} of {of} ({label}), "
              "{slower:+.0%} slower than the best ({best}).",
        "zh": "13B 在一台 8-GPU 的 A100 节点上：TP = 4、PP = 2 在 {of} 个布局中排第 {rank}"
              "（{label}），与最优（{best}）相差 {slower:+.0%}。"},
    "c.4": {
        "en": "A better order: first what must be split to fit (memory per GPU), then the cheapest "
              "axis that splits it (ZeRO/DP when the batch allows, TP inside a node when layers "
              "must be cut, PP when even that does not fit), then check the bubble.",
        "zh": "更好的顺序：先看为了放得下必须切什么（每张 GPU 的显存），再选切它最便宜的那个维度"
              "（batch 允许时用 ZeRO/DP，必须切开层内的矩阵时用节点内的 TP，仍放不下再用 PP），最后检查气泡。"},

    # --- (d) when PP pays -------------------------------------------------------------------------
    "d": {"en": "(d) answer", "zh": "(d) 答案"},
    "d.verdict": {
        "en": "PP pays when the model does not fit otherwise, and only up to the smallest degree "
              "that fits.",
        "zh": "只有不用 PP 模型就放不下时，PP 才划算，而且只用到放得下的最小并行度为止。"},
    "d.1": {
        "en": "GPT-3 175B, t = 8, 1536 A100s, batch 1536, ZeRO-1, full recomputation, "
              "micro-batch 1: {rows}.",
        "zh": "GPT-3 175B，t = 8，1536 张 A100，batch 1536，ZeRO-1，完全重计算，微批次大小 1：{rows}。"},
    "d.row": {"en": "p = {p}: {gb:.0f} GB per GPU ({fits}), m = {m}, bubble {bubble:.1%}, "
                    "{tflops:.0f} TFLOP/s",
              "zh": "p = {p}：每张 GPU {gb:.0f} GB（{fits}），m = {m}，气泡 {bubble:.1%}，"
                    "{tflops:.0f} TFLOP/s"},
    "d.fits": {"en": "fits", "zh": "放得下"},
    "d.no_fit": {"en": "does NOT fit", "zh": "放不下"},
    "d.2": {
        "en": "PP divides the weights and optimizer states by p; its price is the bubble, "
              "(p−1)/(v·m) of the work. On a fixed cluster and batch, m = B/(d·b) grows with p "
              "(d = n/(t·p) shrinks), so the bubble grows with p only towards n·b/(t·B) of the "
              "work, here {bound:.1%} (Narayanan et al. §3.3.1 derive it for t = 1: a bubble of "
              "(n − d)/b′, b′ = B/b).",
        "zh": "PP 把权重和优化器状态除以 p；代价是气泡，占工作量的 (p−1)/(v·m)。集群和 batch 固定时，"
              "m = B/(d·b) 随 p 增大（d = n/(t·p) 变小），所以气泡虽随 p 增大，却只趋近工作量的 "
              "n·b/(t·B)，这里是 {bound:.1%}（Narayanan et al. §3.3.1 在 t = 1 时推导过：气泡为 "
              "(n − d)/b′，b′ = B/b）。"},
    "d.3": {
        "en": "So: the smallest p that fits (here {smallest}). Past it the layouts that fit are "
              "within {spread:.0%} of each other here and the bubble only grows; with fewer "
              "sequences per GPU (B near n/t) that bound is large and every extra stage costs. "
              "ZeRO-3 also fits and has no bubble; what its communication costs, the published "
              "ZeRO-3 runs show (§5).",
        "zh": "所以：取放得下的最小 p（这里是 {smallest}）。再往上，这里放得下的布局彼此相差不到 "
              "{spread:.0%}，而气泡只增不减；如果每张 GPU 分到的序列更少（B 接近 n/t），这个上限"
              "就很大，每多一级阶段都有代价。ZeRO-3 也放得下，而且没有气泡；它的通信代价有多大，"
              "已发表的 ZeRO-3 训练给出了答案（§5）。"},

    # --- the appendix: every number of §6 -----------------------------------------------------
    "numbers": {"en": "Every number of §6", "zh": "§6 的全部数字"},
    "numbers.1": {"en": "(a) {product} GPUs, {layers_per_stage} layers per stage, "
                        "52% of 312 = {claimed:.0f}",
                  "zh": "(a) {product} 张 GPU，每阶段 {layers_per_stage} 层，312 的 52% = {claimed:.0f}"},
    "numbers.2": {"en": "(a) bubble at batch 1536: {bubble:.0%}; batch for a 10% bubble: {batch10}",
                  "zh": "(a) batch 1536 时的气泡：{bubble:.0%}；气泡降到 10% 所需的 batch：{batch10}"},
    "numbers.3": {"en": "(a) GPT-3 t=8 p=12, TFLOP/s paper/planner: {rows_a}",
                  "zh": "(a) GPT-3 t=8 p=12，TFLOP/s 论文/规划器：{rows_a}"},
    "numbers.row_a": {"en": "{gpus} GPUs {paper}/{predicted:.0f}",
                      "zh": "{gpus} 张 GPU {paper}/{predicted:.0f}"},
    "numbers.4": {"en": "(b) 175B on 1536: {rows_b} TFLOP/s", "zh": "(b) 175B，1536 张卡：{rows_b} TFLOP/s"},
    "numbers.row_b": {"en": "{layout} {tflops:.0f}", "zh": "{layout} {tflops:.0f}"},
    "numbers.5": {"en": "(b) tp=16 on one card a node {tflops:.0f} TFLOP/s; "
                        "ZeRO-3 band {low:.2f}-{high:.2f}",
                  "zh": "(b) tp=16、每节点一张网卡：{tflops:.0f} TFLOP/s；ZeRO-3 误差带 {low:.2f}-{high:.2f}"},
    "numbers.6": {"en": "(b) best for 175B on 1024: {best}", "zh": "(b) 175B 在 1024 张卡上的最优：{best}"},
    "numbers.7": {"en": "(c) rule of thumb rank: {rows_c}", "zh": "(c) 经验法则的排名：{rows_c}"},
    "numbers.row_c": {"en": "{setup} #{rank}/{of}", "zh": "{setup} #{rank}/{of}"},
    "numbers.8": {"en": "(d) 175B t=8: {rows_d}", "zh": "(d) 175B t=8：{rows_d}"},
    "numbers.row_d": {"en": "p={p} {fits} {bubble:.1%}", "zh": "p={p} {fits} {bubble:.1%}"},
    "numbers.fits": {"en": "fits", "zh": "放得下"},
    "numbers.no_fit": {"en": "no", "zh": "放不下"},

    # --- §2's fold-out: the clipping norm under ZeRO-2 ----------------------------------------
    "zero2": {"en": "Interview answer (ZeRO-2)", "zh": "面试题答案（ZeRO-2）"},
    "zero2.1": {
        "en": "Each DP rank then holds only its shard of the averaged gradient, so the shards' "
              "squares <i>are</i> added over DP (and still over TP and PP, replicated parameters "
              "once).",
        "zh": "这时每个 DP rank 只持有平均后梯度的一个分片，所以各分片的平方和<i>要</i>在 DP 上相加"
              "（TP 和 PP 上照样相加，被复制的参数仍只算一次）。"},
    "zero2.2": {
        "en": "The rule is \"sum over every group across which ranks hold <i>different</i> pieces, "
              "over none where they hold copies\".",
        "zh": "规则是：“各 rank 持有<i>不同</i>部分的组都要求和，持有副本的组一个也不加。”"},
    "zero2.3": {
        "en": "With experts under plain DP the sum also runs over the EP group (each rank holds "
              "other experts), and only its first rank counts the dense gradients.",
        "zh": "有专家且用普通 DP 时，求和还要经过 EP 组（每个 rank 持有不同的专家），"
              "而非专家参数（稠密部分）的梯度只由 EP 组的第一个 rank 计入。"},
    "zero2.4": {
        "en": "<code>NDRun(max_grad_norm=...)</code> does all of it under ZeRO 0–3, CP and EP, each "
              "equal to one device: <code>experiments_clip.clipped_run(NDRun(..., zero_stage=2, "
              "max_grad_norm=0.5))</code> runs one.",
        "zh": "<code>NDRun(max_grad_norm=...)</code> 在 ZeRO 0–3、CP 和 EP 下都是这样做的，"
              "每种都与单卡一致：<code>experiments_clip.clipped_run(NDRun(..., zero_stage=2, "
              "max_grad_norm=0.5))</code> 就能跑一次。"},

    # --- the corner's 30-second answer ----------------------------------------------------------
    "thirty": {"en": "A 30-second answer", "zh": "30 秒版回答"},
    "thirty.1": {
        "en": "\"A 3D mesh nests TP inside a pipeline stage inside a DP replica. TP all-reduces "
              "every layer, so it stays on one node's NVLink — past a node every collective "
              "crosses the network cards, slower than NVLink even with one ring per card. PP "
              "sends one activation per micro-batch and costs a bubble of (p−1)/(vm), so use the "
              "smallest p that fits and enough micro-batches; DP (or ZeRO) takes the rest and "
              "costs one all-reduce per step. Choose what must be split to fit first, then the "
              "cheapest split. GPT-3 175B in Megatron: t = 8, p = 12, 140–153 TFLOP/s per A100, "
              "under half its {peak:.0f} TFLOP/s peak. The 8 × 64 × 64 that gets quoted does not "
              "even divide GPT-3's {n_layers} layers.\"",
        "zh": "“3D 网格是把 TP 嵌在流水线阶段里，再把流水线阶段嵌在 DP 副本里。TP 每一层都要做 "
              "all-reduce，所以要留在一个节点的 NVLink 内——跨出节点后，每次集合通信都要经过网卡，"
              "即使每张网卡跑一个环，也比 NVLink 慢。PP 每个微批次只发一次激活值，代价是 (p−1)/(vm) "
              "的气泡，所以取放得下的最小 p，并配足够多的微批次；剩下的交给 DP（或 ZeRO），每步只需"
              "一次 all-reduce。先定为了放得下必须切什么，再选最便宜的切法。Megatron 训练 GPT-3 175B "
              "用的是 t = 8、p = 12，每张 A100 140–153 TFLOP/s，不到它 {peak:.0f} TFLOP/s 峰值的"
              "一半。常被引用的 8 × 64 × 64 连 GPT-3 的 {n_layers} 层都切不均。”"},
    "thirty.2": {
        "en": "(Sources: Narayanan et al. 2021, Table 2 and §5.1; 8 × 64 × 64 is the interview "
              "answer's claim (a) of §6.)",
        "zh": "（出处：Narayanan et al. 2021，Table 2 与 §5.1；8 × 64 × 64 是 §6 中面试答案的"
              "说法 (a)。）"},
}

TEXT = {
    # --- the small words lists are joined with ---------------------------------------------
    "sep.comma": {"en": ", ", "zh": "，"},
    "sep.semi": {"en": "; ", "zh": "；"},
    "setup": {"en": "{model} on {n} {gpu}", "zh": "{model}，{n} 张 {gpu}"},
    "setup.short": {"en": "{model} on {n}", "zh": "{model}（{n} 张）"},

    # --- exercises.py: the numeric answers ----------------------------------------------------
    "coords.not_dict": {"en": "give a dict like {{'dp': 0, 'pp': 1, 'tp': 0}}, got {got}",
                        "zh": "请给出一个 dict，例如 {{'dp': 0, 'pp': 1, 'tp': 0}}，收到的是 {got}"},
    "coords.no_key": {"en": "the dict has no {name}: give 'dp', 'pp' and 'tp'",
                      "zh": "dict 里没有 {name}：请给出 'dp'、'pp' 和 'tp'"},
    "coords.right": {"en": "rank {rank} is {want}.", "zh": "rank {rank} 的坐标是 {want}。"},
    "coords.wrong": {"en": "{wrong} wrong: rank = (dp_i * pp + pp_i) * tp + tp_i, TP varies fastest.",
                     "zh": "{wrong} 不对：rank = (dp_i * pp + pp_i) * tp + tp_i，TP 变化最快。"},
    "tp_group.right": {"en": "{want}: the ranks that differ only in the TP coordinate.",
                       "zh": "{want}：只有 TP 坐标不同的那些 rank。"},
    "tp_group.wrong": {"en": "{got} is not it: a TP group is tp consecutive ranks (TP is innermost).",
                       "zh": "{got} 不对：一个 TP 组是 tp 个连续的 rank（TP 在最内层）。"},
    "bubble.hint": {"en": "idle / total = (p - 1) / (m + p - 1).",
                    "zh": "空闲 / 总时间 = (p - 1) / (m + p - 1)。"},
    "memory.hint": {"en": "the first stage holds L/pp layers of 12 h^2 parameters (plus the "
                          "embedding), split over tp; 16 bytes each.",
                    "zh": "第一个阶段持有 L/pp 层、每层 12 h^2 个参数（外加嵌入层），再按 tp 切分；"
                          "每个参数 16 字节。"},
    "memory.explanation": {"en": "16 bytes for each parameter of the first stage's tp-th share.",
                           "zh": "第一个阶段按 tp 切分后的那一份参数，每个 16 字节。"},

    # --- exercises.py: the 3D groups and the DP gradient sync ---------------------------------
    "unwritten": {"en": "write {name} (it still raises NotImplementedError)",
                  "zh": "请先写出 {name}（它仍然抛出 NotImplementedError）"},
    "groups.not_dict": {"en": "my_groups({rank}, ...) must return a dict with keys 'tp', 'pp', "
                              "'dp', got {got}",
                        "zh": "my_groups({rank}, ...) 必须返回一个带 'tp'、'pp'、'dp' 三个键的 dict，"
                              "收到的是 {got}"},
    "groups.not_list": {"en": "rank {rank}: the {axis} group {why}; each group is a list of ranks",
                        "zh": "rank {rank}：{axis} 组 {why}；每个组都是一个 rank 列表"},
    "groups.wrong": {"en": "rank {rank}, {axis} group: {got}, expected {want} (rank {rank} is "
                           "dp={dp}, pp={pp}, tp={tp}; a {axis} group varies only the {coord} "
                           "coordinate)",
                     "zh": "rank {rank} 的 {axis} 组：{got}，应为 {want}（rank {rank} 的坐标是 "
                           "dp={dp}、pp={pp}、tp={tp}；{axis} 组只改变 {coord} 坐标）"},
    "groups.sum_wrong": {"en": "on the ranks: rank {rank}'s all-reduce over its {axis} group "
                               "summed to {got}, expected {want}",
                         "zh": "在真实 rank 上：rank {rank} 在它的 {axis} 组上做 all-reduce 得到 "
                               "{got}，应为 {want}"},
    "groups.right": {"en": "every rank's groups equal Mesh(dp={dp}, pp={pp}, tp={tp})'s, and on "
                           "{world} real ranks each all-reduce of the rank ids summed its group: "
                           "e.g. rank {last} got tp {tp_sum}, pp {pp_sum}, dp {dp_sum}.",
                     "zh": "每个 rank 的组都与 Mesh(dp={dp}, pp={pp}, tp={tp}) 的一致；在 {world} 个"
                           "真实 rank 上，每次对 rank 编号做的 all-reduce 都正好求出了本组之和：例如 "
                           "rank {last} 得到 tp {tp_sum}、pp {pp_sum}、dp {dp_sum}。"},
    "sync.where": {"en": "rank {rank} (stage {stage}, TP slice {tp})",
                   "zh": "rank {rank}（阶段 {stage}，TP 切片 {tp}）"},
    "sync.world_mean": {"en": "; it is the mean over all ranks: other stages' and TP slices' "
                              "gradients are different parameters, only DP replicas share them",
                        "zh": "；这是所有 rank 上的平均：其他阶段、其他 TP 切片的梯度属于不同的参数，"
                              "只有 DP 副本共享同一份参数"},
    "sync.sum": {"en": "; it is the sum over the DP group {group}: divide by its size",
                 "zh": "；这是 DP 组 {group} 上的和：还要除以组的大小"},
    "sync.right": {"en": "every rank holds the mean over its DP group (e.g. rank 0 with {group}), "
                         "not over the world.",
                   "zh": "每个 rank 都持有它所在 DP 组的平均（例如 rank 0 与 {group}），"
                         "而不是全体 rank 的平均。"},

    # --- exercises_clip.py: the global gradient norm -----------------------------------------
    "clip.hang": {"en": " The stages hold different tensors ({held}): a collective per tensor over "
                        "groups['pp'] never pairs up. Add the squares on the rank, then all-reduce "
                        "one number.",
                  "zh": " 各阶段持有的张量不同（{held}）：在 groups['pp'] 上逐个张量做集合通信，"
                        "永远配不上对。先在本 rank 上把平方加起来，再对这一个数做 all-reduce。"},
    "clip.held": {"en": "stage {stage}: {n}", "zh": "阶段 {stage}：{n} 个"},
    "clip.kind": {"en": "rank {rank} returned a {kind}: return the norm, a float (or a "
                        "one-element tensor)",
                  "zh": "rank {rank} 返回了一个 {kind}：请返回范数，一个 float（或只含一个元素的张量）"},
    "clip.mistake": {"en": "rank 0 returned {got:.6g}, one device's norm is {want:.6g} "
                           "(×{ratio:.3f}): {said}.",
                     "zh": "rank 0 返回了 {got:.6g}，单卡上的范数是 {want:.6g}（×{ratio:.3f}）：{said}。"},
    "clip.and": {"en": "; and ", "zh": "；并且"},
    "clip.every": {"en": "the tensors every TP rank holds whole (tp_split None: layer norms, the "
                         "row-parallel biases, wpe) were counted on all {t} TP ranks, {t} times "
                         "instead of once; alone that makes the norm ×{factor:.3f} "
                         "(cost.clip_norm_overcount)",
                   "zh": "每个 TP rank 都完整持有的张量（tp_split 为 None：LayerNorm、行并行层的偏置、"
                         "wpe）在全部 {t} 个 TP rank 上都被计入，算了 {t} 次而不是只算一次；仅这一点"
                         "就让范数变成 ×{factor:.3f}（cost.clip_norm_overcount）"},
    "clip.never": {"en": "the tensors with tp_split None were not counted at all: count them once, "
                         "on TP rank 0",
                   "zh": "tp_split 为 None 的张量完全没有计入：应在 TP rank 0 上计入一次"},
    "clip.no_tp": {"en": "each TP rank kept its own slice's share: the slices are different pieces "
                         "of the same matrices, so add their squares over groups['tp']",
                   "zh": "每个 TP rank 只保留了自己切片的那一份：各切片是同一批矩阵的不同部分，"
                         "所以要在 groups['tp'] 上把它们的平方相加"},
    "clip.no_pp": {"en": "each rank kept its own stage's norm ({per}): the PP all-reduce is "
                         "missing, and the stages hold different layers",
                   "zh": "每个 rank 只保留了自己阶段的范数（{per}）：缺少 PP 上的 all-reduce，"
                         "而各阶段持有的是不同的层"},
    "clip.stage_norm": {"en": "stage {stage}: {norm:.4g}", "zh": "阶段 {stage}：{norm:.4g}"},
    "clip.dp": {"en": "the squares were also added over groups['dp']: the {d} DP replicas hold the "
                      "same averaged gradient, so it was counted {d} times, norm ×√{d} = "
                      "×{factor:.3f}",
                "zh": "平方和还在 groups['dp'] 上相加了：{d} 个 DP 副本持有的是同一份平均后的梯度，"
                      "所以它被算了 {d} 次，范数 ×√{d} = ×{factor:.3f}"},
    "clip.no_sqrt": {"en": "that is ||g||², the sum of squares: take its square root at the end",
                     "zh": "这是 ||g||²，即平方和：最后还要开平方根"},
    "clip.rank_norms": {"en": "norms were added, not squares: ||a|| + ||b|| is not "
                              "√(||a||² + ||b||²); all-reduce each rank's sum of squares and take "
                              "the root once, at the end",
                        "zh": "加的是范数而不是平方：||a|| + ||b|| 不等于 √(||a||² + ||b||²)；"
                              "应对每个 rank 的平方和做 all-reduce，最后只开一次根"},
    "clip.stage_norms": {"en": "the root was taken before every sum was done, then norms were "
                               "added: add squares all the way, root once at the end",
                         "zh": "还没加完就先开了根，然后把范数相加：应一路都加平方，最后只开一次根"},
    "clip.tensor_norms": {"en": "each tensor's norm was added, not its square: ||g||² is the sum "
                                "of the squares of every element, root once at the end",
                          "zh": "加的是每个张量的范数而不是它的平方：||g||² 是所有元素平方之和，"
                                "最后只开一次根"},
    "clip.wrong": {"en": "rank {rank} returned {got:.6g}, one device's norm is {want:.6g}. Sum the "
                         "squares of this rank's gradients (tp_split None: on TP rank 0 only), "
                         "all-reduce that one number over groups['tp'] and groups['pp'] (not "
                         "groups['dp']), then take the root.",
                   "zh": "rank {rank} 返回了 {got:.6g}，单卡上的范数是 {want:.6g}。先把本 rank 梯度的"
                         "平方相加（tp_split 为 None 的只在 TP rank 0 上加），再在 groups['tp'] 和 "
                         "groups['pp'] 上（不是 groups['dp']）对这一个数做 all-reduce，最后开根。"},
    "clip.right": {"en": "every rank returned {value:.6g}, one device's ||g|| on {size} ranks "
                         "(dp={dp}, pp={pp}, tp={tp}); rank 0 ran {n} {collectives} carrying "
                         "{elements} {element_word}.",
                   "zh": "每个 rank 都返回了 {value:.6g}，即 {size} 个 rank（dp={dp}、pp={pp}、"
                         "tp={tp}）上单卡的 ||g||；rank 0 执行了 {n} {collectives}，共传输 "
                         "{elements} {element_word}。"},
    "clip.collective": {"en": "collective", "zh": "次集合通信"},
    "clip.collectives": {"en": "collectives", "zh": "次集合通信"},
    "clip.element": {"en": "element", "zh": "个元素"},
    "clip.elements": {"en": "elements", "zh": "个元素"},
    "clip.across": {"en": " Note: {op} over {ranks} spans the DP replicas, which hold the same "
                          "gradient: right here, but a collective plain DP does not need.",
                    "zh": " 注意：{ranks} 上的 {op} 跨越了 DP 副本，而它们持有相同的梯度：这里结果"
                          "没错，但在普通 DP 下这是一次多余的集合通信。"},
    "clip.slow": {"en": " It is slow, though: add the squares on the rank first, then one "
                        "all-reduce of one number per group (TP, PP) is enough; each all-reduce "
                        "pays a full latency however small it is.",
                  "zh": " 不过这样很慢：先在本 rank 上把平方加起来，然后每个组（TP、PP）只需对一个数"
                        "做一次 all-reduce；每次 all-reduce 不管多小，都要付一次完整的延迟。"},
    "clip.dp1": {"en": " With dp = 1 an extra sum over DP would not show: try dp=2.",
                 "zh": " dp = 1 时，多做的 DP 求和看不出来：试试 dp=2。"},

    # --- widgets.py: the planner explorer -------------------------------------------------------
    "explorer.model": {"en": "model", "zh": "模型"},
    "explorer.gpu": {"en": "GPU", "zh": "GPU"},
    "explorer.per_node": {"en": "GPUs per node", "zh": "每节点 GPU 数"},
    "explorer.nodes": {"en": "nodes", "zh": "节点数"},
    "explorer.links": {"en": "between nodes", "zh": "节点间互联"},
    "explorer.batch": {"en": "global batch", "zh": "全局 batch"},
    "explorer.seq": {"en": "sequence length", "zh": "序列长度"},
    "explorer.head": {"en": "<b>{model}</b> on {n_gpus} × {gpu}, global batch {global_batch} × "
                            "{seq_len} tokens: {n_ranked} layouts fit. Step: predicted, and the range "
                            "the published runs of its kind were measured at (ranked at its fast end)",
                      "zh": "<b>{model}</b>，{n_gpus} × {gpu}，全局 batch {global_batch} × {seq_len} 个"
                            " token：{n_ranked} 个布局放得下。每步时间：预测值，以及同类已发表训练的实测"
                            "范围（按其快端排名）"},
    "explorer.col_config": {"en": "configuration", "zh": "配置"},
    "explorer.col_step": {"en": "step", "zh": "每步时间"},
    "explorer.col_vs": {"en": "vs #1", "zh": "相对 #1"},
    "explorer.col_why": {"en": "why", "zh": "原因"},
    "explorer.infeasible": {"en": "{n} layouts do not run (click)",
                            "zh": "{n} 个布局跑不起来（点击展开）"},
    "explorer.best": {"en": "best: {label}", "zh": "最优：{label}"},
}

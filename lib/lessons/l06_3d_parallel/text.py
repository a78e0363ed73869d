"""Notebook 06's words in English and Chinese, as catalogues (``lessons.common.i18n``): every
number is a field, formatted once by the code that passes it, so both languages print it alike.

``INTERVIEW``  the answers of the interview corner (§6), of §2's ZeRO-2 question and of the
               30-second answer: for an answer ``b``, ``"b"`` (its summary, shown before
               the click), ``"b.1"``, ``"b.2"``, ... (its lines) and ``"b.verdict"``; keys
               such as ``"b.row"`` are the pieces ``interview.py`` lists inside a line.
``TEXT``       what the checkers (``exercises.py``, ``exercises_clip.py``) tell the learner,
               the planner explorer's labels (``widgets.py``), and the small words lists are
               joined with: kept in ``text_words.py``, named here too.
"""

from .text_words import TEXT  # noqa: F401  (re-exported: ``text.TEXT``)

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
        "en": "'PP across nodes' is a consequence, not a choice: once t = a node, every pipeline "
              "hop is between nodes; with t < a node, the mesh order decides (§1's picture: with "
              "4-GPU nodes the DP all-reduce crossed nodes instead).",
        "zh": "“PP 跨节点”是结果，不是选择：一旦 t 等于一个节点的 GPU 数，流水线的每一跳都在节点之间；"
              "t 小于一个节点时，由网格的排列顺序决定（§1 的图：在 4-GPU 的节点上，跨节点的反而是"
              " DP 的 all-reduce）。"},
    "b.4": {
        "en": "It does not hold as a rule for smaller models: the planner's best layouts are {best}.",
        "zh": "对更小的模型，这并不是一条规则：规划器给出的最优布局是 {best}。"},
    "b.best": {"en": "{setup}: {label}", "zh": "{setup}：{label}"},
    "b.5": {
        "en": "For {setup_175} at batch {batch}, the planner's best is {best_175}. "
              "Its fastest ZeRO-3 layout without a pipeline, {label} ({step:.1f} s a step), is "
              "#{rank} of {of}. plan() models ZeRO-3 as FSDP2 runs it: one flat all-gather per "
              "block of layers, the next block's gather prefetched behind this block's compute, "
              "the reduce-scatter beside the backward. It ranks that like every other layout, "
              "on the band all the other published rows give: {low:.2f}-{high:.2f} of the "
              "prediction.",
        "zh": "再看 {setup_175}、batch {batch} 的情形：规划器的最优布局是 {best_175}。"
              "不用流水线的 ZeRO-3 布局里最快的是 {label}（每步 {step:.1f} s），在 {of} 个布局中"
              "排第 {rank}。plan() 按 FSDP2 的做法为 ZeRO-3 建模：每个层块的权重用一次扁平的 "
              "all-gather 收集，下一块的收集提前发出、藏在这一块的计算后面，reduce-scatter 与反向"
              "计算同时进行。它像对待其他所有布局一样给这种布局排名，用的是其余全部已发表训练给出的"
              "误差带：预测值的 {low:.2f}-{high:.2f} 倍。"},
    "b.6": {
        "en": "Narayanan et al.'s Table 2 measured DeepSpeed's ZeRO-3 of 2021, which gathers the "
              "weights matrix by matrix, and the compute waits for each gather and for each "
              "reduce-scatter (the device is synchronized before every gather). The same layout "
              "run that way is predicted at {ds_step:.1f} s a step, and the Table 2 rows ran at "
              "only {ds_low:.2f}-{ds_high:.2f} of what the planner predicts for them (their "
              "known-miss note, §4, says why): ranked at {ds_ranked:.1f} s, it would be "
              "#{ds_rank} of {of}. The same weights cross the same links; the difference is the "
              "implementation: flat units with the next one prefetched, against a gather per "
              "parameter that the compute waits on, with nothing overlapped.",
        "zh": "Narayanan 等人在 Table 2 中实测的是 DeepSpeed 2021 年的 ZeRO-3：它逐个权重矩阵地收集"
              "权重，计算要等每一次收集完成，也要等每一次 reduce-scatter 完成（每次收集前都会同步整个设备）。"
              "同一布局如果这样运行，预测每步 {ds_step:.1f} s；而 "
              "Table 2 各行的实测速度只有规划器预测值的 {ds_low:.2f}-{ds_high:.2f} 倍（原因见 §4 中"
              "这些行的已知偏差说明）：按 {ds_ranked:.1f} s 排名，它会落到 {of} 个布局中的第 "
              "{ds_rank} 位。收集的是同样的权重，走的是同样的链路；差别在实现：扁平的层块、预取下一块，"
              "对比逐个参数收集、计算原地等待、什么都不重叠。"},
    "b.7": {
        "en": "The caveat to say out loud: FSDP2-style ZeRO-3 is checked against published runs "
              "only up to {fsdp_gpus} GPUs ({fsdp_rows}); at {n_gpus} GPUs its rank is the "
              "mechanism's extrapolation, not a measurement.",
        "zh": "面试时要主动说明的一点：FSDP2 式的 ZeRO-3 只在最多 {fsdp_gpus} 张 GPU 的已发表训练上"
              "核对过（{fsdp_rows}）；到 {n_gpus} 张 GPU 时，它的排名是机制模型的外推，不是实测。"},
    "b.fsdp_row": {"en": "{name}: error {error:+.0%}", "zh": "{name}：误差 {error:+.0%}"},

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
              "ZeRO-3 also fits and has no bubble; what its communication costs depends on how "
              "it gathers the weights (§5).",
        "zh": "所以：取放得下的最小 p（这里是 {smallest}）。再往上，这里放得下的布局彼此相差不到 "
              "{spread:.0%}，而气泡只增不减；如果每张 GPU 分到的序列更少（B 接近 n/t），这个上限"
              "就很大，每多一级阶段都有代价。ZeRO-3 也放得下，而且没有气泡；它的通信代价有多大，"
              "取决于它怎样收集权重（§5）。"},

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
    "numbers.5": {"en": "(b) tp=16 on one card a node {tflops:.0f} TFLOP/s; ZeRO-3 bands: "
                        "DeepSpeed 2021 {ds_low:.2f}-{ds_high:.2f}, FSDP2 (every other layout's) "
                        "{low:.2f}-{high:.2f}",
                  "zh": "(b) tp=16、每节点一张网卡：{tflops:.0f} TFLOP/s；ZeRO-3 误差带："
                        "DeepSpeed 2021 为 {ds_low:.2f}-{ds_high:.2f}，FSDP2（与其他所有布局相同）为 "
                        "{low:.2f}-{high:.2f}"},
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

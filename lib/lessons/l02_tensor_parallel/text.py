"""Notebook 02's words in English and Chinese (``lessons.common.i18n`` catalogues).

``INTERVIEW``: the answers of §11's interview corner, §8's fold-out on chunking and the
appendix's numbers, shown by ``interview.show(key, ...)`` (``lessons.common.interview.said``:
``"b"`` the summary, ``"b.1"``, ``"b.2"``, ... its lines, ``"b.verdict"``). A few answers
also have rows repeated once per measured t (``"f.tp_row"``, ``"f.act_row"``): the answer
function formats one per row.

``TEXT``: what the checkers of ``exercises.py`` and ``exercises_overlap.py`` say, and the
labels of ``widgets.py``. Both are rendered in the session's language when shown; every
number is formatted by the field both languages share.
"""

from .text_interview import INTERVIEW  # noqa: F401  (in their own file: this one holds the rest)

TEXT = {
    # --- exercises 1 and 2: Megatron's MLP ----------------------------------------------------
    "none": {"en": "none", "zh": "无"},
    "and": {"en": " and ", "zh": "和"},
    "forward": {"en": "forward", "zh": "前向"},
    "backward": {"en": "backward", "zh": "反向"},
    "still_placeholder": {"en": "write {name} (it still raises NotImplementedError)",
                          "zh": "请实现 {name}（它仍然抛出 NotImplementedError）"},
    "mean_not_sum": {
        "en": " It is 1/{t} of the sum: the mean over the {t} ranks. g's all-reduce "
              "already adds the {t} terms into the output: don't divide.",
        "zh": " 它是和的 1/{t}：{t} 个 rank 的平均值。g 的 all-reduce "
              "已经把 {t} 项加到输出里了：不要再除。"},
    "summed_t_times": {
        "en": " It is {t}x the sum: the terms were added {t} times (one all-reduce is all g does).",
        "zh": " 它是和的 {t}x：各项被加了 {t} 遍（g 只做一次 all-reduce）。"},
    "one_term": {
        "en": " Each rank holds one term of the sum: did g all-reduce the row-parallel output?",
        "zh": " 每个 rank 只持有和中的一项：g 对行并行层的输出做 all-reduce 了吗？"},
    "forward_collectives": {
        "en": "rank {r}: the output is right, but the forward called {n} collectives ({ops}); Megatron's MLP "
              "needs exactly one all-reduce (g, after the row-parallel matmul).",
        "zh": "rank {r}：输出正确，但前向调用了 {n} 次集合通信（{ops}）；Megatron 的 MLP "
              "只需要恰好一次 all-reduce（g，在行并行矩阵乘之后）。"},
    "forward_ok": {
        "en": "Every rank of {world_size} returns the whole MLP output, with one all-reduce in forward.",
        "zh": "{world_size} 个 rank 都返回了完整的 MLP 输出，前向只用了一次 all-reduce。"},
    "no_graph": {
        "en": "rank {r}: the output has no autograd graph (it does not require grad): a plain dist.all_reduce "
              "is invisible to autograd; wrap it in MyG.apply.",
        "zh": "rank {r}：输出没有 autograd 计算图（它不需要梯度）：autograd 看不见普通的 dist.all_reduce；"
              "把它包进 MyG.apply。"},
    "grad_x": {
        "en": " Each rank's dL/dx is one term (from its own column slice): f's backward must all-reduce it.",
        "zh": " 每个 rank 的 dL/dx 只是其中一项（来自它自己那一列切片）：f 的反向必须对它做 all-reduce。"},
    "grad_w1_shard": {
        "en": " Is the output gradient reaching the column layer whole (g's backward is the identity)?",
        "zh": " 输出梯度是否完整地传到了列并行层（g 的反向是恒等映射）？"},
    "grad_w2_shard": {
        "en": " Is the output gradient reaching the row layer whole (g's backward is the identity, not another "
              "all-reduce)?",
        "zh": " 输出梯度是否完整地传到了行并行层（g 的反向是恒等映射，不是再一次 "
              "all-reduce）？"},
    "backward_calls": {
        "en": "rank {r}: values right, but the backward called {ops}; f's all-reduce is the only one backward needs.",
        "zh": "rank {r}：数值正确，但反向调用了 {ops}；反向只需要 f 的那一次 all-reduce。"},
    "mlp_ok": {
        "en": "Output and the gradients of x, W1 and W2's shards equal the single-device MLP on all {world_size} "
              "ranks; one all-reduce forward (g), one backward (f).",
        "zh": "全部 {world_size} 个 rank 上，输出以及 x、W1 和 W2 分片的梯度都与单设备 MLP 一致；"
              "前向一次 all-reduce（g），反向一次（f）。"},
    # --- exercise 4: one block's collectives ---------------------------------------------------
    "give_passes": {"en": "give forward and backward as dicts like {example}",
                    "zh": "把 forward 和 backward 各写成一个 dict，例如 {example}"},
    "pass_not_dict": {"en": "{d} must be a dict like {example}, got {got}",
                      "zh": "{d} 必须是形如 {example} 的 dict，收到的是 {got}"},
    "count_why": {"en": "{d}[{op}] (a count of calls) {why}",
                  "zh": "{d}[{op}]（调用次数）{why}"},
    "collectives_ok": {"en": "Forward {fwd}, backward {bwd}.",
                       "zh": "前向 {fwd}，反向 {bwd}。"},
    "passes_off": {
        "en": "the {passes} pass is off: think of what g and ḡ do in each direction, and what backward needs "
              "from the saved shard.",
        "zh": "{passes}不对：想想 g 和 ḡ 在每个方向上各做什么，以及反向需要从保存的分片里得到什么。"},
    # --- exercises 5 and 7: bytes ----------------------------------------------------------
    "activation_hint": {
        "en": "Did you count fp32 (4 bytes), the (s, s) scores per head, and which tensors SP divides by t?",
        "zh": "是否按 fp32（4 字节）计算了？每个注意力头的 (s, s) 分数算了吗？哪些张量会被序列并行除以 t？"},
    "layer_bytes_hint": {
        "en": "How many collectives per step, and what does a ring all-reduce send per rank?",
        "zh": "每个训练步有几次集合通信？一次 ring all-reduce 每个 rank 发送多少？"},
    # --- exercise 6: where does f go? -------------------------------------------------------
    "where_f.A": {"en": "before qkv and before fc1: the inputs of the column-parallel layers",
                  "zh": "qkv 之前和 fc1 之前：列并行层的输入"},
    "where_f.B": {"en": "after proj and after fc2: the outputs of the row-parallel layers",
                  "zh": "proj 之后和 fc2 之后：行并行层的输出"},
    "where_f.C": {"en": "between qkv and proj, around the attention core",
                  "zh": "qkv 和 proj 之间，attention 核心计算的两侧"},
    "where_f.D": {"en": "on the residual additions", "zh": "残差相加处"},
    "answer_one_of": {"en": "answer one of {letters}", "zh": "请从 {letters} 中选一个"},
    "answer_with_one_of": {"en": "answer with one of {letters}", "zh": "请用 {letters} 之一作答"},
    "where_f_ok": {
        "en": "f copies the whole input to every rank's column slice (identity forward) and sums the ranks' "
              "partial input gradients (all-reduce backward).",
        "zh": "f 把完整的输入交给每个 rank 的列切片（前向是恒等映射），并把各 rank 的部分输入梯度加起来"
              "（反向是 all-reduce）。"},
    "where_f_wrong": {"en": "{place} is where {why}.", "zh": "“{place}”是{why}。"},
    "where_f_why.B": {"en": "g goes (partial sums to add up)", "zh": "放 g 的地方（要把部分和加起来）"},
    "where_f_why.C": {"en": "nothing is needed: every rank works on its own heads",
                      "zh": "不需要任何通信的地方：每个 rank 只算自己的注意力头"},
    "where_f_why.D": {"en": "the full activation already is on every rank",
                      "zh": "每个 rank 上本来就有完整激活值的地方"},
    # --- exercise 3: the chunked all-gather -> matmul (exercises_overlap.py) -------------------
    "cannot_multiply": {
        "en": " | Cut and gather x_shard along the sequence (dim 1): every piece keeps all the features the "
              "weight multiplies",
        "zh": " | 沿序列维（dim 1）切分并 all-gather x_shard：每一块都要保留权重所乘的全部特征维"},
    "joined_on_batch": {
        "en": "{msg}: dim 0 is the batch ({batch}), so your pieces were joined along it (torch.cat's default dim=0). "
              "x_shard is (batch, positions, features): join the gathered pieces along the sequence, dim=1",
        "zh": "{msg}：dim 0 是 batch（{batch}），你的各块是沿它拼起来的（torch.cat 默认 dim=0）。"
              "x_shard 的形状是 (batch, positions, features)：应沿序列维 dim=1 拼接收集到的各块"},
    "own_positions": {
        "en": "{msg}: that is this rank's own positions only; all-gather x from the {t} ranks",
        "zh": "{msg}：这只是本 rank 自己的位置；需要从 {t} 个 rank all-gather x"},
    "arrival_order": {
        "en": "{msg}: the positions are in the order the pieces arrived (piece 0 of every rank, then piece 1, ...). "
              "The sequence is rank-major: rank r holds positions r·{shard} .. (r+1)·{shard}, so rank r's piece k "
              "belongs at r·{shard} + k·{n}",
        "zh": "{msg}：位置是按各块到达的顺序排的（先是每个 rank 的第 0 块，再是第 1 块……）。"
              "序列是按 rank 优先排列的：rank r 持有位置 r·{shard} .. (r+1)·{shard}，所以 rank r 的第 k 块"
              "应该放在 r·{shard} + k·{n}"},
    "where_pieces_land": {
        "en": "{msg}. Rank r's piece k covers positions r·{shard} + k·{n} onwards ({n} of them): check where each "
              "gathered piece lands",
        "zh": "{msg}。rank r 的第 k 块覆盖从 r·{shard} + k·{n} 开始的位置（共 {n} 个）：检查收集到的每一块"
              "放到了哪里"},
    "no_collective": {
        "en": "right result, but rank {rank} ran no collective the checker could see: it reads torch.distributed's "
              "functions (dist.all_gather, ...), not a process group's own methods or torch.ops.c10d",
        "zh": "结果正确，但检查器没看到 rank {rank} 执行任何集合通信：它只读取 torch.distributed 的函数"
              "（dist.all_gather 等），不读 process group 自身的方法或 torch.ops.c10d"},
    "other_collectives": {
        "en": "right result, but rank {rank} also ran {others}: gather x with {chunks} all-gathers "
              "(dist.all_gather or dist.all_gather_into_tensor) only",
        "zh": "结果正确，但 rank {rank} 还执行了 {others}：只能用 {chunks} 次 all-gather 收集 x"
              "（dist.all_gather 或 dist.all_gather_into_tensor）"},
    "one_whole_gather": {
        "en": "right result, but through one all-gather of the whole shard ({whole} elements): the matmul waits for "
              "all of it, so nothing can overlap. Cut x_shard into {chunks} pieces along the sequence and gather each",
        "zh": "结果正确，但用的是对整个分片的一次 all-gather（{whole} 个元素）：矩阵乘要等全部数据到齐，"
              "所以没有任何重叠。把 x_shard 沿序列维切成 {chunks} 块，逐块 all-gather"},
    "wrong_sizes": {
        "en": "right result, but rank {rank} ran {count} all-gathers of {sizes} elements; the exercise asks for "
              "{chunks} of {piece} each (1/{chunks} of the shard's {whole})",
        "zh": "结果正确，但 rank {rank} 执行了 {count} 次 all-gather，元素数分别为 {sizes}；题目要求 "
              "{chunks} 次、每次 {piece} 个（分片 {whole} 个元素的 1/{chunks}）"},
    "never_waited": {
        "en": "right result this time, but rank {rank} never waited for {missing} of its all-gathers: call wait() on "
              "the handle async_op=True returns before reading the gathered buffers, or the data may not have "
              "arrived yet",
        "zh": "这次结果正确，但 rank {rank} 有 {missing} 次 all-gather 从没等待过：读取收集缓冲区之前，"
              "要对 async_op=True 返回的 handle 调用 wait()，否则数据可能还没到"},
    "serial": {
        "en": "right result, {chunks} all-gathers of 1/{chunks} each, but serial: {hidden} of them had a matmul "
              "running while they travelled (pipelined: {pipelined}, every piece after the first). Issue piece "
              "k+1's all-gather with async_op=True before multiplying piece k, and wait() for it only after",
        "zh": "结果正确，{chunks} 次 all-gather、每次 1/{chunks}，但它们是串行的：传输期间有矩阵乘在算的次数："
              "{hidden}（流水化时应为 {pipelined}，即第一块之后的每一块）。先用 async_op=True 发起第 "
              "k+1 块的 all-gather，再去乘第 k 块，之后才对它 wait()"},
    "chunked_ok": {
        "en": "every rank of {t} returns all_gather(x) @ weight; each ran {c} all-gathers of {piece} elements "
              "(1/{c} of its shard), and every piece after the first was in flight while a matmul ran. What the "
              "checker cannot see: time. It reads the order of issues, waits and matmuls, not whether the transfer "
              "really ran beside the matmul (on these CPU ranks both share the cores; on GPUs the link and the SMs "
              "are apart).",
        "zh": "{t} 个 rank 都返回了 all_gather(x) @ weight；每个 rank 执行了 {c} 次 all-gather，每次 {piece} 个元素"
              "（分片的 1/{c}），并且第一块之后的每一块在传输时都有矩阵乘在算。检查器看不到的是时间：它读的是"
              "发起、等待和矩阵乘的先后顺序，而不是传输是否真的与矩阵乘并行（在这些 CPU rank 上两者共用核心；"
              "GPU 上链路和 SM 是分开的）。"},
    # --- widgets.py: tp_explorer ----------------------------------------------------------------
    "w.tp": {"en": "TP degree t", "zh": "TP 并行度 t"},
    "w.sp": {"en": "sequence parallelism", "zh": "序列并行"},
    "w.seq_len": {"en": "sequence length", "zh": "序列长度"},
    "w.d_model": {"en": "d_model", "zh": "d_model"},
    "w.model": {"en": "GPU-scale model", "zh": "GPU 规模的模型"},
    "w.platform": {"en": "platform", "zh": "平台"},
    "w.run": {"en": "run live on CPU ranks", "zh": "在 CPU rank 上实跑"},
    "w.running": {"en": "running ...", "zh": "运行中……"},
    "w.press_run": {"en": "press <i>run live</i>", "zh": "点击<i>在 CPU rank 上实跑</i>"},
    "w.measured": {"en": "measured here, on CPU ranks", "zh": "本机 CPU rank 上的实测"},
    "w.step_time": {"en": "step time (median)", "zh": "训练步时间（中位数）"},
    "w.tokens_per_s": {"en": "tokens/s", "zh": "tokens/s"},
    "w.block_forward": {"en": "one block, forward", "zh": "一个 block，前向"},
    "w.block_backward": {"en": "one block, backward", "zh": "一个 block，反向"},
    "w.bytes_sent": {"en": "bytes sent per rank, block, step", "zh": "每个 rank、每个 block、每个训练步发送的字节"},
    "w.activations": {"en": "activations per block, each rank", "zh": "每个 block 的激活值（每个 rank）"},
    "w.formula": {"en": "{value} (formula {formula})", "zh": "{value}（公式 {formula}）"},
    "w.predicted": {"en": "predicted: {model}, {platform}", "zh": "预测：{model}，{platform}"},
    "w.tp_over": {"en": "TP group over", "zh": "TP 组所用链路"},
    "w.link": {"en": "{link} ({gb:g} GB/s per direction)", "zh": "{link}（每个方向 {gb:g} GB/s）"},
    "w.compute": {"en": "compute per micro-batch", "zh": "每个微批次的计算时间"},
    "w.comm": {"en": "communication per micro-batch", "zh": "每个微批次的通信时间"},
    "w.comm_share": {"en": "communication share", "zh": "通信占比"},
    "w.mfu": {"en": "MFU", "zh": "MFU"},
    "w.tokens_per_gpu": {"en": "tokens/s per GPU", "zh": "每张 GPU 的 tokens/s"},
}

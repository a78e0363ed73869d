"""The hints of notebook 02's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks in the session's language."""

HINTS = {
    "my_tp_mlp_forward": (
        {"en": "<code>w1_shard</code> holds a slice of A's columns: "
               "<code>torch.nn.functional.gelu(x @ w1_shard)</code> "
               "is this rank's slice of the hidden features, with no communication (GeLU acts "
               "element-wise).",
         "zh": "<code>w1_shard</code> 是 A 的一部分列："
               "<code>torch.nn.functional.gelu(x @ w1_shard)</code> "
               "就是本 rank 负责的那部分隐藏特征，不需要任何通信（GeLU 是逐元素的）。"},
        {"en": "<code>w2_shard</code> holds the matching rows of B, so <code>y @ w2_shard</code> is one "
               "term of the output's sum over ranks: one <code>all_reduce</code> adds the terms. No "
               "division: it is a sum, not a mean.",
         "zh": "<code>w2_shard</code> 是 B 中对应的那些行，所以 <code>y @ w2_shard</code> 是输出"
               "对各 rank 求和中的一项：一次 <code>all_reduce</code> 把各项加起来。不要除："
               "这是求和，不是平均。"}),
    "my_tp_mlp": (
        {"en": "Megatron's f and g are each a <code>torch.autograd.Function</code> with a static "
               "<code>forward(ctx, x)</code> and <code>backward(ctx, grad)</code>. f sits before the "
               "column-parallel matmul, g after the row-parallel one.",
         "zh": "Megatron 的 f 和 g 各是一个 <code>torch.autograd.Function</code>，带静态方法 "
               "<code>forward(ctx, x)</code> 和 <code>backward(ctx, grad)</code>。f 放在列并行矩阵乘之前，"
               "g 放在行并行矩阵乘之后。"},
        {"en": "f is the identity going forward and all-reduces the gradient going back; g "
               "all-reduces going forward and is the identity going back. All-reduce a clone, "
               "not the tensor autograd handed you.",
         "zh": "f 前向是恒等映射，反向对梯度做 all-reduce；g 前向做 all-reduce，反向是恒等映射。"
               "对一份 clone 做 all-reduce，不要直接改 autograd 交给你的那个张量。"}),
    "my_chunked_all_gather_matmul": (
        {"en": "Cut along the sequence: <code>pieces = x_shard.chunk(chunks, dim=1)</code>. "
               "<code>dist.all_gather(bufs, piece, group=group, async_op=True)</code> fills "
               "<code>bufs</code> (a list of <code>t</code> tensors like <code>piece</code>) and returns "
               "at once with a handle; <code>handle.wait()</code> before you read <code>bufs</code>.",
         "zh": "沿序列维切：<code>pieces = x_shard.chunk(chunks, dim=1)</code>。"
               "<code>dist.all_gather(bufs, piece, group=group, async_op=True)</code> 会填充 "
               "<code>bufs</code>（<code>t</code> 个与 <code>piece</code> 同形的张量组成的 list），"
               "并立即返回一个 handle；读 <code>bufs</code> 之前先 <code>handle.wait()</code>。"},
        {"en": "Start piece 0's all-gather before the loop; in the loop, start piece k+1's, then wait for "
               "piece k's and multiply it. The sequence is rank-major: rank r's piece k goes to positions "
               "<code>r * T/t + k * n</code> onwards (n = T/(t·chunks)); write each "
               "<code>bufs[r] @ weight</code> there in an <code>out</code> of shape (batch, T, out). "
               "<code>torch.cat</code>'s default dim=0 is the batch.",
         "zh": "循环开始前先发起第 0 块的 all-gather；循环里先发起第 k+1 块的，再等第 k 块的并做乘法。"
               "序列按 rank 优先排列：rank r 的第 k 块从位置 <code>r * T/t + k * n</code> 开始"
               "（n = T/(t·chunks)）；把每个 <code>bufs[r] @ weight</code> 写到形状为 (batch, T, out) 的 "
               "<code>out</code> 的对应位置。<code>torch.cat</code> 默认的 dim=0 是 batch 维。"}),
}

"""The hints of notebook 05's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks."""

HINTS = {
    "my_zigzag_shard": (
        {"en": "Cut the sequence into <code>2 * world_size</code> chunks. Each rank takes one chunk "
               "from the start and one from the end, so every rank gets early (cheap) and late "
               "(expensive) causal positions.",
         "zh": "把序列切成 <code>2 * world_size</code> 块。每个 rank 从开头取一块、从末尾取一块，"
               "这样每个 rank 都同时拿到靠前（便宜）和靠后（昂贵）的因果位置。"},
        {"en": "Rank <code>r</code> holds chunks <code>r</code> and <code>2 * world_size - 1 - r</code>, "
               "concatenated in that order.",
         "zh": "rank <code>r</code> 持有第 <code>r</code> 块和第 <code>2 * world_size - 1 - r</code> 块，"
               "按这个顺序拼接。"}),
    "my_ring_attention": (
        {"en": "Keep a running max <code>m</code>, a running denominator <code>l</code> and a running "
               "numerator <code>acc</code> per query; pass the (k, v) block round the ring, "
               "<code>world_size</code> blocks in all, your own first.",
         "zh": "为每个 query 维护一个滑动最大值 <code>m</code>、一个滑动分母 <code>l</code> 和一个滑动分子 "
               "<code>acc</code>；让 (k, v) 块沿环传递，一共 <code>world_size</code> 块，先算自己的那块。"},
        {"en": "When the max grows, rescale what you summed: <code>alpha = exp(m_old - m_new)</code>, "
               "then <code>l = l * alpha + p.sum(-1)</code> and <code>acc = acc * alpha + p @ v</code>. "
               "Divide <code>acc / l</code> once at the end.",
         "zh": "最大值变大时，要把已经累加的部分重新缩放：<code>alpha = exp(m_old - m_new)</code>，"
               "然后 <code>l = l * alpha + p.sum(-1)</code>，<code>acc = acc * alpha + p @ v</code>。"
               "最后只做一次 <code>acc / l</code>。"}),
}

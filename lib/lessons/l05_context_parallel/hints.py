"""The hints of notebook 05's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_zigzag_shard": (
        "Cut the sequence into <code>2 * world_size</code> chunks. Each rank takes one chunk "
        "from the start and one from the end, so every rank gets early (cheap) and late "
        "(expensive) causal positions.",
        "Rank <code>r</code> holds chunks <code>r</code> and <code>2 * world_size - 1 - r</code>, "
        "concatenated in that order."),
    "my_ring_attention": (
        "Keep a running max <code>m</code>, a running denominator <code>l</code> and a running "
        "numerator <code>acc</code> per query; pass the (k, v) block round the ring, "
        "<code>world_size</code> blocks in all, your own first.",
        "When the max grows, rescale what you summed: <code>alpha = exp(m_old - m_new)</code>, "
        "then <code>l = l * alpha + p.sum(-1)</code> and <code>acc = acc * alpha + p @ v</code>. "
        "Divide <code>acc / l</code> once at the end."),
}

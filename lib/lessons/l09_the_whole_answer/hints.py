"""The hints of notebook 09's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each ``{"en": ..., "zh": ...}``, shown by
``exercises.hints(name)`` behind clicks in the session's language (``lessons.lang``)."""

HINTS = {
    "my_layout": (
        {"en": "Count the training states per GPU first: 16 bytes per parameter without "
               "sharding. With ZeRO the Adam states (12 of the 16 bytes) and the gradients "
               "divide by dp; TP and PP divide everything by tp · pp. Split only while that "
               "does not fit in about 70% of the GPU's memory (the rest is for activations).",
         "zh": "先算每张 GPU 上的训练状态：不切分时每个参数 16 字节。用 ZeRO 时，Adam 状态（16 字节中的 "
               "12 字节）和梯度除以 dp；TP 和 PP 把所有状态除以 tp · pp。只有放不进 GPU 显存的约 70% "
               "时才继续切分（剩下的留给激活值）。"},
        {"en": "Grow TP first but never past a node (<code>gpus_per_node</code>) nor past what "
               "the heads divide, then PP by what the layers divide; dp is what is left: "
               "<code>n_gpus // (tp * pp)</code>, so that tp · pp · dp uses every GPU once.",
         "zh": "先加大 TP，但不要跨节点（<code>gpus_per_node</code>），也不要超过注意力头数能整除的度；"
               "再按层数能整除的度加大 PP；dp 取剩下的：<code>n_gpus // (tp * pp)</code>，"
               "这样 tp · pp · dp 恰好把每张 GPU 用一次。"}),
}

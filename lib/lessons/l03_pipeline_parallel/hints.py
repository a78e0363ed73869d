"""The hints of notebook 03's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks, in the session's language."""

HINTS = {
    "my_1f1b": (
        {"en": "Return a list of <code>(\"F\", i)</code> and <code>(\"B\", i)</code> actions. A stage "
               "first runs a few forwards to fill the pipe (the warm-up), then alternates one forward "
               "and one backward, then drains the remaining backwards.",
         "zh": "返回一个由 <code>(\"F\", i)</code> 和 <code>(\"B\", i)</code> 组成的动作列表。一个阶段"
               "先做几次前向把流水线填满（预热），然后一次前向、一次反向交替进行，最后把剩下的反向"
               "做完（排空）。"},
        {"en": "The warm-up of stage <code>s</code> is <code>min(n_stages - s - 1, n_micro)</code> "
               "forwards: the last stage starts its first backward at once, the first stage waits "
               "longest.",
         "zh": "阶段 <code>s</code> 的预热是 <code>min(n_stages - s - 1, n_micro)</code> 次前向："
               "最后一个阶段马上就开始第一次反向，第一个阶段等得最久。"}),
    "my_zb_h1": (
        {"en": "Start from your <code>my_1f1b</code>: keep its order of <code>F</code> and "
               "<code>B</code> exactly, and add one <code>(\"W\", i)</code> per micro-batch, "
               "somewhere after its <code>(\"B\", i)</code>. W right after each B is valid but "
               "still idles in the cool-down: nobody waits for a W, so a W can wait.",
         "zh": "从你的 <code>my_1f1b</code> 出发：<code>F</code> 和 <code>B</code> 的顺序完全不变，"
               "给每个微批次加一个 <code>(\"W\", i)</code>，放在它的 <code>(\"B\", i)</code> 之后的"
               "某个位置。每个 B 之后紧跟 W 是合法的，但排空阶段仍然会空等：没有谁在等 W，"
               "所以 W 可以往后放。"},
        {"en": "Stage <code>s</code> runs <code>W(j - s)</code> right after <code>B(j)</code> "
               "(the last stage defers its W's longest, stage 0 not at all), then the W's left at "
               "the end. Every stage then holds at most <code>n_stages</code> micro-batches, and "
               "the late W's fill the cool-down.",
         "zh": "阶段 <code>s</code> 在 <code>B(j)</code> 之后紧接着运行 <code>W(j - s)</code>"
               "（最后一个阶段的 W 推迟得最多，阶段 0 完全不推迟），剩下的 W 放到最后。这样每个阶段"
               "最多保存 <code>n_stages</code> 个微批次，推迟的 W 正好填满排空阶段。"}),
    "my_pipeline_forward": (
        {"en": "For each micro-batch: stage 0 takes it as given, every other stage receives it from "
               "<code>stage - 1</code>; apply <code>layer</code>; send to <code>stage + 1</code> unless "
               "you are the last stage, which keeps the outputs.",
         "zh": "对每个微批次：阶段 0 直接使用传进来的数据，其他阶段从 <code>stage - 1</code> 接收；"
               "应用 <code>layer</code>；除最后一个阶段外都发给 <code>stage + 1</code>，"
               "最后一个阶段把输出留下。"},
        {"en": "<code>dist.recv(buf, src=stage - 1)</code> fills a tensor you allocate: every "
               "micro-batch has the same shape, so <code>torch.empty_like(micro_batches[i])</code> is "
               "the right buffer. The peers are "
               "<code>stage - 1</code> and <code>stage + 1</code>, nothing else.",
         "zh": "<code>dist.recv(buf, src=stage - 1)</code> 会填充一个由你分配的张量：每个微批次的"
               "形状都一样，所以 <code>torch.empty_like(micro_batches[i])</code> 就是合适的缓冲区。"
               "通信对象只有 <code>stage - 1</code> 和 <code>stage + 1</code>，没有别的。"}),
    "my_partition": (
        {"en": "Return one layer count per stage; they must add up to <code>n_layers</code> and "
               "differ by at most one.",
         "zh": "为每个阶段返回一个层数；它们加起来必须等于 <code>n_layers</code>，而且彼此最多差一层。"},
        {"en": "<code>divmod(n_layers, n_stages)</code> gives the base size and how many stages "
               "get one extra layer; give the extra ones to the first stages.",
         "zh": "<code>divmod(n_layers, n_stages)</code> 给出每个阶段的基本层数，以及有几个阶段要多分"
               "一层；把多出来的层给最前面的几个阶段。"}),
}

"""The hints of notebook 08's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks, each in English
and Chinese (the session's language is shown)."""

HINTS = {
    "my_resume": (
        {"en": "DCP already loaded the model and the optimizer in place. What is left in "
               "<code>train_state</code> is the data position and the RNG: put the RNG back with "
               "<code>torch.set_rng_state</code>, then return the step to train next.",
         "zh": "DCP 已经把模型和优化器原地加载好了。<code>train_state</code> 里剩下的是数据位置和 "
               "RNG：用 <code>torch.set_rng_state</code> 把 RNG 放回去，再返回下一个要训练的步。"},
        {"en": "The checkpoint was written <em>after</em> step k-1 with <code>step = k</code>: it already "
               "is the next step, so return <code>int(train_state[\"step\"])</code>, no + 1. Without the "
               "RNG, dropout draws another mask and the very first resumed step differs.",
         "zh": "检查点是在第 k-1 步<em>之后</em>写的，其中 <code>step = k</code>：它本身就是下一步，"
               "所以返回 <code>int(train_state[\"step\"])</code>，不要 + 1。不恢复 RNG 的话，dropout "
               "会抽出另一个 mask，恢复后的第一步就对不上。"}),
}

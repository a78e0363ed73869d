"""The hints of notebook 07's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks, each in English
and Chinese (the session's language is shown)."""

HINTS = {
    "my_scaled_step": (
        {"en": "Three cases. Any gradient inf or NaN (<code>torch.isfinite(g).all()</code>): do not "
               "step, return half the scale and 0 good steps. Otherwise divide every gradient by the "
               "scale and call <code>optimizer.step()</code>.",
         "zh": "分三种情况。只要有梯度是 inf 或 NaN（<code>torch.isfinite(g).all()</code>）：不更新，"
               "返回减半的缩放系数和 0 个正常步。否则把每个梯度除以缩放系数，再调用 "
               "<code>optimizer.step()</code>。"},
        {"en": "Count the good step first, then compare with <code>growth_interval</code>: on reaching "
               "it return <code>scale * 2</code> and reset the count to 0. The gradients must be "
               "unscaled <em>before</em> the step, in place (<code>g.mul_(1.0 / scale)</code>).",
         "zh": "先把这一步计入正常步数，再和 <code>growth_interval</code> 比较：达到时返回 "
               "<code>scale * 2</code>，并把计数清 0。梯度必须在更新<em>之前</em>原地去缩放"
               "（<code>g.mul_(1.0 / scale)</code>）。"}),
}

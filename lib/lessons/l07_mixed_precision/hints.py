"""The hints of notebook 07's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {    "my_scaled_step": (
        "Three cases. Any gradient inf or NaN (<code>torch.isfinite(g).all()</code>): do not "
        "step, return half the scale and 0 good steps. Otherwise divide every gradient by the "
        "scale and call <code>optimizer.step()</code>.",
        "Count the good step first, then compare with <code>growth_interval</code>: on reaching "
        "it return <code>scale * 2</code> and reset the count to 0. The gradients must be "
        "unscaled <em>before</em> the step, in place (<code>g.mul_(1.0 / scale)</code>)."),
}

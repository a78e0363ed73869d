"""The hints of notebook 08's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {    "my_resume": (
        "DCP already loaded the model and the optimizer in place. What is left in "
        "<code>train_state</code> is the data position and the RNG: put the RNG back with "
        "<code>torch.set_rng_state</code>, then return the step to train next.",
        "The checkpoint was written <em>after</em> step k-1 with <code>step = k</code>: it already "
        "is the next step, so return <code>int(train_state[\"step\"])</code>, no + 1. Without the "
        "RNG, dropout draws another mask and the very first resumed step differs."),
}

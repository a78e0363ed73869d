"""The hints of notebook 03's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_1f1b": (
        "Return a list of <code>(\"F\", i)</code> and <code>(\"B\", i)</code> actions. A stage "
        "first runs a few forwards to fill the pipe (the warm-up), then alternates one forward "
        "and one backward, then drains the remaining backwards.",
        "The warm-up of stage <code>s</code> is <code>min(n_stages - s - 1, n_micro)</code> "
        "forwards: the last stage starts its first backward at once, the first stage waits "
        "longest."),
    "my_zb_h1": (
        "Start from your <code>my_1f1b</code>: keep its order of <code>F</code> and "
        "<code>B</code> exactly, and add one <code>(\"W\", i)</code> per micro-batch, "
        "somewhere after its <code>(\"B\", i)</code>. W right after each B is valid but "
        "still idles in the cool-down: nobody waits for a W, so a W can wait.",
        "Stage <code>s</code> runs <code>W(j - s)</code> right after <code>B(j)</code> "
        "(the last stage defers its W's longest, stage 0 not at all), then the W's left at "
        "the end. Every stage then holds at most <code>n_stages</code> micro-batches, and "
        "the late W's fill the cool-down."),
    "my_pipeline_forward": (
        "For each micro-batch: stage 0 takes it as given, every other stage receives it from "
        "<code>stage - 1</code>; apply <code>layer</code>; send to <code>stage + 1</code> unless "
        "you are the last stage, which keeps the outputs.",
        "<code>dist.recv(buf, src=stage - 1)</code> fills a tensor you allocate: every "
        "micro-batch has the same shape, so <code>torch.empty_like(micro_batches[i])</code> is "
        "the right buffer. The peers are "
        "<code>stage - 1</code> and <code>stage + 1</code>, nothing else."),
    "my_partition": (
        "Return one layer count per stage; they must add up to <code>n_layers</code> and "
        "differ by at most one.",
        "<code>divmod(n_layers, n_stages)</code> gives the base size and how many stages "
        "get one extra layer; give the extra ones to the first stages."),
}

"""The hints of notebook 09's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_layout": (
        "Count the training states per GPU first: 16 bytes per parameter without sharding. "
        "With ZeRO the Adam states (12 of the 16 bytes) and the gradients divide by dp; TP "
        "and PP divide everything by tp · pp. Split only while that does not fit in about "
        "70% of the GPU's memory (the rest is for activations).",
        "Grow TP first but never past a node (<code>gpus_per_node</code>) nor past what the "
        "heads divide, then PP by what the layers divide; dp is what is left: "
        "<code>n_gpus // (tp * pp)</code>, so that tp · pp · dp uses every GPU once."),
}

"""The hints of notebook 02's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_tp_mlp_forward": (
        "<code>w1_shard</code> holds a slice of A's columns: "
        "<code>torch.nn.functional.gelu(x @ w1_shard)</code> "
        "is this rank's slice of the hidden features, with no communication (GeLU acts "
        "element-wise).",
        "<code>w2_shard</code> holds the matching rows of B, so <code>y @ w2_shard</code> is one "
        "term of the output's sum over ranks: one <code>all_reduce</code> adds the terms. No "
        "division: it is a sum, not a mean."),
    "my_tp_mlp": (
        "Megatron's f and g are each a <code>torch.autograd.Function</code> with a static "
        "<code>forward(ctx, x)</code> and <code>backward(ctx, grad)</code>. f sits before the "
        "column-parallel matmul, g after the row-parallel one.",
        "f is the identity going forward and all-reduces the gradient going back; g "
        "all-reduces going forward and is the identity going back. All-reduce a clone, "
        "not the tensor autograd handed you."),
    "my_chunked_all_gather_matmul": (
        "Cut along the sequence: <code>pieces = x_shard.chunk(chunks, dim=1)</code>. "
        "<code>dist.all_gather(bufs, piece, group=group, async_op=True)</code> fills "
        "<code>bufs</code> (a list of <code>t</code> tensors like <code>piece</code>) and returns "
        "at once with a handle; <code>handle.wait()</code> before you read <code>bufs</code>.",
        "Start piece 0's all-gather before the loop; in the loop, start piece k+1's, then wait for "
        "piece k's and multiply it. The sequence is rank-major: rank r's piece k goes to positions "
        "<code>r * T/t + k * n</code> onwards (n = T/(t·chunks)); write each "
        "<code>bufs[r] @ weight</code> there in an <code>out</code> of shape (batch, T, out). "
        "<code>torch.cat</code>'s default dim=0 is the batch."),
}

"""The hints of notebook 06's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_groups": (
        "§1's rank = (d<sub>i</sub>·p + p<sub>i</sub>)·t + t<sub>i</sub> in code: "
        "<code>rank = (d_i * pp + p_i) * tp + t_i</code>; recover <code>d_i, p_i, t_i</code> "
        "with <code>divmod</code>. A group varies one coordinate and keeps the other two.",
        "TP: vary t_i, the ranks <code>(d_i * pp + p_i) * tp + i</code> for <code>i</code> in "
        "<code>range(tp)</code>; PP: vary p_i; DP: vary d_i. Each is a list of world ranks "
        "including <code>rank</code> itself."),
    "my_grad_sync": (
        "Only the ranks that hold the same layers and the same TP slice have gradients of the "
        "same numbers: that is the DP group, not the world.",
        "All-reduce over <code>groups[\"dp\"]</code> and divide by that group's size, not by "
        "the world size."),
    "my_global_grad_norm": (
        "||g||² is a sum of squares, so it splits: each rank adds the squares of what it holds "
        "(<code>g.pow(2).sum()</code>), the partial sums are added over the groups whose ranks "
        "hold <em>different</em> pieces, and the root comes once, at the end. Which groups are "
        "those: TP (slices), PP (layers), DP (copies)?",
        "A tensor with <code>g.tp_split is None</code> is the same on every TP rank: count it "
        "only where <code>dist.get_rank(groups[\"tp\"]) == 0</code>. Then "
        "<code>dist.all_reduce</code> the one-element sum over <code>groups[\"tp\"]</code> and "
        "<code>groups[\"pp\"]</code>, not <code>groups[\"dp\"]</code>: the replicas hold the same "
        "averaged gradient."),
}

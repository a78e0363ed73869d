"""The hints of notebook 01's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_dp_exchange": (
        "Every rank holds the gradients of its own slice of the batch. After the exchange "
        "each must hold the full batch's gradient: one collective per tensor, in place.",
        "<code>dist.all_reduce</code> sums. The full batch's loss is the <em>mean</em> over "
        "the slices, so divide by <code>world_size</code> afterwards."),
    "my_zero1_step": (
        "Rank <code>r</code> owns slice <code>r</code> of the parameters and keeps momentum "
        "for that slice only. Three steps: get the averaged gradient of your slice, update "
        "your slice, give every rank everyone's new slice.",
        "<code>dist.reduce_scatter(out, list(grads.chunk(W)))</code> gives your slice's sum "
        "(divide by W); update the view <code>params[r*shard:(r+1)*shard]</code>, then "
        "<code>dist.all_gather(list(params.chunk(W)), mine.clone())</code>."),
    "my_hsdp_grad_sync": (
        "Two collectives, each on one group. <code>dist.reduce_scatter</code> on "
        "<code>shard_group</code> leaves this rank its shard of the node's sum; "
        "<code>dist.all_reduce</code> of that shard on <code>replicate_group</code> adds the "
        "other nodes' copies of the same shard. Then divide.",
        "Cut with <code>grad.chunk(s)</code>, s = <code>dist.get_world_size(shard_group)</code>: "
        "the reduce-scatter gives rank i of the shard group chunk i, the place HybridShard "
        "keeps. All-reduce that shard, not <code>grad</code>, divide by all the ranks "
        "(s × the replicate group's size), and return it: no all-gather."),
}

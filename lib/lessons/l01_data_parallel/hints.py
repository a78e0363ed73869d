"""The hints of notebook 01's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks in the session's language."""

HINTS = {
    "my_dp_exchange": (
        {"en": "Every rank holds the gradients of its own slice of the batch. After the exchange "
               "each must hold the full batch's gradient: one collective per tensor, in place.",
         "zh": "每个 rank 持有的是它那一片 batch 的梯度。交换之后，每个 rank 都必须持有整个 batch "
               "的梯度：每个张量一次集合通信，原地完成。"},
        {"en": "<code>dist.all_reduce</code> sums. The full batch's loss is the <em>mean</em> over "
               "the slices, so divide by <code>world_size</code> afterwards.",
         "zh": "<code>dist.all_reduce</code> 做的是求和。整个 batch 的损失是各片损失的<em>平均</em>，"
               "所以之后还要除以 <code>world_size</code>。"}),
    "my_zero1_step": (
        {"en": "Rank <code>r</code> owns slice <code>r</code> of the parameters and keeps momentum "
               "for that slice only. Three steps: get the averaged gradient of your slice, update "
               "your slice, give every rank everyone's new slice.",
         "zh": "rank <code>r</code> 负责参数的第 <code>r</code> 片，也只为这一片保存动量。三步："
               "拿到自己这一片的平均梯度，更新这一片，再把每个 rank 的新分片发给所有 rank。"},
        {"en": "<code>dist.reduce_scatter(out, list(grads.chunk(W)))</code> gives your slice's sum "
               "(divide by W); update the view <code>params[r*shard:(r+1)*shard]</code>, then "
               "<code>dist.all_gather(list(params.chunk(W)), mine.clone())</code>.",
         "zh": "<code>dist.reduce_scatter(out, list(grads.chunk(W)))</code> 给出你这一片的梯度之和"
               "（再除以 W）；更新视图 <code>params[r*shard:(r+1)*shard]</code>，然后调用 "
               "<code>dist.all_gather(list(params.chunk(W)), mine.clone())</code>。"}),
    "my_hsdp_grad_sync": (
        {"en": "Two collectives, each on one group. <code>dist.reduce_scatter</code> on "
               "<code>shard_group</code> leaves this rank its shard of the node's sum; "
               "<code>dist.all_reduce</code> of that shard on <code>replicate_group</code> adds the "
               "other nodes' copies of the same shard. Then divide.",
         "zh": "两次集合通信，各用一个 group。在 <code>shard_group</code> 上做 "
               "<code>dist.reduce_scatter</code>，本 rank 得到节点内求和结果中自己的分片；再在 "
               "<code>replicate_group</code> 上对这个分片做 <code>dist.all_reduce</code>，加上其他节点"
               "上同一分片的副本。最后做除法。"},
        {"en": "Cut with <code>grad.chunk(s)</code>, s = <code>dist.get_world_size(shard_group)</code>: "
               "the reduce-scatter gives rank i of the shard group chunk i, the place HybridShard "
               "keeps. All-reduce that shard, not <code>grad</code>, divide by all the ranks "
               "(s × the replicate group's size), and return it: no all-gather.",
         "zh": "用 <code>grad.chunk(s)</code> 切分，s = <code>dist.get_world_size(shard_group)</code>："
               "reduce-scatter 把第 i 块交给 shard group 中的第 i 个 rank，正是 HybridShard 保存的位置。"
               "对这个分片（而不是 <code>grad</code>）做 all-reduce，除以全部 rank 数"
               "（s × replicate group 的大小），然后返回它：不要做 all-gather。"}),
}

"""The hints of notebook 00's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks in the session's language."""

HINTS = {
    "my_reduce_scatter": (
        {"en": "Cut <code>x</code> into <code>world_size</code> chunks with <code>x.chunk</code>. "
               "Chunk <code>r</code> belongs to rank <code>r</code>: send every other chunk to its "
               "owner, and add what the peers send you to your own chunk.",
         "zh": "用 <code>x.chunk</code> 把 <code>x</code> 切成 <code>world_size</code> 块。第 "
               "<code>r</code> 块归 rank <code>r</code>：把其余每一块发给它的所属 rank，再把其他 "
               "rank 发来的数据加到你自己那一块上。"},
        {"en": "If every rank first waits in a blocking <code>send</code>, nobody is receiving: post "
               "the sends with <code>dist.isend</code>, then <code>dist.recv</code> from each peer, "
               "then <code>wait()</code> on the sends.",
         "zh": "如果每个 rank 都先卡在阻塞的 <code>send</code> 上，就没有人在接收：先用 "
               "<code>dist.isend</code> 把发送都挂出去，再逐个对其他 rank 调 <code>dist.recv</code>，"
               "最后对这些发送调用 <code>wait()</code>。"}),
    "my_ring_all_reduce": (
        {"en": "Two phases of <code>world_size - 1</code> steps each. In every step a rank sends one "
               "chunk to its right neighbour <code>(rank + 1) % world_size</code> and receives one "
               "from its left neighbour. Phase 1 adds what arrives (reduce-scatter), phase 2 copies "
               "it (all-gather).",
         "zh": "分两个阶段，每个阶段 <code>world_size - 1</code> 步。每一步里，rank 向右邻居 "
               "<code>(rank + 1) % world_size</code> 发送一块，并从左邻居接收一块。阶段 1 把收到的"
               "加上去（reduce-scatter），阶段 2 把收到的直接复制过来（all-gather）。"},
        {"en": "Index the chunk by rank and step: in reduce-scatter step <code>s</code> send chunk "
               "<code>(rank - s - 1) % W</code> and add into <code>(rank - s - 2) % W</code>; in "
               "all-gather step <code>s</code> send <code>(rank - s) % W</code> and overwrite "
               "<code>(rank - s - 1) % W</code>. Write into the views from <code>x.chunk</code> so "
               "<code>x</code> itself changes.",
         "zh": "用 rank 和步号算出块的下标：reduce-scatter 的第 <code>s</code> 步发送第 "
               "<code>(rank - s - 1) % W</code> 块，并把收到的加到第 <code>(rank - s - 2) % W</code> "
               "块上；all-gather 的第 <code>s</code> 步发送第 <code>(rank - s) % W</code> 块，并覆盖第 "
               "<code>(rank - s - 1) % W</code> 块。写进 <code>x.chunk</code> 返回的视图里，这样 "
               "<code>x</code> 本身才会被改动。"}),
    "my_two_level_all_reduce": (
        {"en": "Three collectives, each on one group: <code>dist.reduce_scatter</code> inside the node "
               "(<code>group=node_group</code>) leaves each GPU 1/g of the node's sum; "
               "<code>dist.all_reduce</code> of that piece on <code>network_group</code> sums it over the "
               "nodes; <code>dist.all_gather</code> inside the node puts the pieces back together.",
         "zh": "三次集合通信，各在一个通信组上：节点内的 <code>dist.reduce_scatter</code>"
               "（<code>group=node_group</code>）让每张 GPU 得到本节点之和的 1/g；在 "
               "<code>network_group</code> 上对这一份做 <code>dist.all_reduce</code>，把它在各节点间"
               "求和；最后节点内的 <code>dist.all_gather</code> 把各份重新拼起来。"},
        {"en": "Cut <code>x</code> with <code>x.chunk(g)</code>, g = <code>dist.get_world_size(node_group)</code>; "
               "the piece you all-reduce across is the one the reduce-scatter gave you, not <code>x</code>: "
               "the network must carry only 1/g of the buffer. Return <code>torch.cat</code> of the gathered "
               "pieces.",
         "zh": "用 <code>x.chunk(g)</code> 切分 <code>x</code>，g = <code>dist.get_world_size(node_group)</code>；"
               "跨节点 all-reduce 的是 reduce-scatter 给你的那一份，而不是 <code>x</code>：网络上只应传"
               "缓冲区的 1/g。返回收集到的各份经 <code>torch.cat</code> 拼接的结果。"}),
}

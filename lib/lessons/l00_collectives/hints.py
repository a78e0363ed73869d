"""The hints of notebook 00's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
    "my_reduce_scatter": (
        "Cut <code>x</code> into <code>world_size</code> chunks with <code>x.chunk</code>. "
        "Chunk <code>r</code> belongs to rank <code>r</code>: send every other chunk to its "
        "owner, and add what the peers send you to your own chunk.",
        "If every rank first waits in a blocking <code>send</code>, nobody is receiving: post "
        "the sends with <code>dist.isend</code>, then <code>dist.recv</code> from each peer, "
        "then <code>wait()</code> on the sends."),
    "my_ring_all_reduce": (
        "Two phases of <code>world_size - 1</code> steps each. In every step a rank sends one "
        "chunk to its right neighbour <code>(rank + 1) % world_size</code> and receives one "
        "from its left neighbour. Phase 1 adds what arrives (reduce-scatter), phase 2 copies "
        "it (all-gather).",
        "Index the chunk by rank and step: in reduce-scatter step <code>s</code> send chunk "
        "<code>(rank - s - 1) % W</code> and add into <code>(rank - s - 2) % W</code>; in "
        "all-gather step <code>s</code> send <code>(rank - s) % W</code> and overwrite "
        "<code>(rank - s - 1) % W</code>. Write into the views from <code>x.chunk</code> so "
        "<code>x</code> itself changes."),
    "my_two_level_all_reduce": (
        "Three collectives, each on one group: <code>dist.reduce_scatter</code> inside the node "
        "(<code>group=node_group</code>) leaves each GPU 1/g of the node's sum; "
        "<code>dist.all_reduce</code> of that piece on <code>network_group</code> sums it over the "
        "nodes; <code>dist.all_gather</code> inside the node puts the pieces back together.",
        "Cut <code>x</code> with <code>x.chunk(g)</code>, g = <code>dist.get_world_size(node_group)</code>; "
        "the piece you all-reduce across is the one the reduce-scatter gave you, not <code>x</code>: "
        "the network must carry only 1/g of the buffer. Return <code>torch.cat</code> of the gathered "
        "pieces."),
}

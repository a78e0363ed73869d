"""Tiered help for every coding exercise: a first hint (where to start), a second one
(the step most learners get wrong), then the reference solution, each behind its own
click. ``help_html`` builds the three nested click-to-open notes; every topic module's
``hints(name)`` shows them for its exercises. The tests check that each exercise has both
hints and that nothing of them is visible before a click."""

from __future__ import annotations

import html

HINTS = {
    # 00 · collectives
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
    # 01 · data parallelism
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
    # 02 · tensor parallelism
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
    # 03 · pipeline parallelism
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
    # 04 · expert parallelism
    "my_route": (
        "<code>logits.topk(top_k, dim=-1).indices</code> are each token's experts. Then walk "
        "the assignments in GShard's order and keep the first <code>capacity</code> of each "
        "expert.",
        "The order is all first choices (token by token), then all second choices. A one-hot "
        "of the choices (n, k, E) with cumulative sums gives each assignment's place in its "
        "expert's queue; keep it when the place is below the capacity."),
    "my_global_route": (
        "Capacity now counts the tokens of every rank. Each rank needs to know how many "
        "assignments the ranks before it sent to each expert: share your (k, E) counts.",
        "<code>dist.all_gather</code> the counts. Ahead of your choice-c assignments are every "
        "rank's earlier choices and choice c of the ranks with a lower rank; add that offset "
        "to the local queue position."),
    "my_expert_choice_route": (
        "<code>logits.softmax(dim=-1)</code> are this rank's scores S, one row per token. An "
        "expert chooses among the tokens of <em>every</em> rank, so first put the whole "
        "batch's S on every rank: <code>dist.all_gather</code>, rank 0's rows first.",
        "Concatenate the gathered rows into (W n, E): row r n + t is rank r's token t. Expert "
        "e takes the top <code>capacity</code> of its column: <code>S.t().topk(capacity, "
        "dim=-1)</code> gives (values, indices) = (gates, tokens), one row per expert. A topk "
        "over <code>dim=-1</code> of S itself would be each token choosing experts."),
    # 05 · context parallelism
    "my_zigzag_shard": (
        "Cut the sequence into <code>2 * world_size</code> chunks. Each rank takes one chunk "
        "from the start and one from the end, so every rank gets early (cheap) and late "
        "(expensive) causal positions.",
        "Rank <code>r</code> holds chunks <code>r</code> and <code>2 * world_size - 1 - r</code>, "
        "concatenated in that order."),
    "my_ring_attention": (
        "Keep a running max <code>m</code>, a running denominator <code>l</code> and a running "
        "numerator <code>acc</code> per query; pass the (k, v) block round the ring, "
        "<code>world_size</code> blocks in all, your own first.",
        "When the max grows, rescale what you summed: <code>alpha = exp(m_old - m_new)</code>, "
        "then <code>l = l * alpha + p.sum(-1)</code> and <code>acc = acc * alpha + p @ v</code>. "
        "Divide <code>acc / l</code> once at the end."),
    # 06 · 3D parallelism
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
    # 07 · mixed precision (hints for parlab.exercises.precision go here)
    "my_scaled_step": (
        "Three cases. Any gradient inf or NaN (<code>torch.isfinite(g).all()</code>): do not "
        "step, return half the scale and 0 good steps. Otherwise divide every gradient by the "
        "scale and call <code>optimizer.step()</code>.",
        "Count the good step first, then compare with <code>growth_interval</code>: on reaching "
        "it return <code>scale * 2</code> and reset the count to 0. The gradients must be "
        "unscaled <em>before</em> the step, in place (<code>g.mul_(1.0 / scale)</code>)."),

    # 08 · checkpoints and failures (hints for parlab.exercises.reliability go here)
    "my_resume": (
        "DCP already loaded the model and the optimizer in place. What is left in "
        "<code>train_state</code> is the data position and the RNG: put the RNG back with "
        "<code>torch.set_rng_state</code>, then return the step to train next.",
        "The checkpoint was written <em>after</em> step k-1 with <code>step = k</code>: it already "
        "is the next step, so return <code>int(train_state[\"step\"])</code>, no + 1. Without the "
        "RNG, dropout draws another mask and the very first resumed step differs."),

    # 09 · the whole answer
    "my_layout": (
        "Count the training states per GPU first: 16 bytes per parameter without sharding. "
        "With ZeRO the Adam states (12 of the 16 bytes) and the gradients divide by dp; TP "
        "and PP divide everything by tp · pp. Split only while that does not fit in about "
        "70% of the GPU's memory (the rest is for activations).",
        "Grow TP first but never past a node (<code>gpus_per_node</code>) nor past what the "
        "heads divide, then PP by what the layers divide; dp is what is left: "
        "<code>n_gpus // (tp * pp)</code>, so that tp · pp · dp uses every GPU once."),

}


def help_html(solution_source: str | None, name: str) -> str:
    """Hint 1, hint 2 and the reference solution as three click-to-open notes, nested so
    each opens only after the one before it; nothing but the summaries shows at first."""
    if name not in HINTS:
        raise ValueError(f"name={name!r} must be one of {', '.join(HINTS)}")
    first, second = HINTS[name]
    solution = (f"<pre>{html.escape(solution_source)}</pre>" if solution_source
                else "<p>(no reference solution)</p>")

    def note(summary, body):
        return (f"<details><summary>{summary}</summary>"
                f"<div style='margin-left:1em'>{body}</div></details>")

    return note(f"Stuck? Hint 1 for <code>{name}</code> (click to open)",
                f"<p>{first}</p>" + note("Hint 2 (click to open)",
                                         f"<p>{second}</p>" + note("Reference solution (click to open)", solution)))

"""The answers of §7's interview corner, as functions of what the notebook computed; the notebook
shows each by naming it (``interview.show("holds", ...)``), closed until the learner clicks
(lessons.common.interview)."""

from __future__ import annotations

from parlab import cost

from lessons.common.interview import Answer, Corner


def _holds(ns, per_rank, scale_table) -> Answer:
    return Answer("Answer 1: what holds", [
        scale_table.data,
        "The bytes each rank sends, 2(N−1)/N·S, are bounded by 2S: "
        + ", ".join(f"{g:.2f}" for g in per_rank) + " GB at N = " + ", ".join(map(str, ns))
        + " (section 4 counted 1, 1.5 and 1.75 MiB per MiB at N = 2, 4, 8).",
        "For one big message the ring's time is therefore almost flat in N, while the naive root's grows "
        "like (N−1)·S. In that precise sense, \"per-rank bandwidth cost O(1) instead of O(N)\" is right: "
        "the ring is bandwidth-optimal (Patarasuk & Yuan 2009)."],
        verdict="Bytes per rank: O(1), bounded by 2S.")


def _does_not(bucket_table, crossover, flat_up_to, ns) -> Answer:
    return Answer("Answer 2: what does not", [
        f"The <b>number of steps</b> is 2(N−1), {cost.collective_steps('all_reduce', ns[-1]):,} at N = "
        f"{ns[-1]:,}: the latency term grows as O(N). For small messages or very many ranks it dominates; "
        "that is why tree and hierarchical algorithms exist (log₂N steps).",
        "The <b>total</b> traffic, 2(N−1)·S, grows with N (the table's \"all ranks GB\"); the ring spreads "
        "it over N links in parallel.",
        "The time is flat only if every link keeps its bandwidth: across nodes the network sets the pace of "
        "the whole ring. On DGX nodes the 8 GPUs of a node drive its 8 cards at once, one ring per card (a DGX "
        "A100 measures 192 GB/s of bus bandwidth, nccl#812): the table's last column.",
        "<b>DDP does not pick \"ring\".</b> It buckets gradients and calls the backend's all-reduce while "
        "backward is still running (Li et al., \"PyTorch Distributed\", VLDB 2020). NCCL chooses the algorithm "
        "(ring, tree, on newer systems NVLS/CollNet) and the protocol per call from its own latency/bandwidth "
        "model: trees (two complementary binary trees, NCCL ≥ 2.4) win for small and medium messages across "
        "many nodes, rings for large ones; <code>NCCL_ALGO=Ring</code> or <code>Tree</code> forces one. Our "
        "model's crossover over IB-HDR: tree faster below "
        + ", ".join(f"{mb:,.0f} MB at N = {n}" for n, mb in crossover.items())
        + " (NCCL's tuner also weighs protocols and topology).",
        bucket_table.data,
        "<b>Per bucket</b>, each of DDP's 25 MiB buckets pays the ring's 2(N−1)α. That latency term catches "
        "up with the bandwidth term 2(N−1)/N·S_b/B at N = S_b/(α·B): about "
        + " or ".join(f"{v:,.0f} ranks with α = {a * 1e6:g} µs" for a, v in flat_up_to.items())
        + ". Beyond that the time per bucket, and so per step, grows linearly with N."],
        verdict="Steps: O(N); total traffic: O(N); and the algorithm is NCCL's choice, not DDP's.")


corner = Corner({"holds": _holds, "does_not": _does_not})
show = corner.show

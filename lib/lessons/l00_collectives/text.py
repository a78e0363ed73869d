"""Notebook 00's words in English and Chinese, one catalogue each (``lessons.common.i18n``):

* ``INTERVIEW``: §7's interview answers, shown by ``interview.show`` through
  ``lessons.common.interview.said`` (``"holds"``, ``"does_not"``, ``"thirty"``: a summary,
  its lines ``.1``, ``.2``, ... and a ``.verdict``; ``.item``/``.sep`` keys are the pieces of
  a list a line holds);
* ``TEXT``: what the checkers of ``exercises.py`` and ``exercises_hierarchical.py`` say, the
  numeric exercises' questions, and the labels of ``widgets.py`` and ``explorer.py``.

Every number is a field, formatted by the same spec in both languages; the code computes it
and renders the text when it is shown (``i18n.t``), so the session's language at that moment
is the one it speaks."""

INTERVIEW = {
    # --- answer 1: what holds ----------------------------------------------------------
    "holds": {"en": "Answer 1: what holds", "zh": "答案 1：哪些说法成立"},
    "holds.verdict": {"en": "Bytes per rank: O(1), bounded by 2S.",
                      "zh": "每个 rank 的发送字节数：O(1)，上界是 2S。"},
    "holds.1": {"en": "{table}", "zh": "{table}"},
    "holds.2": {
        "en": "The bytes each rank sends, 2(N−1)/N·S, are bounded by 2S: {per_rank} GB at "
              "N = {ns} (section 4 counted 1, 1.5 and 1.75 MiB per MiB at N = 2, 4, 8).",
        "zh": "每个 rank 发送的字节数 2(N−1)/N·S 以 2S 为上界：N = {ns} 时依次为 {per_rank} GB"
              "（第 4 节实测：N = 2、4、8 时，每 MiB 数据分别发送 1、1.5 和 1.75 MiB）。"},
    "holds.3": {
        "en": "For one big message the ring's time is therefore almost flat in N, while the naive "
              "root's grows like (N−1)·S. In that precise sense, \"per-rank bandwidth cost O(1) "
              "instead of O(N)\" is right: the ring is bandwidth-optimal (Patarasuk & Yuan 2009).",
        "zh": "所以对一条大消息，环形算法的耗时几乎不随 N 变化，而朴素做法里根节点的耗时按 (N−1)·S "
              "增长。严格在这个意义上，“每个 rank 的带宽开销是 O(1) 而不是 O(N)”是对的：环形算法是"
              "带宽最优的（Patarasuk & Yuan 2009）。"},
    "holds.sep": {"en": ", ", "zh": "、"},

    # --- answer 2: what does not -------------------------------------------------------
    "does_not": {"en": "Answer 2: what does not", "zh": "答案 2：哪些说法不成立"},
    "does_not.verdict": {
        "en": "Steps: O(N); total traffic: O(N); and the algorithm is NCCL's choice, not DDP's.",
        "zh": "步数：O(N)；总通信量：O(N)；而且算法是 NCCL 选的，不是 DDP。"},
    "does_not.1": {
        "en": "The <b>number of steps</b> is 2(N−1), {steps:,} at N = {n:,}: the latency term grows "
              "as O(N). For small messages or very many ranks it dominates; that is why tree and "
              "hierarchical algorithms exist (log₂N steps).",
        "zh": "<b>步数</b>是 2(N−1)，N = {n:,} 时为 {steps:,} 步：延迟项按 O(N) 增长。消息很小或 rank "
              "非常多时，延迟项占主导；这正是树形算法和分层算法存在的原因（只需 log₂N 步）。"},
    "does_not.2": {
        "en": "The <b>total</b> traffic, 2(N−1)·S, grows with N (the table's \"all ranks GB\"); "
              "the ring spreads it over N links in parallel.",
        "zh": "<b>总</b>通信量 2(N−1)·S 随 N 增长（表中的 “all ranks GB” 一列）；环形算法只是把它"
              "分摊到 N 条并行的链路上。"},
    "does_not.3": {
        "en": "The time is flat only if every link keeps its bandwidth: across nodes the network "
              "sets the pace of the whole ring. On DGX nodes the 8 GPUs of a node drive its 8 cards "
              "at once, one ring per card (a DGX A100 measures 192 GB/s of bus bandwidth, nccl#812): "
              "the table's last column.",
        "zh": "只有每条链路都保住自己的带宽，耗时才不随 N 变化：一旦跨节点，整个环的速度就由网络决定。"
              "在 DGX 节点上，一个节点的 8 张 GPU 同时驱动它的 8 张网卡，每张网卡跑一个环（DGX A100 "
              "实测总线带宽 192 GB/s，见 nccl#812）：即表格的最后一列。"},
    "does_not.4": {
        "en": "<b>DDP does not pick \"ring\".</b> It buckets gradients and calls the backend's "
              "all-reduce while backward is still running (Li et al., \"PyTorch Distributed\", "
              "VLDB 2020). NCCL chooses the algorithm (ring, tree, on newer systems NVLS/CollNet) "
              "and the protocol per call from its own latency/bandwidth model: trees (two "
              "complementary binary trees, NCCL ≥ 2.4) win for small and medium messages across "
              "many nodes, rings for large ones; <code>NCCL_ALGO=Ring</code> or <code>Tree</code> "
              "forces one. Our model's crossover over IB-HDR: tree faster below {crossover} "
              "(NCCL's tuner also weighs protocols and topology).",
        "zh": "<b>选“环形”的不是 DDP。</b>DDP 把梯度分桶，在反向传播还没结束时就调用后端的 all-reduce"
              "（Li et al., “PyTorch Distributed”, VLDB 2020）。算法（ring、tree，较新的系统上还有 "
              "NVLS/CollNet）和协议由 NCCL 每次调用时按它自己的延迟/带宽模型来选：跨多个节点时，小消息"
              "和中等消息用树（两棵互补的二叉树，NCCL ≥ 2.4）更快，大消息用环更快；"
              "<code>NCCL_ALGO=Ring</code> 或 <code>Tree</code> 可以强制指定。按我们的模型，在 IB-HDR "
              "上树更快的范围是：{crossover}（NCCL 的调优器还会权衡协议和拓扑）。"},
    "does_not.4.item": {"en": "{mb:,.0f} MB at N = {n}", "zh": "N = {n} 时小于 {mb:,.0f} MB"},
    "does_not.4.sep": {"en": ", ", "zh": "；"},
    "does_not.5": {"en": "{table}", "zh": "{table}"},
    "does_not.6": {
        "en": "<b>Per bucket</b>, each of DDP's 25 MiB buckets pays the ring's 2(N−1)α. That "
              "latency term catches up with the bandwidth term 2(N−1)/N·S_b/B at N = S_b/(α·B): "
              "about {flat}. Beyond that the time per bucket, and so per step, grows linearly "
              "with N.",
        "zh": "<b>按桶来看</b>，DDP 每个 25 MiB 的桶都要付环形算法的 2(N−1)α。这一延迟项在 "
              "N = S_b/(α·B) 处追上带宽项 2(N−1)/N·S_b/B：{flat}。超过这个规模，每个桶的耗时，"
              "也就是每一步的耗时，随 N 线性增长。"},
    "does_not.6.item": {"en": "{ranks:,.0f} ranks with α = {us:g} µs",
                        "zh": "α = {us:g} µs 时约为 {ranks:,.0f} 个 rank"},
    "does_not.6.sep": {"en": " or ", "zh": "；"},

    # --- the 30-second answer ------------------------------------------------------------
    "thirty": {"en": "A 30-second answer", "zh": "30 秒版回答"},
    "thirty.1": {
        "en": "\"Ring all-reduce makes the bytes each GPU sends independent of the number of "
              "GPUs — 2(N−1)/N·S, under 2S — instead of (N−1)·S at a parameter server, so for large "
              "gradient buffers the time stays roughly flat as you add GPUs. The number of steps "
              "still grows as 2(N−1), so latency grows linearly; that is why NCCL also has tree "
              "algorithms with log N steps and picks between them per message. DDP itself does not "
              "choose the algorithm: it buckets gradients and overlaps NCCL's all-reduce with the "
              "backward pass.\"",
        "zh": "“Ring all-reduce 让每张 GPU 发送的字节数与 GPU 数量无关：2(N−1)/N·S，不超过 2S；"
              "而参数服务器要发 (N−1)·S。所以梯度缓冲区很大时，加 GPU 耗时基本不变。但步数仍按 "
              "2(N−1) 增长，延迟随 N 线性上升；这就是 NCCL 还提供只需 log N 步的树形算法、并按每条"
              "消息在两者之间选择的原因。DDP 本身并不选算法：它把梯度分桶，让 NCCL 的 all-reduce "
              "和反向传播重叠执行。”"},
}

TEXT = {
    # --- exercises 1 and 2: reduce-scatter and ring all-reduce from send/recv ----------------
    "whose_missing": {"en": " (exactly rank {p}'s contribution is missing)",
                      "zh": "（恰好缺了 rank {p} 的那份）"},
    "whose_twice": {"en": " (rank {p}'s contribution is counted twice)",
                    "zh": "（rank {p} 的那份被加了两次）"},
    "not_a_sum": {"en": "is not a sum of the ranks' chunks",
                  "zh": "不是各 rank 对应数据块之和"},
    "own_part": {"en": "still holds only rank {p}'s own part",
                 "zh": "仍然只有 rank {p} 自己的那份"},
    "partial_one": {"en": "holds a partial sum ({k} of {w} ranks' parts; rank {missing} missing)",
                    "zh": "只是部分和（{w} 个 rank 中只加了 {k} 个；缺 rank {missing}）"},
    "partial_many": {"en": "holds a partial sum ({k} of {w} ranks' parts; ranks {missing} missing)",
                     "zh": "只是部分和（{w} 个 rank 中只加了 {k} 个；缺 rank {missing}）"},
    "chunk_on_rank": {"en": "Chunk {c} on rank {rank} {what}",
                      "zh": "rank {rank} 上编号为 {c} 的块{what}"},
    "stopped_one": {"en": ": the all-gather phase stopped one step short ({steps} steps are "
                          "needed, {ran} ran)",
                    "zh": "：all-gather 阶段少跑了一步（需要 {steps} 步，只跑了 {ran} 步）"},
    "stopped_many": {"en": ": the all-gather phase stopped {short} steps short ({steps} steps are "
                           "needed, {ran} ran)",
                     "zh": "：all-gather 阶段少跑了 {short} 步（需要 {steps} 步，只跑了 {ran} 步）"},
    "sentence": {"en": "{text}. ", "zh": "{text}。"},
    "inputs_note": {"en": "Rank r's x is 100 (r + 1) + [0, 1, ..., {last}] ({w} chunks of "
                          "{per_chunk}).",
                    "zh": "rank r 的 x 是 100 (r + 1) + [0, 1, ..., {last}]（{w} 块，每块 "
                          "{per_chunk} 个元素）。"},
    "wrong_too": {"en": "; wrong on rank(s) {others} too", "zh": "；rank {others} 上也不对"},
    "want_reduce_scatter": {"en": "Rank r must return the sum over ranks of chunk r",
                            "zh": "rank r 应返回所有 rank 编号为 r 的块之和"},
    "want_all_reduce": {"en": "Every rank must end with the element-wise sum of all ranks' x",
                        "zh": "每个 rank 最后都应得到所有 rank 的 x 逐元素相加之和"},
    "wrong": {"en": "{first}{more}. {why}{what}. {inputs}",
              "zh": "{first}{more}。{why}{what}。{inputs}"},
    "used_collective": {"en": "Right values, but built on dist.{op}: write it from send/recv "
                              "(isend/irecv) only",
                        "zh": "数值对了，但用的是 dist.{op}：请只用 send/recv（isend/irecv）来写"},
    "uncounted": {
        "en": "Right values, but the checker could not count your bytes: it saw {sent} bytes "
              "sent and {received} received over all ranks. It counts dist.send, recv, isend, "
              "irecv and batch_isend_irecv (however you import them), not the process group's "
              "own methods or torch.ops; write the messages with those so it can.",
        "zh": "数值对了，但检查器数不到你发送的字节：它在所有 rank 上只看到发送 {sent} 字节、接收 "
              "{received} 字节。它统计的是 dist.send、recv、isend、irecv 和 batch_isend_irecv"
              "（不论你怎样 import），不统计进程组自己的方法或 torch.ops；请用这些函数收发消息，"
              "它才数得到。"},
    "how_reduce_scatter": {"en": "each rank needs to send each peer only the chunk that peer owns",
                           "zh": "每个 rank 只需把对方负责的那一块发给对方"},
    "how_all_reduce": {"en": "each of the 2(W-1) steps sends one chunk of S/W to the right "
                             "neighbour",
                       "zh": "2(W-1) 步中的每一步只向右邻居发送一个 S/W 大小的块"},
    "too_many_bytes": {"en": "Right values, but rank {rank} sent {sent} bytes where {want:g} "
                             "suffice (S = {S} bytes, W = {w}): {how}",
                       "zh": "数值对了，但 rank {rank} 发送了 {sent} 字节，其实 {want:g} 字节就够了"
                             "（S = {S} 字节，W = {w}）：{how}"},
    "right": {"en": "All {w} ranks hold the right sums, and each sent {want:g} bytes = {formula} "
                    "for S = {S} bytes.",
              "zh": "全部 {w} 个 rank 都得到了正确的和，且每个 rank 发送了 {want:g} 字节 = {formula}"
                    "（S = {S} 字节）。"},

    # --- exercises 3, 3b and 4: numbers by hand ------------------------------------------
    "q_ring_bytes": {"en": "A ring all-reduce of S = {S_mb:g} MB of gradients on N = {n} ranks: "
                           "how many MB does each rank send?",
                     "zh": "在 N = {n} 个 rank 上对 S = {S_mb:g} MB 的梯度做 ring all-reduce："
                           "每个 rank 发送多少 MB？"},
    "q_allreduce_time": {"en": "Predicted time (α-β model, ring) of an all-reduce of S = {S_mb:g} "
                               "MB on N = {n} ranks with α = {alpha_us:g} µs per step and "
                               "B = {gb_s:g} GB/s per direction, in ms?",
                         "zh": "按 α-β 模型（环形算法）预测：N = {n} 个 rank、每步 α = {alpha_us:g} "
                               "µs、单向带宽 B = {gb_s:g} GB/s，对 S = {S_mb:g} MB 做一次 "
                               "all-reduce 要多少 ms？"},
    "q_all_gather_bytes": {"en": "ZeRO-3 all-gathers S = {S_gb:g} GB of parameters (a ring "
                                 "all-gather) on N = {n} ranks: how many GB does each rank send?",
                           "zh": "ZeRO-3 在 N = {n} 个 rank 上 all-gather S = {S_gb:g} GB 的参数"
                                 "（ring all-gather）：每个 rank 发送多少 GB？"},
    "name_mb_per_rank": {"en": "MB per rank", "zh": "每个 rank 的 MB 数"},
    "name_gb_per_rank": {"en": "GB per rank", "zh": "每个 rank 的 GB 数"},
    "name_time": {"en": "time", "zh": "耗时"},
    "hint_ring_bytes": {"en": "Two phases, each sending N-1 chunks of S/N.",
                        "zh": "分两个阶段，每个阶段发送 N-1 个大小为 S/N 的块。"},
    "explain_ring_bytes": {"en": "2(N-1)/N·S = 2·{n1}/{n}·{S_mb:g} MB: under 2S whatever N is.",
                           "zh": "2(N-1)/N·S = 2·{n1}/{n}·{S_mb:g} MB：不论 N 多大都不超过 2S。"},
    "hint_allreduce_time": {"en": "2(N-1) steps each cost α; each rank sends 2(N-1)/N·S bytes at B.",
                            "zh": "2(N-1) 步，每步付一次 α；每个 rank 以带宽 B 发送 2(N-1)/N·S 字节。"},
    "explain_allreduce_time": {"en": "{steps}·α = {latency_ms:.3g} ms of latency + "
                                     "{bandwidth_ms:.4g} ms of bandwidth: bandwidth-bound.",
                               "zh": "{steps}·α = {latency_ms:.3g} ms 的延迟 + {bandwidth_ms:.4g} ms "
                                     "的带宽时间：瓶颈在带宽。"},
    "hint_all_gather_bytes": {"en": "An all-gather is the second half of a ring all-reduce.",
                              "zh": "all-gather 就是 ring all-reduce 的后半段。"},
    "explain_all_gather_bytes": {"en": "(N-1)/N·S: each rank forwards the N-1 shards it does not "
                                       "own, half of an all-reduce's traffic.",
                                 "zh": "(N-1)/N·S：每个 rank 转发 N-1 个不属于自己的分片，是 "
                                       "all-reduce 通信量的一半。"},

    # --- exercise 5: two levels ------------------------------------------------------------
    "node_only": {"en": ": that is the sum over its own node only; the step across the nodes "
                        "(on network_group) is missing",
                  "zh": "：这只是本节点内的和；缺了跨节点（在 network_group 上）的那一步"},
    "two_level_wrong": {"en": "{msg}. Every rank must end with the sum of all {n} ranks' x.",
                        "zh": "{msg}。每个 rank 最后都应得到全部 {n} 个 rank 的 x 之和。"},
    "two_level_flat": {"en": "right sums, but through dist.{op} over all {n} ranks: a flat "
                             "collective sends the whole buffer across the network. Use "
                             "node_group and network_group",
                       "zh": "和是对的，但用的是覆盖全部 {n} 个 rank 的 dist.{op}：扁平的集合通信"
                             "会把整个缓冲区都送过网络。请用 node_group 和 network_group"},
    "two_level_no_network": {"en": "right sums, but no collective ran on network_group: the "
                                   "checker reads torch.distributed's collectives with the "
                                   "groups given",
                             "zh": "和是对的，但 network_group 上没有运行任何集合通信：检查器读取的"
                                   "是 torch.distributed 的集合通信调用及其传入的通信组"},
    "two_level_carried": {"en": "right sums, but the network step carried {carried} of the "
                                "{numel} elements; reduce-scatter inside the node first, so each "
                                "GPU sends only its 1/{g} ({piece} elements) across",
                          "zh": "和是对的，但跨网络那一步传了 {numel} 个元素中的 {carried} 个；"
                                "应先在节点内做 reduce-scatter，这样每张 GPU 只把自己的 1/{g}"
                                "（{piece} 个元素）送过网络"},
    "two_level_right": {"en": "every rank holds the sum of all {n}; across the network each rank "
                              "all-reduced {carried} of {numel} elements (1/{g}), inside the node "
                              "the rest: {ops}.",
                        "zh": "每个 rank 都得到了全部 {n} 个 rank 之和；跨网络时每个 rank 只对 "
                              "{numel} 个元素中的 {carried} 个做了 all-reduce（1/{g}），其余在节点内"
                              "完成：{ops}。"},

    # --- widgets and the explorer -------------------------------------------------------------
    "w_collective": {"en": "collective", "zh": "集合通信"},
    "w_ranks": {"en": "ranks", "zh": "rank 数"},
    "w_link": {"en": "link", "zh": "链路"},
    "w_ring_title": {"en": "ring all-reduce on {n} ranks (measured)",
                     "zh": "{n} 个 rank 上的 ring all-reduce（实测）"},
    "w_same_steps": {"en": "tree and ring take the same number of steps: the ring is never slower",
                     "zh": "树和环的步数相同：环永远不会更慢"},
    "w_tree_below": {"en": "tree faster below {gb:,.0f} GB", "zh": "小于 {gb:,.0f} GB 时树更快"},
    "w_explorer_title": {"en": "all-reduce on {n} ranks over {link}",
                         "zh": "{n} 个 rank 经 {link} 的 all-reduce"},
    "w_crossover": {"en": "ring = tree", "zh": "环 = 树"},
    "w_measured": {"en": "this machine, measured", "zh": "本机实测"},
    "w_reach": {"en": "{names} (at most {reach} GPUs)", "zh": "{names}（最多 {reach} 张 GPU）"},
    "w_reach_sep": {"en": "; ", "zh": "；"},
    "w_not_offered": {"en": "not offered at {n} ranks: {groups}; a ring that large crosses the "
                            "network",
                      "zh": "{n} 个 rank 时不提供：{groups}；这么大的环必然要跨网络"},

    # --- the pictures the widgets show (figures.py, cells.py) ------------------------------
    "f_before": {"en": "before", "zh": "之前"},
    "f_after": {"en": "after", "zh": "之后"},
    "f_diagram_title": {"en": "<b>{op}</b>, {n} ranks", "zh": "<b>{op}</b>，{n} 个 rank"},
    "f_cap_all_reduce": {"en": "every rank ends with the element-wise sum of all buffers",
                         "zh": "每个 rank 最后都得到所有缓冲区逐元素相加之和"},
    "f_cap_all_gather": {"en": "every rank ends with every rank's shard",
                         "zh": "每个 rank 最后都得到所有 rank 的分片"},
    "f_cap_reduce_scatter": {"en": "rank r ends with chunk r, summed over all ranks",
                             "zh": "rank r 最后得到块 r 在所有 rank 上的和"},
    "f_cap_all_to_all": {"en": "rank r sends its chunk c to rank c: a transpose",
                         "zh": "rank r 把自己的块 c 发给 rank c：相当于一次转置"},
    "f_cap_broadcast": {"en": "rank 0's buffer is copied to every rank",
                        "zh": "rank 0 的缓冲区被复制到每个 rank"},
    "f_cap_send_recv": {"en": "rank 0 sends its buffer to rank 1; the others do nothing",
                        "zh": "rank 0 把缓冲区发给 rank 1；其他 rank 什么也不做"},
    "f_start": {"en": "start: every rank holds only its own data",
                "zh": "开始：每个 rank 只有自己的数据"},
    "f_step": {"en": "{name} step {k} of {n}", "zh": "{name} 第 {k} 步（共 {n} 步）"},
    "f_start_label": {"en": "start", "zh": "开始"},
    "f_no_transfers": {"en": "no transfers yet", "zh": "还没有传输"},
    "f_transfer": {"en": "rank {src} → rank {dst}: chunk {c}", "zh": "rank {src} → rank {dst}：块 {c}"},
    "f_all": {"en": "all", "zh": "全部"},
    "f_contributions": {"en": "contributions", "zh": "已累加份数"},
    "f_hover": {"en": "rank %{{y}}, chunk %{{x}}<br>contributions: %{{text}} (%{{z}} of {n})"
                      "<extra></extra>",
                "zh": "rank %{{y}}，块 %{{x}}<br>已累加：%{{text}}（{n} 份中的 %{{z}} 份）"
                      "<extra></extra>"},
    "f_chunk": {"en": "chunk {c}", "zh": "块 {c}"},
    "f_play": {"en": "▶ play", "zh": "▶ 播放"},
    "f_pause": {"en": "❚❚ pause", "zh": "❚❚ 暂停"},
    "f_slider": {"en": "step: ", "zh": "步骤："},
    "f_time": {"en": "time", "zh": "时间"},
}

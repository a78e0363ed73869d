"""The hints of notebook 06's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks in the session's language."""

HINTS = {
    "my_groups": (
        {"en": "§1's rank = (d<sub>i</sub>·p + p<sub>i</sub>)·t + t<sub>i</sub> in code: "
               "<code>rank = (d_i * pp + p_i) * tp + t_i</code>; recover <code>d_i, p_i, t_i</code> "
               "with <code>divmod</code>. A group varies one coordinate and keeps the other two.",
         "zh": "§1 的 rank = (d<sub>i</sub>·p + p<sub>i</sub>)·t + t<sub>i</sub> 写成代码就是 "
               "<code>rank = (d_i * pp + p_i) * tp + t_i</code>；用 <code>divmod</code> 反解出 "
               "<code>d_i, p_i, t_i</code>。一个组只改变一个坐标，另外两个保持不变。"},
        {"en": "TP: vary t_i, the ranks <code>(d_i * pp + p_i) * tp + i</code> for <code>i</code> in "
               "<code>range(tp)</code>; PP: vary p_i; DP: vary d_i. Each is a list of world ranks "
               "including <code>rank</code> itself.",
         "zh": "TP：改变 t_i，即 <code>i</code> 取遍 <code>range(tp)</code> 时的 "
               "<code>(d_i * pp + p_i) * tp + i</code>；PP：改变 p_i；DP：改变 d_i。每个组都是一个"
               "全局 rank 的列表，包含 <code>rank</code> 自己。"}),
    "my_grad_sync": (
        {"en": "Only the ranks that hold the same layers and the same TP slice have gradients of the "
               "same numbers: that is the DP group, not the world.",
         "zh": "只有持有相同的层、相同 TP 切片的 rank，梯度才属于同一批参数：那是 DP 组，"
               "而不是全体 rank。"},
        {"en": "All-reduce over <code>groups[\"dp\"]</code> and divide by that group's size, not by "
               "the world size.",
         "zh": "在 <code>groups[\"dp\"]</code> 上做 all-reduce，再除以这个组的大小，而不是 world size。"}),
    "my_global_grad_norm": (
        {"en": "||g||² is a sum of squares, so it splits: each rank adds the squares of what it holds "
               "(<code>g.pow(2).sum()</code>), the partial sums are added over the groups whose ranks "
               "hold <em>different</em> pieces, and the root comes once, at the end. Which groups are "
               "those: TP (slices), PP (layers), DP (copies)?",
         "zh": "||g||² 是平方和，所以可以拆开算：每个 rank 先把自己持有部分的平方加起来"
               "（<code>g.pow(2).sum()</code>），再在各 rank 持有<em>不同</em>部分的那些组上把部分和"
               "相加，最后只开一次根。是哪些组：TP（切片）、PP（层）、DP（副本）？"},
        {"en": "A tensor with <code>g.tp_split is None</code> is the same on every TP rank: count it "
               "only where <code>dist.get_rank(groups[\"tp\"]) == 0</code>. Then "
               "<code>dist.all_reduce</code> the one-element sum over <code>groups[\"tp\"]</code> and "
               "<code>groups[\"pp\"]</code>, not <code>groups[\"dp\"]</code>: the replicas hold the same "
               "averaged gradient.",
         "zh": "<code>g.tp_split is None</code> 的张量在每个 TP rank 上都一样：只在 "
               "<code>dist.get_rank(groups[\"tp\"]) == 0</code> 的 rank 上计入。然后对这个单元素的和"
               "在 <code>groups[\"tp\"]</code> 和 <code>groups[\"pp\"]</code> 上做 "
               "<code>dist.all_reduce</code>，不要在 <code>groups[\"dp\"]</code> 上做：各副本持有的是"
               "同一份平均后的梯度。"}),
}

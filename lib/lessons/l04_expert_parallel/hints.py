"""The hints of notebook 04's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), each in English and Chinese, shown by ``exercises.hints(name)``
behind clicks."""

HINTS = {
    "my_route": (
        {"en": "<code>logits.topk(top_k, dim=-1).indices</code> are each token's experts. Then walk "
               "the assignments in GShard's order and keep the first <code>capacity</code> of each "
               "expert.",
         "zh": "<code>logits.topk(top_k, dim=-1).indices</code> 就是每个 token 选中的专家。然后按 GShard "
               "的顺序遍历这些分配，每个专家只保留前 <code>capacity</code> 个。"},
        {"en": "The order is all first choices (token by token), then all second choices. A one-hot "
               "of the choices (n, k, E) with cumulative sums gives each assignment's place in its "
               "expert's queue; keep it when the place is below the capacity.",
         "zh": "顺序是先排所有第一选择（逐个 token），再排所有第二选择。把选择做成 one-hot (n, k, E) "
               "再做累加和，就得到每个分配在其专家队列中的位置；位置小于容量时保留。"}),
    "my_global_route": (
        {"en": "Capacity now counts the tokens of every rank. Each rank needs to know how many "
               "assignments the ranks before it sent to each expert: share your (k, E) counts.",
         "zh": "现在容量按所有 rank 的 token 计算。每个 rank 需要知道排在它前面的 rank 给每个专家发了"
               "多少个分配：把你的 (k, E) 计数共享出去。"},
        {"en": "<code>dist.all_gather</code> the counts. Ahead of your choice-c assignments are every "
               "rank's earlier choices and choice c of the ranks with a lower rank; add that offset "
               "to the local queue position.",
         "zh": "用 <code>dist.all_gather</code> 收集计数。排在你第 c 个选择的分配前面的，是所有 rank "
               "更早的选择，加上编号更小的 rank 的第 c 个选择；把这个偏移加到本地队列位置上。"}),
    "my_expert_choice_route": (
        {"en": "<code>logits.softmax(dim=-1)</code> are this rank's scores S, one row per token. An "
               "expert chooses among the tokens of <em>every</em> rank, so first put the whole "
               "batch's S on every rank: <code>dist.all_gather</code>, rank 0's rows first.",
         "zh": "<code>logits.softmax(dim=-1)</code> 是本 rank 的分数 S，每个 token 一行。专家要在"
               "<em>所有</em> rank 的 token 中挑选，所以先把整个 batch 的 S 放到每个 rank 上："
               "<code>dist.all_gather</code>，rank 0 的行在最前。"},
        {"en": "Concatenate the gathered rows into (W n, E): row r n + t is rank r's token t. Expert "
               "e takes the top <code>capacity</code> of its column: <code>S.t().topk(capacity, "
               "dim=-1)</code> gives (values, indices) = (gates, tokens), one row per expert. A topk "
               "over <code>dim=-1</code> of S itself would be each token choosing experts.",
         "zh": "把收集到的行拼成 (W n, E)：第 r n + t 行是 rank r 的 token t。专家 e 取它那一列中最大的 "
               "<code>capacity</code> 个：<code>S.t().topk(capacity, dim=-1)</code> 给出 (values, "
               "indices) = (gates, tokens)，每个专家一行。若直接对 S 本身在 <code>dim=-1</code> 上做 "
               "topk，那就变成每个 token 挑专家了。"}),
}

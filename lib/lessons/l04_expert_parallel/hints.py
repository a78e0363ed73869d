"""The hints of notebook 04's coding exercises: (hint 1: where to start, hint 2: the step
most learners get wrong), shown by ``exercises.hints(name)`` behind clicks."""

HINTS = {
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
}

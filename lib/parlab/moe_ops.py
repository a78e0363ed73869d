"""The MoE layer's tensor rules, as pure functions (``parlab.moe`` uses them; expert
parallelism reuses them rank by rank): each assignment's place in its expert's queue
(capacity over the global batch), expert choice over the whole batch, the padded
expert GEMM of the dropless variant, and the scatter that puts expert outputs back in
(token, choice) order. See ``parlab.moe`` for the papers and the priority rule."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def slot_positions(idx: torch.Tensor, n_experts: int, before: torch.Tensor) -> torch.Tensor:
    """(n, k) position of each assignment in its expert's queue. ``before[k, e]``: how
    many assignments to expert e come ahead of this rank's choice-k ones (all earlier
    choices everywhere, plus choice k of the ranks holding earlier tokens)."""
    onehot = F.one_hot(idx, n_experts)                   # (n, k, E)
    ahead = onehot.cumsum(0) - onehot                    # earlier tokens, same choice
    return (ahead + before.unsqueeze(0)).gather(2, idx.unsqueeze(-1)).squeeze(-1)


def positions_before(counts_all: torch.Tensor, rank: int) -> torch.Tensor:
    """``before`` for ``slot_positions`` from every rank's (k, E) counts (W, k, E):
    the whole batch's earlier choices, plus earlier ranks' same choice."""
    total = counts_all.sum(0)
    return (total.cumsum(0) - total) + counts_all[:rank].sum(0)


def expert_choice(probs_all: torch.Tensor, capacity: int) -> torch.Tensor:
    """(N, E) bool: expert e takes the ``capacity`` tokens of the whole batch with the
    highest scores in column e (Zhou et al. 2022, "Mixture-of-Experts with Expert Choice
    Routing", §3.2, Eq. 1-2: I = TopK(S^T, k), k = n c / E; gates G = the chosen scores S).
    Nothing is dropped (every expert is exactly full), but a token may be chosen by 0, 1
    or several experts. The choice looks at every token of the batch at once, later
    positions included: a token's experts depend on tokens after it, so it cannot run
    in autoregressive decoding, where the later tokens do not exist yet (the paper's
    "Limitations" section names auto-regressive text generation)."""
    top = probs_all.topk(capacity, dim=0).indices                 # (capacity, E)
    return torch.zeros_like(probs_all, dtype=torch.bool).scatter_(0, top, True)


def padded_mlp(experts: list, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every expert (``model.MLP``-shaped: fc1, fc2, ``swiglu``) on its own rows, as ONE
    batched GEMM: rows padded to the largest group (E, max n_e, d), weights stacked
    (E, d, d_ff). PyTorch has no grouped GEMM on the CPU; this is the padded
    ("capacity = the busiest expert") form that MegaBlocks (Gale et al. 2022, §3, §5)
    replaces by block-sparse GEMMs: it computes E * max n_e rows where a loop over
    experts computes sum n_e (``cost.grouped_gemm_rows``)."""
    m = max(x.size(0) for x in xs)
    X = torch.stack([F.pad(x, (0, 0, 0, m - x.size(0))) for x in xs])           # (E, m, d)

    def linear(name, h):
        w = torch.stack([getattr(e, name).weight for e in experts]).transpose(1, 2)
        out = torch.bmm(h, w)
        if getattr(experts[0], name).bias is not None:
            out = out + torch.stack([getattr(e, name).bias for e in experts]).unsqueeze(1)
        return out
    h = linear("fc1", X)
    if experts[0].swiglu:
        gate, up = h.chunk(2, dim=-1)
        h = F.silu(gate) * up
    else:
        h = experts[0].act(h)
    y = linear("fc2", h)
    return [y[j, :x.size(0)] for j, x in enumerate(xs)]


def scatter_rows(values: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """(n, d) zeros with ``values[i]`` at row ``rows[i]`` (differentiable in values)."""
    out = values.new_zeros(n, values.size(-1))
    return out.index_copy(0, rows, values)

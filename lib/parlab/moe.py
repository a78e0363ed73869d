"""Mixture of Experts: the single-device MoE layer, over any router and expert modules.

A MoE layer replaces a block's MLP by ``n_experts`` MLPs ("experts") and a router that
sends each token to ``top_k`` of them (Shazeer et al. 2017; GShard, Lepikhin et al.
2020, §2.2; Switch Transformers, Fedus et al. 2021, §2.1):

    probs  = softmax(x W_router)                  fp32 (Switch §2.4: "selective precision")
    chosen = top_k(probs + bias)                  bias: 0, or DeepSeek-V3's balancer
    gate   = probs[chosen]                        Switch: not renormalised (top-1 prob)
           = probs[chosen] / sum(probs[chosen])   Mixtral (Jiang et al. 2024, §2.1):
                                                  softmax over the top-k logits
    y      = sum_k gate_k * expert_{chosen_k}(x)  0 for an assignment over capacity

Capacity (Switch §2.2, "Distributed Switch Implementation", eq. 3; GShard §2.2): an
expert takes at most ``cost.expert_capacity(tokens, n_experts, capacity_factor, top_k)``
assignments per step, counted over the WHOLE global batch; the rest are dropped and
their token passes on through the residual connection alone. Priority: every token's
first choice before any second choice (GShard, Algorithm 1), and within one choice,
token order -- row-major over (batch row, position), as Switch fills an expert's buffer
by position. Expert parallelism must drop exactly these assignments; it learns the counts
of the other ranks (``counts_hook``) and applies the same rule (``slot_positions``).

Auxiliary losses:
* Switch load balancing (Switch §2.2, eq. 4): aux_loss_coef * E * sum_i f_i P_i, f_i the
  fraction of assignments routed to expert i (before drops; all k choices, / (N k)), P_i
  the mean router probability of expert i;
* router z-loss (ST-MoE, Zoph et al. 2022, §3.1, eq. 5): z_loss_coef * mean_x
  (logsumexp of x's router logits)^2.
Their gradients enter the graph at the layer itself (``_AuxLoss``, Megatron-LM's
MoEAuxLossAutoScaler), so the layer needs nobody downstream to add them to the loss -- a
pipeline stage that holds it may not be the one computing the loss. ``aux_scale`` is
the weight of this forward in the step's loss (1/m for one of m micro-batches).
``balancer="bias"``: the auxiliary-loss-free balancer of DeepSeek-V3 (DeepSeek-AI 2024,
§2.1.2): a per-expert bias added to the scores for the top-k choice only (not to the
gates), moved by ``bias_update_rate`` (their gamma) after each step: down for an expert
above the mean load, up for one below. (DeepSeek-V3 scores with sigmoids; we keep the
softmax, so the two balancers differ only in how they balance.)
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .cost.expert_parallel import expert_capacity
from .validate import check_bool, check_choice, check_float, check_int


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


class _AuxLoss(torch.autograd.Function):
    """Identity on the layer's output; in backward, the auxiliary loss gets gradient
    ``scale`` as if it had been added to the loss (weighted by ``scale``)."""

    @staticmethod
    def forward(ctx, out, aux, scale):
        ctx.scale = scale
        return out.view_as(out)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad.new_full((), ctx.scale), None


class MoE(nn.Module):
    """A MoE layer over ``router`` (a bias-free Linear, d -> n_experts) and ``experts``: a
    list of modules (expert e is ``experts[e]``) or a dict {e: module} holding some of
    them (expert parallelism keeps a rank's share). Names: router, experts.{e}.*.
    ``layer``: the block's index, for reports.

    ``counts_hook``: None on one device; under data or expert parallelism a function
    taking this rank's (k, E) assignment counts and returning (every rank's counts
    (W, k, E), this rank's index), so capacity and f_i are those of the global batch.
    After each forward: ``aux_loss`` (this rank's share: its mean over ranks is the
    global loss) and ``stats`` (python numbers, for the runs' reports)."""

    def __init__(self, router: nn.Linear, experts, top_k: int = 1,
                 capacity_factor: float | None = None, aux_loss_coef: float = 0.01,
                 z_loss_coef: float = 0.001, balancer: str = "aux_loss",
                 bias_update_rate: float = 0.001, renormalize: bool = False, layer: int = 0):
        super().__init__()
        if not isinstance(router, nn.Linear) or router.bias is not None:
            raise ValueError("router must be a bias-free nn.Linear(d_model, n_experts)")
        self.n_experts = router.out_features
        experts = dict(experts) if isinstance(experts, dict) else dict(enumerate(experts))
        check_int("top_k", top_k, 1, self.n_experts)
        if capacity_factor is not None:
            check_float("capacity_factor", capacity_factor)
        check_float("aux_loss_coef", aux_loss_coef, strict=False)
        check_float("z_loss_coef", z_loss_coef, strict=False)
        check_choice("balancer", balancer, ("aux_loss", "bias"))
        check_float("bias_update_rate", bias_update_rate, strict=False)
        check_bool("renormalize", renormalize)
        if not experts or any(not 0 <= e < self.n_experts for e in experts):
            raise ValueError(f"experts must be numbered 0..{self.n_experts - 1} (the router's "
                             f"outputs), got {sorted(experts)}")
        self.top_k, self.capacity_factor, self.renormalize = top_k, capacity_factor, renormalize
        self.aux_loss_coef, self.z_loss_coef = aux_loss_coef, z_loss_coef
        self.balancer, self.bias_update_rate, self.layer = balancer, bias_update_rate, layer
        self.router = router
        # A dict keyed by the global expert number: a rank holding experts 4..7 names
        # them experts.4.. exactly as the reference does (init and checks by name).
        self.experts = nn.ModuleDict({str(e): m for e, m in sorted(experts.items())})
        # persistent only when it is trained state (DeepSeek-V3's balancer)
        self.register_buffer("expert_bias", torch.zeros(self.n_experts),
                             persistent=balancer == "bias")
        self.counts_hook, self.aux_scale = None, 1.0
        self.aux_loss, self.stats, self._load = None, {}, None

    # --- routing --------------------------------------------------------------------
    def route(self, x2: torch.Tensor):
        """(probs, logits, chosen experts (n, k), gates (n, k)), all fp32."""
        logits = F.linear(x2.float(), self.router.weight.float())
        probs = logits.softmax(-1)
        scores = probs + self.expert_bias if self.balancer == "bias" else probs
        idx = scores.topk(self.top_k, dim=-1).indices
        gates = probs.gather(1, idx)
        if self.renormalize:
            gates = gates / gates.sum(-1, keepdim=True)
        return probs, logits, idx, gates

    def plan(self, probs, logits, idx):
        """Which assignments fit (n, k) bool, and the auxiliary loss; fills ``stats``."""
        n, E, k = idx.size(0), self.n_experts, self.top_k
        counts = F.one_hot(idx, E).sum(0)                         # (k, E) this rank
        if self.counts_hook is None:
            counts_all, rank = counts.unsqueeze(0), 0
        else:
            counts_all, rank = self.counts_hook(counts)
        W, total = counts_all.size(0), counts_all.sum(0)
        routed = total.sum(0)                                     # (E,) global load
        if self.capacity_factor is None:
            keep, cap = torch.ones_like(idx, dtype=torch.bool), None
        else:
            cap = expert_capacity(n * W, E, self.capacity_factor, k)
            keep = slot_positions(idx, E, positions_before(counts_all, rank)) < cap
        # Switch eq. 4 with f global (integers, identical on every rank) and P over this
        # rank's tokens: the mean over ranks of each rank's value is the global loss.
        aux = logits.new_zeros(())
        if self.aux_loss_coef:
            f = routed.float() / (n * W * k)
            aux = aux + self.aux_loss_coef * E * (f * probs.mean(0)).sum()
        if self.z_loss_coef:
            aux = aux + self.z_loss_coef * logits.logsumexp(-1).square().mean()
        self.aux_loss = aux
        self._load = routed if self._load is None else self._load + routed  # for the balancer
        dropped = (~keep).nonzero().tolist()
        self.stats = {"routed": routed.tolist(), "capacity": cap,
                      "kept": torch.zeros(E, dtype=torch.long).index_add_(
                          0, idx[keep], torch.ones_like(idx[keep])).tolist(),
                      "dropped": [(rank * n + t, j) for t, j in dropped]}
        return keep

    # --- experts ----------------------------------------------------------------------
    def run_experts(self, x2: torch.Tensor, idx: torch.Tensor, keep: torch.Tensor):
        """(n k, d): each kept assignment's expert output, in (token, choice) order;
        zeros for dropped ones. Expert parallelism overrides this (dispatch/combine)."""
        flat, slots = idx.reshape(-1), keep.reshape(-1).nonzero().squeeze(-1)
        out, rows = [], []
        for e, expert in self.experts.items():
            mine = slots[flat[slots] == int(e)]
            out.append(expert(x2[mine // self.top_k]))
            rows.append(mine)
        return scatter_rows(torch.cat(out), torch.cat(rows), idx.numel())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        probs, logits, idx, gates = self.route(x2)
        keep = self.plan(probs, logits, idx)
        y = self.run_experts(x2, idx, keep).view(*idx.shape, -1)
        out = (y * gates.unsqueeze(-1).to(y.dtype)).sum(1).view(shape)
        if self.aux_loss.requires_grad:
            out = _AuxLoss.apply(out, self.aux_loss, self.aux_scale)
        return out

    @torch.no_grad()
    def update_bias_(self) -> None:
        """DeepSeek-V3 §2.1.2: after the step, bias -= gamma for an overloaded expert,
        += gamma for an underloaded one (load: the assignments routed since the last
        update -- every micro-batch of the step)."""
        load, self._load = self._load, None
        if self.balancer != "bias" or load is None:
            return
        load = load.float()
        self.expert_bias.add_(self.bias_update_rate * torch.sign(load.mean() - load))


def scatter_rows(values: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """(n, d) zeros with ``values[i]`` at row ``rows[i]`` (differentiable in values)."""
    out = values.new_zeros(n, values.size(-1))
    return out.index_copy(0, rows, values)


def moe_layers(model: nn.Module) -> list[MoE]:
    return [m for m in model.modules() if isinstance(m, MoE)]

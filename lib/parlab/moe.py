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

Variants (``GPTConfig`` fields; ``parlab.expert_parallel`` runs each unchanged):
* ``shared``: shared expert isolation (DeepSeekMoE, Dai et al. 2024, §3.2; DeepSeek-V3
  §2.1.2, eq. 12): modules every token goes through, y += sum_j shared_j(x), beside the
  routed ones; with fine-grained segmentation (DeepSeekMoE §3.1: each expert cut into m
  of d_ff/m, top-mK of mN; ``expert_parallel.variants.deepseek_moe``) it is plain config.
* ``routing="expert_choice"``: see ``expert_choice``.
* ``expert_gemm="padded"``: see ``padded_mlp`` (dropless MoE: ``capacity_factor=None``).

Another library's MoE block (Mixtral's: a router ``gate`` and a list ``experts``) is
brought in by saying what it computes, ``MoE.from_block``: this layer is then built around
the block's own router and expert modules (the same parameters), and expert parallelism
runs it as it runs ours (``expert_parallel.apply_expert_parallel``).

The tensor rules (``slot_positions``, ``positions_before``, ``expert_choice``,
``padded_mlp``, ``scatter_rows``) live in ``moe_ops`` and are importable from here.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .cost.expert_parallel import expert_capacity
# looked up here at call time, so ``moe.padded_mlp`` can be swapped (a planted bug)
from .moe_ops import expert_choice, padded_mlp, positions_before, scatter_rows, slot_positions
from .validate import check_bool, check_choice, check_float, check_int

OUTPUTS = ("hidden", "hidden_and_router_logits")

__all__ = ["MoE", "moe_layers", "OUTPUTS", "expert_choice", "padded_mlp", "positions_before",
           "scatter_rows", "slot_positions"]


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
    them (expert parallelism keeps a rank's share). Names: router, experts.{e}.*,
    shared.{j}.* (``shared``: modules every token goes through). ``routing``: "top_k"
    (token choice) or "expert_choice"; ``expert_gemm``: "loop" or "padded" (one batched
    GEMM, ``padded_mlp``). ``layer``: the block's index, for reports.

    ``counts_hook``: None on one device; under data or expert parallelism a function
    taking this rank's (k, E) assignment counts and returning (every rank's counts
    (W, k, E), this rank's index), so capacity and f_i are those of the global batch.
    After each forward: ``aux_loss`` (this rank's share: its mean over ranks is the
    global loss) and ``stats`` (python numbers, for the runs' reports). ``output``:
    "hidden" returns the (..., d) output; "hidden_and_router_logits" returns (output,
    fp32 router logits (tokens, E)), as Hugging Face's Mixtral block does."""

    def __init__(self, router: nn.Linear, experts, top_k: int = 1,
                 capacity_factor: float | None = None, aux_loss_coef: float = 0.01,
                 z_loss_coef: float = 0.001, balancer: str = "aux_loss",
                 bias_update_rate: float = 0.001, renormalize: bool = False, layer: int = 0,
                 shared=(), routing: str = "top_k", expert_gemm: str = "loop",
                 output: str = "hidden"):
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
        check_choice("routing", routing, ("top_k", "expert_choice"))
        check_choice("expert_gemm", expert_gemm, ("loop", "padded"))
        self.output = check_choice("output", output, OUTPUTS)
        if expert_gemm == "padded" and not all(hasattr(m, "fc1") and hasattr(m, "swiglu")
                                               for m in experts.values()):
            raise ValueError("expert_gemm='padded' stacks MLP experts (fc1, fc2, swiglu)")
        if routing == "expert_choice" and capacity_factor is None:
            raise ValueError("routing='expert_choice' needs capacity_factor (n c / E tokens "
                             "per expert)")
        if not experts or any(not 0 <= e < self.n_experts for e in experts):
            raise ValueError(f"experts must be numbered 0..{self.n_experts - 1} (the router's "
                             f"outputs), got {sorted(experts)}")
        self.top_k = top_k
        self.capacity_factor = capacity_factor
        self.renormalize = renormalize
        self.aux_loss_coef = aux_loss_coef
        self.z_loss_coef = z_loss_coef
        self.balancer = balancer
        self.bias_update_rate = bias_update_rate
        self.layer = layer
        self.router = router
        self.routing = routing
        self.expert_gemm = expert_gemm
        self.shared = nn.ModuleList(shared)  # replicated like attention: not "experts"
        # A dict keyed by the global expert number: a rank holding experts 4..7 names
        # them experts.4.. exactly as the reference does (init and checks by name).
        self.experts = nn.ModuleDict({str(e): m for e, m in sorted(experts.items())})
        # persistent only when it is trained state (DeepSeek-V3's balancer)
        self.register_buffer("expert_bias", torch.zeros(self.n_experts),
                             persistent=balancer == "bias")
        self.counts_hook = None
        self.aux_scale = 1.0
        self.aux_loss = None
        self.stats = {}
        self._load = None

    @classmethod
    def from_block(cls, block: nn.Module, router: str = "gate", experts: str = "experts",
                   top_k: int = 2, renormalize: bool = True, output: str = "hidden",
                   example: torch.Tensor | None = None, **options) -> "MoE":
        """This layer around another library's MoE block, described rather than guessed:
        ``block.<router>`` is a bias-free ``nn.Linear(d, E)`` giving the router logits,
        ``block.<experts>`` a list of E modules, and the block computes the top
        ``top_k`` of softmax(logits), the gates renormalized over them if
        ``renormalize`` (Mixtral, Jiang et al. 2024, §2.1) or not (Switch), y = sum_k
        gate_k expert_k(x). Dropless and without auxiliary losses unless ``options``
        (this class's arguments: capacity_factor, aux_loss_coef, ...) say otherwise.
        ``output``: what the block returns (``OUTPUTS``; Mixtral's: the hidden states and
        the router logits). The layer holds the block's own router and experts (the same
        parameters, renamed router.* / experts.{e}.*); the block's forward is never
        called, so anything else it does is lost -- hence a block with parameters the
        description does not cover is refused, and ``example`` (an input) checks the
        description against the block's own forward. ValueError if it does not fit."""
        what = type(block).__name__
        gate, listed = getattr(block, router, None), getattr(block, experts, None)
        if not (isinstance(gate, nn.Linear) and gate.bias is None):
            raise ValueError(f"{what} is not a MoE block as described: its {router!r} is "
                             f"{type(gate).__name__}, not a bias-free nn.Linear(d, n_experts)")
        if not (isinstance(listed, (nn.ModuleList, list, tuple)) and len(listed) ==
                gate.out_features and all(isinstance(e, nn.Module) for e in listed)):
            raise ValueError(f"{what} is not a MoE block as described: its {experts!r} is "
                             f"not a list of {gate.out_features} modules (one per router "
                             "output)")
        covered = {id(p) for m in (gate, *listed) for p in m.parameters()}
        other = [n for n, p in block.named_parameters() if id(p) not in covered]
        if other:
            raise ValueError(f"{what} has parameters the description leaves out, which "
                             f"the layer would drop: {other}")
        layer = cls(gate, list(listed), top_k=top_k, renormalize=renormalize, output=output,
                    **{"capacity_factor": None, "aux_loss_coef": 0.0, "z_loss_coef": 0.0,
                       **options})
        if example is not None:
            _check_same(block, layer, example, what)
        return layer

    # --- routing --------------------------------------------------------------------
    def route(self, x2: torch.Tensor):
        """(probs, logits, chosen experts (n, k), gates (n, k)), all fp32."""
        logits = F.linear(x2.float(), self.router.weight.float())
        probs = logits.softmax(-1)
        if self.routing == "expert_choice":  # every (token, expert) pair is a candidate
            idx = torch.arange(self.n_experts).expand(x2.size(0), -1)
            return probs, logits, idx, probs
        scores = probs + self.expert_bias if self.balancer == "bias" else probs
        idx = scores.topk(self.top_k, dim=-1).indices
        gates = probs.gather(1, idx)
        if self.renormalize:
            gates = gates / gates.sum(-1, keepdim=True)
        return probs, logits, idx, gates

    def plan(self, probs, logits, idx):
        """Which assignments fit (n, k) bool, and the auxiliary loss; fills ``stats``."""
        if self.routing == "expert_choice":
            return self.plan_expert_choice(probs, logits)
        n = idx.size(0)
        E = self.n_experts
        k = self.top_k
        counts = F.one_hot(idx, E).sum(0)                         # (k, E) this rank
        if self.counts_hook is None:
            counts_all = counts.unsqueeze(0)
            rank = 0
        else:
            counts_all, rank = self.counts_hook(counts)
        W = counts_all.size(0)
        total = counts_all.sum(0)
        routed = total.sum(0)                                     # (E,) global load
        if self.capacity_factor is None:
            keep = torch.ones_like(idx, dtype=torch.bool)
            cap = None
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

    def plan_expert_choice(self, probs, logits):
        """Zhou et al. 2022, §3.2 over the whole batch (``expert_choice``); no balancing
        loss (every expert is exactly full), the z-loss if set. Stats: ``experts_per_token``
        [tokens with 0, 1, 2, ... experts] and ``unrouted`` (global ids of the tokens
        with none: they pass on through the residual alone)."""
        n = probs.size(0)
        E = self.n_experts
        if self.counts_hook is None:
            probs_all = probs.detach()
            rank = 0
        else:  # every rank's scores: (W, n, E) -> the global batch's (W n, E)
            probs_all, rank = self.counts_hook(probs.detach().contiguous())
            probs_all = probs_all.reshape(-1, E)
        cap = expert_capacity(probs_all.size(0), E, self.capacity_factor)
        chosen = expert_choice(probs_all, cap)
        keep = chosen[rank * n:(rank + 1) * n]
        per_token = chosen.sum(1)
        aux = logits.new_zeros(())
        if self.z_loss_coef:
            aux = aux + self.z_loss_coef * logits.logsumexp(-1).square().mean()
        self.aux_loss = aux
        self.stats = {"routed": [cap] * E, "capacity": cap, "kept": [cap] * E, "dropped": [],
                      "experts_per_token": torch.bincount(per_token, minlength=3).tolist(),
                      "unrouted": [rank * n + t for t in
                                   (keep.sum(1) == 0).nonzero().squeeze(-1).tolist()]}
        return keep

    # --- experts ----------------------------------------------------------------------
    def expert_outputs(self, experts: list, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each expert on its rows: a loop over the experts (variable-size groups), or
        one padded batched GEMM; ``stats["rows_computed"]`` counts the rows computed."""
        if self.expert_gemm == "padded" and xs:
            self.stats["rows_computed"] = len(xs) * max(x.size(0) for x in xs)
            return padded_mlp(experts, xs)
        self.stats["rows_computed"] = sum(x.size(0) for x in xs)
        return [e(x) for e, x in zip(experts, xs)]

    def run_experts(self, x2: torch.Tensor, idx: torch.Tensor, keep: torch.Tensor):
        """(n k, d): each kept assignment's expert output, in (token, choice) order;
        zeros for dropped ones. Expert parallelism overrides this (dispatch/combine)."""
        flat = idx.reshape(-1)
        slots = keep.reshape(-1).nonzero().squeeze(-1)
        rows = [slots[flat[slots] == int(e)] for e in self.experts]
        out = self.expert_outputs(list(self.experts.values()),
                                  [x2[r // idx.size(1)] for r in rows])
        return scatter_rows(torch.cat(out), torch.cat(rows), idx.numel())

    def shared_output(self, x2: torch.Tensor):
        """sum_j shared_j(x) (DeepSeekMoE §3.2), on this rank's own tokens: nothing to
        send, as every rank holds every shared expert."""
        return sum(s(x2) for s in self.shared)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        probs, logits, idx, gates = self.route(x2)
        keep = self.plan(probs, logits, idx)
        y = self.run_experts(x2, idx, keep).view(*idx.shape, -1)
        out = (y * gates.unsqueeze(-1).to(y.dtype)).sum(1)
        if len(self.shared):
            out = out + self.shared_output(x2)
        out = out.view(shape)
        if self.aux_loss.requires_grad:
            out = _AuxLoss.apply(out, self.aux_loss, self.aux_scale)
        return out if self.output == "hidden" else (out, logits)

    @torch.no_grad()
    def update_bias_(self) -> None:
        """DeepSeek-V3 §2.1.2: after the step, bias -= gamma for an overloaded expert,
        += gamma for an underloaded one (load: the assignments routed since the last
        update -- every micro-batch of the step)."""
        load = self._load
        self._load = None
        if self.balancer != "bias" or load is None:
            return
        load = load.float()
        self.expert_bias.add_(self.bias_update_rate * torch.sign(load.mean() - load))


@torch.no_grad()
def _check_same(block, layer, x, what: str) -> None:
    """ValueError unless ``layer`` computes what ``block`` does on ``x`` (fp32 sums in
    another order: 1e-5 of the output's scale)."""
    want, got = block(x), layer(x)
    if isinstance(want, tuple) != isinstance(got, tuple):
        raise ValueError(f"{what} returns a {type(want).__name__}, but the description says "
                         f"output={layer.output!r} (one of {OUTPUTS})")
    want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
    if got.shape != want.shape or (got - want).abs().max() > 1e-5 * (1 + want.abs().max()):
        raise ValueError(f"{what}'s forward does not compute the MoE described (router, "
                         "top_k, renormalize): on the example its output differs")


def moe_layers(model: nn.Module) -> list[MoE]:
    return [m for m in model.modules() if isinstance(m, MoE)]

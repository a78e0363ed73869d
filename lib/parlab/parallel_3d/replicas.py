"""The data-parallel axis of 3D parallelism: what happens after the pipeline flush.

Every rank holds one TP slice of one pipeline stage; its DP group is the ranks holding
the *same* slice in the other replicas (same pp and tp coordinates). After the
pipeline has run all m micro-batches (the flush), their gradients are averaged over
that group -- per parameter shard, never across different shards (Narayanan et al.
2021, SC21, §2.1 and §3.3: data parallelism on top of the model-parallel groups).
Each rank's gradients are flattened into one buffer and sent in one collective
(Megatron's contiguous gradient buffer), so the cost is one latency, not one per
tensor.

  ReplicaAllReduce  plain DP: one all-reduce of the flat gradients, then every rank
                    runs AdamW on its whole shard.
  ReplicaZero1      ZeRO stage 1 (Rajbhandari et al. 2020, §5.1, P_os): one
                    reduce-scatter, so each rank gets the averaged gradient of its
                    1/dp of the flat buffer only; it keeps AdamW's states for that part
                    alone, updates it, and one all-gather hands the updated parameters
                    to the other replicas. Same bytes as the all-reduce (an all-reduce
                    *is* reduce-scatter + all-gather), dp times less optimizer memory.

(zero.ZeroStage1 builds the whole reference GPT itself, so it cannot wrap a TP slice
of a stage; this is its arithmetic on any list of parameters.)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm

BETAS = (0.9, 0.95)  # reference_train's AdamW


def _flat_grads(params, padded: int) -> torch.Tensor:
    flat = torch.zeros(padded)
    torch.cat([p.grad.reshape(-1) if p.grad is not None else torch.zeros(p.numel())
               for p in params], out=flat[:sum(p.numel() for p in params)])
    return flat


def _unflatten_into(flat: torch.Tensor, tensors) -> None:
    offset = 0
    for t in tensors:
        t.copy_(flat[offset:offset + t.numel()].view_as(t))
        offset += t.numel()


class ReplicaAllReduce:
    """Plain data parallelism over ``group`` for the parameters ``params``."""

    def __init__(self, params, group, lr: float, weight_decay: float):
        self.params, self.group = list(params), group
        self.dp = dist.get_world_size(group)
        self.optimizer = torch.optim.AdamW(self.params, lr=lr, betas=BETAS,
                                           weight_decay=weight_decay)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def sync(self) -> None:
        """Average the gradients over the replicas (the mean loss over the global batch
        is the mean of the replicas' means: equal slices)."""
        if self.dp == 1:
            return
        for p in self.params:  # a parameter that got no gradient here still gets the mean
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        comm.all_reduce_grads(self.params, self.group, 1.0 / self.dp, "dp grads", axis="dp")

    def step(self) -> None:
        self.optimizer.step()

    def gather_grads(self) -> None:
        """Full averaged gradients in ``p.grad`` (they already are)."""


class ReplicaZero1(ReplicaAllReduce):
    """ZeRO-1 over ``group``: this rank updates slice [lo, hi) of the flat parameters."""

    def __init__(self, params, group, lr: float, weight_decay: float):
        self.params, self.group = list(params), group
        self.dp, rank = dist.get_world_size(group), dist.get_rank(group)
        self.numel = sum(p.numel() for p in self.params)
        self.padded = -(-self.numel // self.dp) * self.dp  # equal shards
        self.lo, self.hi = rank * self.padded // self.dp, (rank + 1) * self.padded // self.dp
        with torch.no_grad():
            flat = torch.zeros(self.padded)
            torch.cat([p.reshape(-1) for p in self.params], out=flat[:self.numel])
        self.master = flat[self.lo:self.hi].clone()  # the only parameters AdamW sees
        self.optimizer = torch.optim.AdamW([self.master], lr=lr, betas=BETAS,
                                           weight_decay=weight_decay)

    def sync(self) -> None:
        flat = _flat_grads(self.params, self.padded)
        mine = torch.empty(self.hi - self.lo)
        comm.reduce_scatter_async(mine, flat, group=self.group, label="dp grads", axis="dp")()
        self.master.grad = mine.div_(self.dp)

    @torch.no_grad()
    def step(self) -> None:
        self.optimizer.step()
        flat = torch.empty(self.padded)
        comm.all_gather_async(flat, self.master, group=self.group, label="dp params",
                              axis="dp")()
        _unflatten_into(flat, self.params)

    def gather_grads(self) -> None:
        """Put the full averaged gradients of the last step back in ``p.grad``, for the
        result (bookkeeping: ZeRO-1 itself never needs them whole)."""
        flat = torch.empty(self.padded)
        comm.all_gather_async(flat, self.master.grad.contiguous(), group=self.group)()
        for p in self.params:
            p.grad = torch.empty_like(p)
        _unflatten_into(flat, [p.grad for p in self.params])

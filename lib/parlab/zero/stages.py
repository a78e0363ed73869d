"""The ZeRO stages as parts (Rajbhandari et al., SC 2020, §5): one switch from a stage to
the part that implements it, used by the ZeRO run and by every composed run.

  0  plain data parallelism: ``BucketedDP`` (DDP's buckets), the gradients views of its
     buckets, and a torch AdamW over whole parameters
  1  ``ShardedOptimizer(stage=1)``: optimizer states partitioned (P_os)
  2  ``ShardedOptimizer(stage=2)``: + gradients partitioned (P_os+g)
  3  ``FullyShard``: + parameters partitioned (P_os+g+p); ``HybridShard`` with
     ``replicate`` > 1 (HSDP)

AdamW runs in one of torch's three implementations (``KERNELS``): "for-loop" (one
tensor at a time), "foreach" (lists of tensors per op) or "fused" (one kernel for the
list); ``kernel=None`` leaves each part its default (torch's: the for-loop on CPU; a
``ShardedOptimizer`` asks for the fused one). Timing ours against torch's, give both the
same (bench/zero.py does).

Whatever the stage, the result is the same three things: the module to call, the part
that synchronises its gradients (the family's interface: finished inside backward,
``no_sync()``, ``finish_grad_sync()``, ``held_gradients()``, ``full_tensors()``) and the
optimizer that steps what this rank holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..cost import ZERO_STAGES
from ..data_parallel.ddp import DDP_BUCKET_BYTES, BucketedDP
from ..model import ADAMW_BETAS
from ..validate import check_choice, check_int
from .fully_shard import FullyShard
from .hybrid import HybridShard, hsdp_groups
from .sharded import ShardedOptimizer


KERNELS = ("fused", "foreach", "for-loop")  # torch.optim's names for its implementations


def kernel_options(kernel: str | None) -> dict:
    """AdamW's keyword arguments that pick ``kernel`` (None: none, its default)."""
    if kernel is None:
        return {}
    check_choice("kernel", kernel, KERNELS)
    return {"fused": kernel == "fused", "foreach": kernel == "foreach"}


def kernel_of(optimizer: torch.optim.Optimizer) -> str:
    """The implementation ``optimizer``'s AdamW runs: what it was asked for, else torch's
    default for its parameters. Sees through ours (``inner``) and ZeroRedundancyOptimizer
    (``optim``)."""
    inner = getattr(optimizer, "inner", None) or getattr(optimizer, "optim", None) or optimizer
    group = inner.param_groups[0]
    if group.get("fused"):
        return "fused"
    if group.get("foreach") is None and not group.get("differentiable"):
        from torch.optim.optimizer import _default_to_fused_or_foreach  # what step() calls
        return "foreach" if _default_to_fused_or_foreach(group["params"], False, False)[1] \
            else "for-loop"
    return "foreach" if group.get("foreach") else "for-loop"


@dataclass
class Zero:
    """One ZeRO stage applied: ``model`` to call (forward and backward), ``sync`` the part
    that reduces its gradients, ``optimizer`` stepping this rank's share."""
    model: nn.Module
    sync: object
    optimizer: torch.optim.Optimizer


def apply_zero(module: nn.Module, stage: int, group=None, *, lr: float = 1e-3,
               weight_decay: float = 0.0, params=None, divide_by: int | None = None,
               bucket_bytes: int = DDP_BUCKET_BYTES, probe=None, replicate: int = 1,
               kernel: str | None = None, **fsdp_options) -> Zero:
    """ZeRO ``stage`` over ``group`` for ``module``, with AdamW(lr, betas=ADAMW_BETAS,
    weight_decay) in ``kernel`` (``KERNELS``; None: each part's default). ``params``: only these of its parameters (stages 0-2: the others are
    someone else's, as experts are their expert-data-parallel group's); ``divide_by``:
    the number of replicas the gradient mean is over (default: the group's size).
    ``probe``: a ``MemoryProbe`` (stages 2-3). Stage 3 takes FullyShard's options
    (``reshard_after_forward``, ``prefetch``, ``compute_dtype``, ``units``) and
    ``replicate`` > 1 for HSDP (that many replicas of a ZeRO-3 group)."""
    check_choice("stage", stage, ZERO_STAGES)
    check_int("replicate", replicate)
    if stage != 3 and (fsdp_options or replicate != 1):
        raise ValueError(f"{', '.join([*fsdp_options, *(['replicate'] if replicate != 1 else [])])}"
                         f" are ZeRO-3's options: stage={stage} must be 3")
    opt = dict(lr=lr, betas=ADAMW_BETAS, weight_decay=weight_decay, **kernel_options(kernel))
    if stage == 0:
        part = BucketedDP(module, group, bucket_bytes, gradient_as_bucket_view=True,
                          params=params, divide_by=divide_by)
        return Zero(part, part, torch.optim.AdamW([p for _, p in part.named], **opt))
    if stage in (1, 2):
        mine = {id(p) for p in params} if params is not None else None
        named = [(n, p) for n, p in module.named_parameters(remove_duplicate=False)
                 if mine is None or id(p) in mine]
        part = ShardedOptimizer(named, torch.optim.AdamW, group, stage, bucket_bytes,
                                divide_by=divide_by, probe=probe, **opt)
        return Zero(module, part, part)
    if params is not None or divide_by is not None:
        raise ValueError("params / divide_by: stage 3 shards every parameter of the module "
                         "over one group (wrap the part that is someone else's apart)")
    if replicate > 1:
        part = HybridShard(module, *hsdp_groups(replicate, group), probe=probe, **fsdp_options)
    else:
        part = FullyShard(module, group, probe=probe, **fsdp_options)
    return Zero(part, part, torch.optim.AdamW(part.parameters(), **opt))

"""PyTorch's own data parallelism, the peer our ``BucketedDP`` is measured against:
``torch.nn.parallel.DistributedDataParallel`` (Li et al., "PyTorch Distributed", VLDB 2020)."""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel

from .ddp import DDP_BUCKET_BYTES


class TorchDDP(DistributedDataParallel):
    """DistributedDataParallel with our parts' signature (module, group, bucket_bytes) and
    interface (``no_sync`` is DDP's own). Its C++ Reducer implements the design of
    BucketedDP and waits for its buckets by itself at the end of backward, so
    ``finish_grad_sync`` has nothing to do.

    ``python_comm_hook``: each full bucket is handed to torch's own Python all-reduce hook
    (``ddp_comm_hooks.default_hooks.allreduce_hook``: divide, all-reduce, the same
    average) instead of the Reducer's C++ one. The gradients are the same; what changes is
    that one step per bucket runs in Python, as all of BucketedDP's do -- the peer that
    tells how much of ours / DDP is Python's cost rather than the design's."""

    def __init__(self, module: torch.nn.Module, group=None,
                 bucket_bytes: int = DDP_BUCKET_BYTES, python_comm_hook: bool = False,
                 **options):
        super().__init__(module, bucket_cap_mb=bucket_bytes / 2 ** 20, process_group=group,
                         **options)
        if python_comm_hook:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            self.register_comm_hook(group, default_hooks.allreduce_hook)

    def finish_grad_sync(self) -> bool:
        return False

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
    ``finish_grad_sync`` has nothing to do."""

    def __init__(self, module: torch.nn.Module, group=None,
                 bucket_bytes: int = DDP_BUCKET_BYTES, **options):
        super().__init__(module, bucket_cap_mb=bucket_bytes / 2 ** 20, process_group=group,
                         **options)

    def finish_grad_sync(self) -> bool:
        return False

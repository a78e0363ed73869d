"""PyTorch's own data parallelism, the peer our ``BucketedDP`` is measured against:
``torch.nn.parallel.DistributedDataParallel`` (Li et al., "PyTorch Distributed", VLDB 2020)."""

from __future__ import annotations

import torch


class TorchDDP:
    """torch.nn.parallel.DistributedDataParallel with the same bucket size. Its C++
    Reducer implements the design of BucketedDP and waits for its buckets by itself at
    the end of backward, so ``finish_backward`` has nothing to do."""

    def __init__(self, model: torch.nn.Module, bucket_bytes: int, group=None):
        from torch.nn.parallel import DistributedDataParallel
        self.module = DistributedDataParallel(model, bucket_cap_mb=bucket_bytes / 2 ** 20,
                                              process_group=group)
        self.no_sync = self.module.no_sync

    def finish_backward(self) -> None:
        pass

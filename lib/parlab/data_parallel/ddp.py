"""Data parallelism by hand: every rank holds the whole model, trains on its slice of
the global batch, and the ranks average their gradients before each optimizer step.

  NaiveDP     after backward, all-reduce each gradient, one tensor at a time
              (the "naive solution" of Li et al., "PyTorch Distributed: Experiences on
              Accelerating Data Parallel Training", VLDB 2020, §3.1).
  BucketedDP  DDP's design (Li et al. §3.2, §4.2): gradient hooks copy each gradient
              into a fixed-size flat bucket as soon as backward produces it; a full
              bucket is all-reduced asynchronously while backward goes on.

Gradient accumulation: ``no_sync()`` (DDP's name) skips the exchange; gradients then
add up locally over micro-batches and are averaged once, on the last one.

Why the result equals single-device training: with a global batch of B rows split in
W equal slices, the mean loss is the mean of the W slice means, so its gradient is the
average of the W slice gradients -- exactly what all-reduce(sum) / W computes.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.distributed as dist

from .. import comm, trace

DDP_BUCKET_BYTES = 25 * 2 ** 20  # DistributedDataParallel's default bucket_cap_mb=25


# --- 1. naive: all-reduce every gradient after backward ------------------------------

class NaiveDP:
    """Wait for the whole backward pass, then all-reduce each gradient in turn. Simple, but
    the network idles during backward and the cores idle during communication, and each
    small tensor pays a full collective latency (Li et al. §3.2.1, Fig. 2(a))."""

    def __init__(self, model: torch.nn.Module, group=None):
        self.module, self.group = model, group
        self.world = dist.get_world_size(group)
        self.sync = True

    @contextmanager
    def no_sync(self):
        """Gradient accumulation: backward passes inside add up locally, unsynchronised."""
        self.sync = False
        try:
            yield
        finally:
            self.sync = True

    def finish_backward(self) -> None:
        if not self.sync:
            return
        for p in reversed(list(self.module.parameters())):  # the order backward made them
            comm.all_reduce(p.grad, group=self.group)
            p.grad.div_(self.world)


# --- 2. bucketed and overlapped: DDP's design ----------------------------------------

def assign_buckets(nbytes: list[int], bucket_bytes: int) -> list[list[int]]:
    """Cut tensors, in the order given, into consecutive buckets: a bucket is closed as
    soon as it holds >= ``bucket_bytes`` (so a large tensor gets a bucket of its own), as
    DDP's ``_compute_bucket_assignment_by_size`` does. Returns lists of indices."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes={bucket_bytes} must be > 0")
    buckets, current, size = [], [], 0
    for i, b in enumerate(nbytes):
        current.append(i)
        size += b
        if size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    return buckets + ([current] if current else [])


class _Bucket:
    def __init__(self, params: list[torch.Tensor]):
        self.params = params
        self.buffer = params[0].new_zeros(sum(p.numel() for p in params))  # flat, allocated once
        # one view of the buffer per parameter, shaped like it: copies in and out are cheap
        self.views = [v.view_as(p) for v, p in
                      zip(self.buffer.split([p.numel() for p in params]), params)]
        self.pending = len(params)
        self.wait = None  # once launched: waits for its all-reduce


class BucketedDP:
    """Overlap the gradient all-reduce with the backward pass (Li et al. §3.2.3, §4.2).

    Buckets are filled in *reverse* parameter order, because backward produces the
    gradients of the last layers first. A hook on each parameter copies its gradient
    into its bucket's flat buffer as soon as it is accumulated; when a bucket's last
    gradient arrives, the bucket's all-reduce is launched asynchronously and backward
    carries on. Buckets are launched strictly in index order (like DDP's Reducer):
    collectives must be issued in the same order on every rank, or they would pair up
    the wrong buffers. ``finish_backward`` waits for all of them and copies back.
    """

    def __init__(self, model: torch.nn.Module, bucket_bytes: int, group=None):
        self.module, self.group = model, group
        self.world = dist.get_world_size(group)
        self.sync = True
        params = [p for p in reversed(list(model.parameters())) if p.requires_grad]
        sizes = [p.numel() * p.element_size() for p in params]
        self.buckets = [_Bucket([params[i] for i in idx])
                        for idx in assign_buckets(sizes, bucket_bytes)]
        self._slot = {}  # parameter -> (bucket, index in bucket)
        for b in self.buckets:
            for j, p in enumerate(b.params):
                self._slot[p] = (b, j)
                p.register_post_accumulate_grad_hook(self._grad_ready)
        self._next = 0  # the next bucket to launch

    no_sync = NaiveDP.no_sync

    def _grad_ready(self, p: torch.Tensor) -> None:
        if not self.sync:
            return
        b, j = self._slot[p]
        b.views[j].copy_(p.grad)
        b.pending -= 1
        while self._next < len(self.buckets) and self.buckets[self._next].pending == 0:
            self._launch(self._next)
            self._next += 1

    def _launch(self, i: int) -> None:
        self.buckets[i].wait = comm.all_reduce_async(self.buckets[i].buffer, self.group,
                                                     f"bucket{i}", bucket=i)

    def finish_backward(self) -> None:
        if not self.sync:
            return
        if self._next < len(self.buckets):  # a bucket never filled: it would hang the others
            raise RuntimeError(f"{sum(b.pending for b in self.buckets)} parameters got no "
                               "gradient in this backward pass; BucketedDP needs every parameter "
                               "to be used (DDP: find_unused_parameters=True)")
        with trace.span("wait for buckets", kind="wait"):
            for b in self.buckets:
                b.wait()
        for b in self.buckets:
            b.buffer.div_(self.world)
            for p, view in zip(b.params, b.views):
                p.grad.copy_(view)
            b.pending, b.wait = len(b.params), None
        self._next = 0

"""Data parallelism by hand, over any module: every rank holds the whole model, trains on
its slice of the global batch, and the ranks average their gradients before each
optimizer step.

  NaiveDP     after backward, all-reduce each gradient, one tensor at a time
              (the "naive solution" of Li et al., "PyTorch Distributed: Experiences on
              Accelerating Data Parallel Training", VLDB 2020, §3.1).
  BucketedDP  DDP's design (Li et al. §3.2, §4.2): gradient hooks copy each gradient
              into a fixed-size flat bucket as soon as backward produces it; a full
              bucket is all-reduced asynchronously while backward goes on.

Both are ``nn.Module``s around ``module`` (its forward is theirs), as DDP is. What any
model brings, and how they meet it (Li et al. §3.2.1, §4.2):

* replicas must start equal: at construction the group's first rank broadcasts its
  parameters and buffers to the others (a rank that seeded differently is corrected);
* frozen parameters (``requires_grad=False``) have no gradient and are left out;
* a parameter that got no gradient in a backward is an error naming it, unless
  ``find_unused_parameters`` (DDP's option): then the ranks agree on which parameters
  got a gradient anywhere, give those a zero one where they did not, and leave the
  others without any -- so an optimizer skips them, as it would on one device;
* a parameter shared by two modules (tied weights) is one tensor with one gradient,
  which autograd has already summed over its uses: it is reduced once.

Both finish their exchange inside backward and share the family's interface,
``no_sync()`` and ``finish_grad_sync()`` (``grad_sync.py``): under ``no_sync`` gradients
add up locally over micro-batches and are averaged once, on the last one.

Why the result equals single-device training: with a global batch of B rows split in
W equal slices, the mean loss is the mean of the W slice means, so its gradient is the
average of the W slice gradients -- exactly what all-reduce(sum) / W computes.
"""

from __future__ import annotations

from collections import deque
from functools import partial

import torch
import torch.distributed as dist

from .. import comm, trace
from ..mesh import check_group
from ..validate import check_bool, check_int
from .grad_sync import (GradSync, broadcast_state, broadcast_tensors, raise_without_gradient,
                        trainable, used_anywhere, used_parameters)

DDP_BUCKET_BYTES = 25 * 2 ** 20  # DistributedDataParallel's default bucket_cap_mb=25


class _DataParallel(GradSync, torch.nn.Module):
    """What NaiveDP and BucketedDP share: the wrapped module, the group, the broadcast at
    construction, the gradient-sync interface. ``params``: the parameters this part synchronises (default
    every trainable one of ``module``; a subset when others are someone else's, as
    experts are the expert-data-parallel group's); ``divide_by``: the number of replicas
    the mean is over (default the group's size)."""

    def __init__(self, module: torch.nn.Module, group=None, find_unused_parameters=False,
                 params=None, divide_by: int | None = None):
        super().__init__()
        if not isinstance(module, torch.nn.Module):
            raise ValueError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        self.module = module
        self.group = check_group(group)
        self.world = dist.get_world_size(group)
        self.divide_by = self.world if divide_by is None else check_int("divide_by", divide_by)
        self.find_unused_parameters = check_bool("find_unused_parameters",
                                                 find_unused_parameters)
        if params is None:
            self.named = trainable(module)
            broadcast_state(module, group)  # every replica starts from the first rank's weights
        else:
            mine = {id(p) for p in params}
            self.named = [(n, p) for n, p in trainable(module) if id(p) in mine]
            broadcast_tensors([p for _, p in self.named], group)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def held_gradients(self) -> list:
        """(parameter, the gradient this rank steps it with): whole, averaged."""
        return [(p, p.grad) for _, p in self.named]

    def full_tensors(self, grads: bool = False) -> dict:
        """{parameter: its full value (or gradient)}: every replica holds them whole."""
        return {p: p.grad if grads else p.detach() for _, p in self.named
                if not grads or p.grad is not None}


# --- 1. naive: all-reduce every gradient after backward ------------------------------

class NaiveDP(_DataParallel):
    """Wait for the whole backward pass, then all-reduce each gradient in turn. Simple, but
    the network idles during backward and the cores idle during communication, and each
    small tensor pays a full collective latency (Li et al. §3.2.1, Fig. 2(a))."""

    def __init__(self, module: torch.nn.Module, group=None, find_unused_parameters=False,
                 params=None, divide_by: int | None = None):
        super().__init__(module, group, find_unused_parameters, params, divide_by)
        for _, p in self.named:  # only to learn that a backward ran: its end finishes the round
            p.register_post_accumulate_grad_hook(lambda p: self.grad_ready())

    def collective_groups(self) -> list[list]:
        return [[p] for _, p in reversed(self.named)]  # one all-reduce per tensor

    def _finish(self) -> None:
        named = used_parameters(self.named, self.find_unused_parameters, self.group)
        for _, p in reversed(named):  # the order backward made them
            comm.all_reduce(p.grad, group=self.group)
            p.grad.div_(self.divide_by)


# --- 2. bucketed and overlapped: DDP's design ----------------------------------------

def assign_buckets(nbytes: list[int], bucket_bytes: int, keys=None) -> list[list[int]]:
    """Cut tensors, in the order given, into consecutive buckets: a bucket is closed as
    soon as it holds >= ``bucket_bytes`` (so a large tensor gets a bucket of its own), as
    DDP's ``_compute_bucket_assignment_by_size`` does, and also where ``keys[i]`` (e.g.
    the dtype: one flat buffer holds one dtype) changes. Returns lists of indices."""
    check_int("bucket_bytes", bucket_bytes)
    buckets = []
    current = []
    size = 0
    for i, b in enumerate(nbytes):
        if current and keys is not None and keys[i] != keys[current[-1]]:
            buckets.append(current)
            current = []
            size = 0
        current.append(i)
        size += b
        if size >= bucket_bytes:
            buckets.append(current)
            current = []
            size = 0
    return buckets + ([current] if current else [])


class _Bucket:
    def __init__(self, named: list):
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.buffer = self.params[0].new_zeros(sum(p.numel() for p in self.params))  # once
        # one view of the buffer per parameter, shaped like it: copies in and out are cheap
        self.views = [v.view_as(p) for v, p in
                      zip(self.buffer.split([p.numel() for p in self.params]), self.params)]
        self.ready = [False] * len(self.params)  # this round: copied in
        self.held = [False] * len(self.params)   # this round: kept back by no_sync
        self.count = 0  # how many are ready: the bucket goes when all are
        self.event = None  # its all-reduce's trace name and fields
        self.wait = None  # once launched: waits for its all-reduce


class BucketedDP(_DataParallel):
    """Overlap the gradient all-reduce with the backward pass (Li et al. §3.2.3, §4.2).

    Buckets are filled in *reverse* parameter order, because backward produces the
    gradients of the last layers first. A hook on each parameter notes that its gradient
    has been accumulated; when a bucket's last gradient arrives, the bucket's gradients
    are copied into its flat buffer and its all-reduce is launched asynchronously, and
    backward carries on. Buckets are launched strictly in index order (like DDP's Reducer):
    collectives must be issued in the same order on every rank, or they would pair up
    the wrong buffers. At the end of backward the round is finished: the buckets still
    to go are launched, all are waited for, and the averages copied back.

    The hook runs once per parameter per backward, in the middle of it, where DDP's
    Reducer runs C++: so it is kept short (its bucket and slot are bound to it, a count
    says when the bucket is full), and the copies in and out are one fused call per
    bucket (``torch._foreach_copy_``) rather than one per gradient.

    ``gradient_as_bucket_view`` (DDP's option): the gradients *are* views of the bucket
    buffers, so no second copy of them is held. ``find_unused_parameters``: a bucket
    missing an unused parameter's gradient waits for the end of backward and goes with
    zeros in its place (DDP instead walks the autograd graph at the start of backward to
    mark such parameters ready); after the last bucket the ranks agree which parameters
    no rank used, and those keep no gradient.
    """

    def __init__(self, module: torch.nn.Module, group=None,
                 bucket_bytes: int = DDP_BUCKET_BYTES, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False, params=None, divide_by=None):
        super().__init__(module, group, find_unused_parameters, params, divide_by)
        self.as_view = check_bool("gradient_as_bucket_view", gradient_as_bucket_view)
        named = self.named[::-1]
        sizes = [p.numel() * p.element_size() for _, p in named]
        kinds = [(p.dtype, p.device) for _, p in named]
        self.buckets = [_Bucket([named[i] for i in idx])
                        for idx in assign_buckets(sizes, bucket_bytes, kinds)]
        for b in self.buckets:
            for j, p in enumerate(b.params):
                p.register_post_accumulate_grad_hook(partial(self._grad_ready, b, j))
                if self.as_view:
                    p.grad = b.views[j]
        self._todo = deque(self.buckets)  # this round's buckets not launched yet, in order
        # Each bucket's all-reduce is prepared once: the process group's own call (what
        # DDP's Reducer makes), and the trace event comm.all_reduce_async would record.
        # dist.all_reduce's checks and the event's byte count, redone at every launch,
        # cost more than the hooks themselves (13 launches a step with 64 KiB buckets).
        self._pg = self.group if self.group is not None else dist.group.WORLD
        for i, b in enumerate(self.buckets):
            nbytes = b.buffer.numel() * b.buffer.element_size()
            b.event = (f"all_reduce bucket{i} grads",
                       dict(comm.modelled_bytes("all_reduce", nbytes, self.group), async_op=True,
                            dtype=str(b.buffer.dtype).removeprefix("torch."), bucket=i))

    def collective_groups(self) -> list[list]:
        return [b.params for b in self.buckets]

    def _grad_ready(self, b: _Bucket, j: int, p: torch.Tensor) -> None:
        if not self._queued:  # the round's first gradient (or under no_sync): note it
            self.grad_ready()
        if not self.sync:
            b.held[j] = True  # accumulated under no_sync: sent with the next exchange
            return
        if not b.ready[j]:
            b.ready[j] = True
            b.count += 1
        # a bucket goes once all its gradients of this backward are in, in index order
        todo = self._todo
        while todo and todo[0].count == len(todo[0].params):
            self._launch(todo.popleft())

    def _fill(self, b: _Bucket) -> None:
        """Put this round's gradients into the bucket's buffer with one fused copy (what
        ``no_sync`` accumulated goes too; a missing gradient goes as zeros). Copying here,
        once per bucket, rather than in each gradient's hook saves a call per gradient:
        the hook is what runs in Python where DDP's Reducer runs C++."""
        dst, src = [], []
        for p, view in zip(b.params, b.views):
            g = p.grad
            if g is None:
                view.zero_()
            elif g.data_ptr() != view.data_ptr():
                dst.append(view)
                src.append(g)
                if self.as_view:
                    p.grad = view  # (the copy below fills it)
        if dst:
            torch._foreach_copy_(dst, src)

    def _launch(self, b: _Bucket) -> None:
        self._fill(b)
        b.ready = [False] * len(b.params)
        b.held = [False] * len(b.params)
        b.count = 0
        name, fields = b.event
        b.wait = trace.in_flight(self._pg.allreduce([b.buffer]), name, **fields)

    def _finish(self) -> None:
        """Launch the buckets still to go (those whose gradients ``no_sync`` accumulated,
        or that miss an unused parameter's), wait for all, average, and put the results
        in the gradients."""
        missing = {id(b.params[j]) for b in self._todo for j in range(len(b.params))
                   if not (b.ready[j] or b.held[j])}
        if missing and not self.find_unused_parameters:  # it would hang the others: name them
            raise_without_gradient([n for n, p in self.named if id(p) in missing])
        while self._todo:
            self._launch(self._todo.popleft())  # (a missing gradient goes in as zeros)
        self._todo.extend(self.buckets)  # the next round's
        with trace.span("wait for buckets", kind="wait"):
            for b in self.buckets:
                b.wait()
                b.wait = None
        unused = set()
        if self.find_unused_parameters:  # after every bucket: the same order on every rank
            unused = {id(p) for (_, p), anywhere in zip(self.named, used_anywhere(
                [id(p) not in missing for _, p in self.named], self.group)) if not anywhere}
        for b in self.buckets:
            b.buffer.div_(self.divide_by)  # the average: one pass over the bucket
            dst, src = [], []
            for p, view in zip(b.params, b.views):
                if id(p) in unused:
                    p.grad = None  # unused on every rank: no gradient, as on one device
                elif self.as_view:
                    p.grad = view
                elif p.grad is None:
                    p.grad = view.clone()
                else:
                    dst.append(p.grad)
                    src.append(view)
            if dst:
                torch._foreach_copy_(dst, src)  # back into the gradients: one fused copy

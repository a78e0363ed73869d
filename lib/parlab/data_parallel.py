"""Data parallelism: every rank holds the whole model, trains on its slice of the global
batch, and the ranks average their gradients before each optimizer step.

Four ways to do the averaging, each checked against ``model.reference_train``:

  NaiveDP       after backward, all-reduce each gradient, one tensor at a time
                (the "naive solution" of Li et al., "PyTorch Distributed: Experiences on
                Accelerating Data Parallel Training", VLDB 2020, §3.1).
  BucketedDP    DDP's design (Li et al. §3.2, §4.2): gradient hooks copy each gradient
                into a fixed-size flat bucket as soon as backward produces it; a full
                bucket is all-reduced asynchronously while backward goes on.
  TorchDDP      the peer: torch.nn.parallel.DistributedDataParallel, same bucket size.
  CompressedDP  (parlab.compression) exchange compressed gradients (fp16 cast, top-k, 1-bit sign+scale), with
                error feedback; see the compression section below.

Gradient accumulation: ``no_sync()`` (DDP's name) skips the exchange; gradients then
add up locally over micro-batches and are averaged once, on the last one.

Why the result equals single-device training: with a global batch of B rows split in
W equal slices, the mean loss is the mean of the W slice means, so its gradient is the
average of the W slice gradients -- exactly what all-reduce(sum) / W computes.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from . import comm, trace
from .cost import check_int
from .data import local_batch
from .model import GPT, GPTConfig

VARIANTS = ("naive", "bucketed", "ddp")
COMPRESSORS = (None, "fp16", "topk", "sign")


@dataclass(frozen=True)
class DPRun:
    """One data-parallel training run. ``batch_size`` is the global batch per optimizer
    step; each of W ranks takes its contiguous slice, cut into ``accumulation_steps``
    micro-batches. ``compression`` needs ``variant="naive"`` (it replaces its exchange)."""
    config: GPTConfig = field(default_factory=GPTConfig)
    steps: int = 3
    batch_size: int = 8
    lr: float = 1e-3
    seed: int = 0
    data_seed: int = 0
    weight_decay: float = 0.0
    variant: str = "bucketed"
    bucket_bytes: int = 25 * 2 ** 20  # DDP's default bucket_cap_mb=25
    accumulation_steps: int = 1
    compression: str | None = None
    topk_ratio: float = 0.01
    error_feedback: bool = True
    trace: bool = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken constraint (before any rank starts)."""
        check_int("world_size", world_size)
        if self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r} must be one of {VARIANTS}")
        if self.compression not in COMPRESSORS:
            raise ValueError(f"compression={self.compression!r} must be one of {COMPRESSORS}")
        if self.compression is not None and self.variant != "naive":
            raise ValueError(f"compression={self.compression!r} replaces the naive exchange; "
                             f"use variant='naive', not {self.variant!r}")
        if not 0 < self.topk_ratio <= 1:
            raise ValueError(f"topk_ratio={self.topk_ratio} must be in (0, 1]")
        if self.bucket_bytes <= 0:
            raise ValueError(f"bucket_bytes={self.bucket_bytes} must be > 0")
        if self.steps < 0 or self.accumulation_steps < 1:
            raise ValueError(f"need steps >= 0 and accumulation_steps >= 1, got steps="
                             f"{self.steps}, accumulation_steps={self.accumulation_steps}")
        slices = world_size * self.accumulation_steps
        if self.batch_size < 1 or self.batch_size % slices:
            raise ValueError(f"batch_size={self.batch_size} must be a positive multiple of dp="
                             f"{world_size} x accumulation_steps={self.accumulation_steps}")


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
        self.work = None
        self.launched = self.done = 0.0


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
            self._launch(self.buckets[self._next])
            self._next += 1

    def _launch(self, b: _Bucket) -> None:
        b.launched, b.done = trace.now(), 0.0
        b.work = dist.all_reduce(b.buffer, group=self.group, async_op=True)
        if trace.is_recording():
            # gloo runs async work on a background thread; this callback runs there when
            # the all-reduce completes, so the timeline bar spans launch -> completion.
            b.work.get_future().then(lambda _f, b=b: setattr(b, "done", trace.now()))

    def finish_backward(self) -> None:
        if not self.sync:
            return
        if self._next < len(self.buckets):  # a bucket never filled: it would hang the others
            raise RuntimeError(f"{sum(b.pending for b in self.buckets)} parameters got no "
                               "gradient in this backward pass; BucketedDP needs every parameter "
                               "to be used (DDP: find_unused_parameters=True)")
        with trace.span("wait for buckets", kind="wait"):
            for b in self.buckets:
                b.work.wait()
        for i, b in enumerate(self.buckets):
            nbytes = b.buffer.numel() * b.buffer.element_size()
            trace.record("comm", "bucket all_reduce", b.launched, b.done or b.launched,
                         **comm.modelled_bytes("all_reduce", nbytes, self.group), bucket=i)
            b.buffer.div_(self.world)
            for p, view in zip(b.params, b.views):
                p.grad.copy_(view)
            b.pending, b.work = len(b.params), None
        self._next = 0


# --- 3. the peer: torch's DistributedDataParallel -----------------------------------

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


# --- 4. compression with error feedback: see parlab.compression ---------------------


# --- 5. one training run on every rank ------------------------------------------------

def make_dp(model: torch.nn.Module, run: DPRun, group=None):
    if run.compression is not None:
        from .compression import CompressedDP  # it builds on NaiveDP, defined above
        return CompressedDP(model, run.compression, run.topk_ratio, run.error_feedback, group)
    if run.variant == "naive":
        return NaiveDP(model, group)
    if run.variant == "bucketed":
        return BucketedDP(model, run.bucket_bytes, group)
    return TorchDDP(model, run.bucket_bytes, group)


def train_worker(run: DPRun) -> dict:
    """Rank worker: ``run.steps`` AdamW steps of data-parallel training. Mirrors
    ``reference_train`` line by line, except for the slicing and the exchange."""
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    cfg, A = run.config, run.accumulation_steps
    device = comm.device()
    model = GPT(cfg, run.seed).to(device)
    dp = make_dp(model, run)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95),
                            weight_decay=run.weight_decay)
    per_rank = run.batch_size // world
    micro = per_rank // A
    losses, step_times = [], []
    trace.start()
    for step in range(run.steps):
        x, y = local_batch(step, run.batch_size, cfg.seq_len, cfg.vocab_size, rank, world,
                           seed=run.data_seed)
        x, y = x.to(device), y.to(device)
        t0 = trace.now()
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for m in range(A):
            # sync only on the last micro-batch; before it, gradients add up locally
            with dp.no_sync() if m < A - 1 else nullcontext():
                with trace.span("forward", step=step, micro=m):
                    _, loss = dp.module(x[m * micro:(m + 1) * micro], y[m * micro:(m + 1) * micro])
                with trace.span("backward", step=step, micro=m):
                    (loss / A).backward()  # mean over the rank's rows = mean of micro means
            loss_sum += loss.item()
        dp.finish_backward()
        with trace.span("optimizer", step=step):
            opt.step()
        step_times.append(trace.now() - t0)
        losses.append(loss_sum / A)
    events = trace.stop()
    return {"rank": rank, "local_losses": losses, "step_times": step_times,
            "bytes_sent": sum(e["bytes_sent"] for e in events if e["kind"] == "comm"),
            "events": events if run.trace else [],
            "buckets": [len(b.params) for b in getattr(dp, "buckets", [])],
            "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "grads": {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}}


def run_data_parallel(run: DPRun, world_size: int, timeout: float = 120.0) -> dict:
    """Check ``run``, train on ``world_size`` ranks and return {"losses" (global mean per
    step, = mean of the ranks' slice means), "state_dict", "grads" (rank 0's), "ranks"}."""
    from .launch import launch
    run.check(world_size)
    ranks = launch(train_worker, world_size, run, timeout=timeout)
    losses = [sum(r["local_losses"][s] for r in ranks) / world_size for s in range(run.steps)]
    return {"losses": losses, "state_dict": ranks[0]["state_dict"],
            "grads": ranks[0]["grads"], "ranks": ranks}


def overlap_fraction(events: list[dict]) -> float:
    """Share of the time gradients were on the wire that backward was still computing.
    Per rank, C = the union of its comm events (buckets in flight at once count once) and
    B = its backward spans; the result is sum |C ∩ B| / sum |C| over ranks and steps.
    0 = fully exposed (as in NaiveDP), 1 = fully hidden behind backward."""
    on_wire = inside = 0.0
    for rank in {e["rank"] for e in events}:
        busy = []  # merged comm intervals of this rank
        for s, t in sorted((e["start"], e["end"]) for e in events
                           if e["rank"] == rank and e["kind"] == "comm"):
            if busy and s <= busy[-1][1]:
                busy[-1][1] = max(busy[-1][1], t)
            else:
                busy.append([s, t])
        backward = [(e["start"], e["end"]) for e in events
                    if e["rank"] == rank and e["name"] == "backward"]
        for s, t in busy:
            on_wire += t - s
            inside += sum(max(0.0, min(t, b1) - max(s, b0)) for b0, b1 in backward)
    return inside / on_wire if on_wire > 0 else 0.0

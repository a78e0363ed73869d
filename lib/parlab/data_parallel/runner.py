"""One data-parallel training run: ``DPRun`` (checked before any process starts) and
``run_data_parallel(run, world_size)``; ``train_worker`` is what every rank executes."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from .. import comm, trace
from ..validate import check_int
from ..data import local_batch
from ..model import GPT, GPTConfig
from .compression import COMPRESSORS, CompressedDP
from .ddp import BucketedDP, NaiveDP
from .peers import TorchDDP

VARIANTS = ("naive", "bucketed", "ddp")


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


def make_dp(model: torch.nn.Module, run: DPRun, group=None):
    if run.compression is not None:
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
    from ..launch import launch
    run.check(world_size)
    ranks = launch(train_worker, world_size, run, timeout=timeout)
    losses = [sum(r["local_losses"][s] for r in ranks) / world_size for s in range(run.steps)]
    return {"losses": losses, "state_dict": ranks[0]["state_dict"],
            "grads": ranks[0]["grads"], "ranks": ranks}

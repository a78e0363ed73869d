"""One data-parallel training run, in the lab's run convention:

    result = data_parallel.run(DPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                     variant="bucketed"), world_size=2)

``DPRun.check`` refuses bad input before any process starts; ``train_worker`` is what
each rank executes, on any process group (a data-parallel group can be one axis of a
bigger job); ``collect`` turns the ranks' returns into a ``RunResult``."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import comm, trace
from ..data import local_batch
from ..memory import held_bytes, optimizer_states
from ..model import GPT
from ..runs import RunResult, TrainRun
from ..validate import check_bool, check_choice, check_float, check_int
from .compression import COMPRESSORS, CompressedDP
from .ddp import DDP_BUCKET_BYTES, BucketedDP, NaiveDP
from .peers import TorchDDP

VARIANTS = ("naive", "bucketed", "ddp")


@dataclass(frozen=True)
class DPRun(TrainRun):
    """One data-parallel training run. ``batch_size`` is the global batch per optimizer
    step; each of the dp ranks takes its contiguous slice, cut into
    ``accumulation_steps`` micro-batches. ``variant``: "naive" (NaiveDP), "bucketed"
    (BucketedDP, buckets of ``bucket_bytes``) or "ddp" (torch's, same bucket size).
    ``compression`` ("fp16", "topk" keeping ``topk_ratio`` of each tensor, "sign")
    replaces the naive exchange, with ``error_feedback``. ``trace``: return every
    rank's traced events."""
    variant: str = "bucketed"
    bucket_bytes: int = DDP_BUCKET_BYTES
    accumulation_steps: int = 1
    compression: str | None = None
    topk_ratio: float = 0.01
    error_feedback: bool = True
    trace: bool = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_choice("variant", self.variant, VARIANTS)
        check_choice("compression", self.compression, COMPRESSORS)
        if self.compression is not None and self.variant != "naive":
            raise ValueError(f"compression={self.compression!r} replaces the naive exchange; "
                             f"use variant='naive', not {self.variant!r}")
        check_float("topk_ratio", self.topk_ratio, high=1.0)
        check_int("bucket_bytes", self.bucket_bytes)
        check_int("accumulation_steps", self.accumulation_steps)
        check_bool("error_feedback", self.error_feedback)
        check_bool("trace", self.trace)
        slices = world_size * self.accumulation_steps
        if self.batch_size % slices:
            raise ValueError(f"batch_size={self.batch_size} must be a positive multiple of dp="
                             f"{world_size} x accumulation_steps={self.accumulation_steps}")


def make_dp(model: torch.nn.Module, run: DPRun, group=None):
    """The gradient exchange ``run`` asks for, over ``group`` (default: the world)."""
    if run.compression is not None:
        return CompressedDP(model, run.compression, run.topk_ratio, run.error_feedback, group)
    if run.variant == "naive":
        return NaiveDP(model, group)
    if run.variant == "bucketed":
        return BucketedDP(model, run.bucket_bytes, group)
    return TorchDDP(model, run.bucket_bytes, group)


def train_worker(run: DPRun, group=None) -> dict:
    """Rank worker: ``run.steps`` AdamW steps of data-parallel training over ``group``
    (default: the world). Mirrors ``reference_train`` line by line, except for the
    slicing and the exchange. Events carry the rank in ``group``."""
    torch.set_num_threads(1)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    cfg, A = run.config, run.accumulation_steps
    device = comm.device(group)
    model = GPT(cfg, run.seed).to(device)
    dp = make_dp(model, run, group)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95),
                            weight_decay=run.weight_decay)
    micro = run.batch_size // world // A
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
    events = [dict(e, rank=rank) for e in trace.stop()]
    return {"rank": rank, "local_losses": losses, "step_times": step_times,
            "bytes_sent": sum(e["bytes_sent"] for e in events if e["kind"] == "comm"),
            "events": events if run.trace else [],
            "buckets": [len(b.params) for b in getattr(dp, "buckets", [])],
            "memory": held_bytes(params=list(model.parameters()),
                                 grads=[p.grad for p in model.parameters()],
                                 optimizer=optimizer_states(opt),
                                 comm_buffers=[b.buffer for b in getattr(dp, "buckets", [])]
                                 + list(getattr(dp, "residual", None) or [])),
            "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "grads": {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}}


def collect(run: DPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one data-parallel group's ``train_worker`` returns (in group
    rank order): the global mean loss per step (the mean of the ranks' slice means),
    rank 0's parameters and gradients (every replica holds the same), step times of
    the slowest rank, and per rank what else it measured."""
    return RunResult.from_replicas(ranks, run.steps, ("rank", "local_losses", "step_times",
                                                      "bytes_sent", "buckets", "state_dict"))


def run(run: DPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """Check ``run``, train on ``world_size`` ranks and gather the result."""
    from ..launch import launch
    if not isinstance(run, DPRun):
        raise ValueError(f"run must be a DPRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout))

"""One data-parallel training run, in the lab's run convention:

    result = data_parallel.run(DPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                     variant="bucketed"), world_size=2)

``DPRun.check`` refuses bad input before any process starts; ``train_worker`` is what
each rank executes, on any process group (a data-parallel group can be one axis of a
bigger job); ``collect`` turns the ranks' returns into a ``RunResult``."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from .. import comm, trace
from ..memory import held_bytes, optimizer_states
from ..model import GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, module_state, train
from ..validate import check_bool, check_choice, check_float, check_int
from .compression import COMPRESSORS, CompressedDP
from .ddp import DDP_BUCKET_BYTES, BucketedDP, NaiveDP
from .peers import TorchDDP

VARIANTS = ("naive", "bucketed", "ddp", "ddp-python")
EXTRAS = ("bytes_sent", "buckets", "state_dict")


@dataclass(frozen=True)
class DPRun(TrainRun):
    """One data-parallel training run. ``batch_size`` is the global batch per optimizer
    step; each of the dp ranks takes its contiguous slice, cut into ``micro_batches``
    (gradient accumulation). ``variant``: "naive" (NaiveDP), "bucketed" (BucketedDP,
    buckets of ``bucket_bytes``), "ddp" (torch's, same bucket size) or "ddp-python" (torch's
    with its Python all-reduce hook: ``TorchDDP(python_comm_hook=True)``). ``compression``
    ("fp16", "topk" keeping ``topk_ratio`` of each tensor, "sign") replaces the naive
    exchange, with ``error_feedback``."""
    variant: str = "bucketed"
    bucket_bytes: int = DDP_BUCKET_BYTES
    micro_batches: int = 1
    compression: str | None = None
    topk_ratio: float = 0.01
    error_feedback: bool = True

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
        check_int("micro_batches", self.micro_batches)
        check_bool("error_feedback", self.error_feedback)
        slices = world_size * self.micro_batches
        if self.batch_size % slices:
            raise ValueError(f"batch_size={self.batch_size} must be a positive multiple of dp="
                             f"{world_size} x micro_batches={self.micro_batches}")


def make_dp(model, run: DPRun, group=None):
    """The gradient exchange ``run`` asks for, wrapped around ``model`` over ``group``."""
    if run.compression is not None:
        return CompressedDP(model, group, run.compression, run.topk_ratio, run.error_feedback)
    if run.variant == "naive":
        return NaiveDP(model, group)
    if run.variant == "bucketed":
        return BucketedDP(model, group, run.bucket_bytes)
    return TorchDDP(model, group, run.bucket_bytes,
                    python_comm_hook=run.variant == "ddp-python")


class DPRecipe(Recipe):
    """The reference GPT on every rank, wrapped by the run's data-parallel part."""

    def __init__(self, run: DPRun, group=None):
        super().__init__(run, group)
        self.gpt = GPT(run.config, run.seed).to(comm.device(group))
        self.model = make_dp(self.gpt, run, group)
        self.optimizer = self.make_optimizer(self.gpt.parameters())

    def train_step(self, x, y):
        x = x.to(comm.device(self.group))
        y = y.to(comm.device(self.group))
        m = self.run.micro_batches
        rows = x.size(0) // m
        total = 0.0
        for i in range(m):
            # sync only on the last micro-batch; before it, gradients add up locally
            with self.model.no_sync() if i < m - 1 else nullcontext(), trace.tagged(mb=i):
                with trace.span("forward"):
                    _, loss = self.model(x[i * rows:(i + 1) * rows], y[i * rows:(i + 1) * rows])
                with trace.span("backward"):
                    (loss / m).backward()  # mean over the rank's rows = mean of micro means
            total += loss.item()
        return total / m  # the last backward, outside no_sync, finished the gradient sync

    def memory(self) -> dict:
        params = list(self.gpt.parameters())
        return held_bytes(params=params, grads=[p.grad for p in params],
                          optimizer=optimizer_states(self.optimizer),
                          comm_buffers=[b.buffer for b in getattr(self.model, "buckets", [])]
                          + list(getattr(self.model, "residual", None) or []))

    def full_state(self):  # every replica returns its own: the tests check they are equal
        return module_state(self.gpt)

    def report(self, events, windows) -> dict:
        return {"bytes_sent": sum(e["bytes_sent"] for e in events if e["kind"] == "comm"),
                "buckets": [len(b.params) for b in getattr(self.model, "buckets", [])]}


def train_worker(run: DPRun, group=None) -> dict:
    """Rank worker: data-parallel training over ``group`` (default: the world)."""
    return train(DPRecipe(run, group))


def collect(run: DPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one data-parallel group's ``train_worker`` returns (in group
    rank order); ``ranks[r]`` keeps what each rank sent and its own final parameters."""
    return RunResult.gather(run, ranks, EXTRAS)


run = make_run(DPRun, train_worker, collect)

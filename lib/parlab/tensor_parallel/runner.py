"""One tensor-parallel training run, in the lab's run convention:

    result = tensor_parallel.run(TPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                       sequence_parallel=True), world_size=4)

Every rank of the group sees the whole global batch (tensor parallelism splits the
model, not the data) and holds a 1/t slice of each split weight; ``collect`` returns
the reassembled full parameters and gradients, so ``model.max_differences`` compares
the run with ``reference_train`` directly.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import comm, trace
from ..data import get_batch
from ..memory import held_bytes, optimizer_states
from ..runs import RunResult, TrainRun
from ..validate import check_bool, check_choice
from .model import TPGPT, full_tensors, sync_sequence_parallel_grads

RECOMPUTE = ("none", "selective")


@dataclass(frozen=True)
class TPRun(TrainRun):
    """One tensor-parallel training run over t = world_size ranks. ``sequence_parallel``:
    Korthikanti's sequence parallelism on top; ``overlap``: the input-gradient
    collective runs beside the weight-gradient matmul; ``recompute``: "none" or
    "selective" (the attention core is recomputed in backward); ``trace``: return every
    rank's traced events (collective counts and bytes are always returned)."""
    sequence_parallel: bool = False
    overlap: bool = False
    recompute: str = "none"
    trace: bool = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_bool("sequence_parallel", self.sequence_parallel)
        check_bool("overlap", self.overlap)
        check_choice("recompute", self.recompute, RECOMPUTE)
        check_bool("trace", self.trace)
        c, t = self.config, world_size
        for name in ("n_heads", "d_ff", "vocab_size"):  # whole heads, equal slices
            if getattr(c, name) % t:
                raise ValueError(f"tp={t} must divide {name}={getattr(c, name)}")
        if self.sequence_parallel and c.seq_len % t:
            raise ValueError(f"tp={t} must divide seq_len={c.seq_len}: sequence parallelism "
                             "gives each rank an equal run of positions")


class ActivationCounter:
    """Bytes of the distinct storages autograd saves for backward during a forward,
    weights excluded, attributed to the block that saved them first ("blocks.i") or
    to "other" (embeddings, final LayerNorm, logits, loss)."""

    def __init__(self, model: TPGPT):
        self._weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.bytes: dict = {}
        self._where, self._seen = "other", set()
        for i, block in enumerate(model.blocks):
            block.register_forward_pre_hook(lambda m, a, i=i: self._enter(f"blocks.{i}"))
            block.register_forward_hook(lambda m, a, out: self._enter("other"))

    def _enter(self, where):
        self._where = where

    def _pack(self, t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in self._weights and ptr not in self._seen:
            self._seen.add(ptr)
            self.bytes[self._where] = self.bytes.get(self._where, 0) + t.untyped_storage().nbytes()
        return t

    @contextmanager
    def measure(self):
        self.bytes, self._seen = {}, set()
        with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
            yield

    def per_layer(self) -> list[int]:
        return [v for k, v in sorted(self.bytes.items()) if k.startswith("blocks.")]


def train_worker(run: TPRun, group=None) -> dict:
    """Rank worker: ``run.steps`` AdamW steps of tensor-parallel training over ``group``
    (default: the world), mirroring ``reference_train``. The first forward's saved
    activations are counted; every collective is traced."""
    torch.set_num_threads(1)
    rank, cfg = dist.get_rank(group), run.config
    device = comm.device(group)
    model = TPGPT(cfg, run.seed, group, run.sequence_parallel, run.overlap,
                  run.recompute).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95),
                            weight_decay=run.weight_decay)
    counter = ActivationCounter(model)
    losses, step_times, windows = [], [], []
    trace.start()
    for step in range(run.steps):
        x, y = get_batch(step, run.batch_size, cfg.seq_len, cfg.vocab_size, seed=run.data_seed)
        x, y = x.to(device), y.to(device)
        t0 = trace.now()
        opt.zero_grad(set_to_none=True)
        with trace.span("forward", step=step), (counter.measure() if step == 0 else nullcontext()):
            loss = model(x, y)
        with trace.span("backward", step=step):
            loss.backward()
            if run.sequence_parallel:
                sync_sequence_parallel_grads(model)
        with trace.span("optimizer", step=step):
            opt.step()
        windows.append((t0, trace.now()))
        step_times.append(windows[-1][1] - t0)
        losses.append(loss.item())
    events = [dict(e, rank=rank) for e in trace.stop()]
    collectives = trace.comm_rows(events, windows)  # which layer, pass and operator each served
    state, grads = full_tensors(model), full_tensors(model, grads=True)
    return {"rank": rank, "losses": losses, "step_times": step_times,
            "collectives": collectives,
            "activations": {"per_layer": counter.per_layer(), "other": counter.bytes.get("other", 0)},
            "events": events if run.trace else [],
            "memory": held_bytes(params=list(model.parameters()),
                                 grads=[p.grad for p in model.parameters()],
                                 optimizer=optimizer_states(opt)),
            "state_dict": state if rank == 0 else None,
            "grads": grads if rank == 0 else None}


def collect(run: TPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one tensor-parallel group's ``train_worker`` returns (group
    rank order): the loss every rank computed, the reassembled parameters and
    gradients, the slowest rank's step times, and per rank its collectives and
    activation bytes."""
    return RunResult(losses=ranks[0]["losses"], state_dict=ranks[0]["state_dict"],
                     grads=ranks[0]["grads"], events=[e for r in ranks for e in r["events"]],
                     memory=[r["memory"] for r in ranks],
                     step_times=[max(r["step_times"][s] for r in ranks) for s in range(run.steps)],
                     ranks=[{k: r[k] for k in ("rank", "losses", "collectives", "activations")}
                            for r in ranks])


def run(run: TPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """Check ``run``, train on ``world_size`` = t ranks and gather the result."""
    from ..launch import launch
    if not isinstance(run, TPRun):
        raise ValueError(f"run must be a TPRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout))

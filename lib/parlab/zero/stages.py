"""ZeRO-DP, stage by stage: data parallelism without replicating the model states.

Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", SC 2020. Plain data parallelism keeps on every rank the parameters, the
gradients and the optimizer states (for AdamW: exp_avg and exp_avg_sq). ZeRO-DP (§5)
partitions them over the N_d data-parallel ranks, each rank owning one contiguous
1/N_d shard; each class below adds one thing to the one before it:

  Stage0DP     plain DP, the baseline: gradients land in flat buckets (reverse
               parameter order, ``bucket_bytes``, DDP's layout), and each bucket is
               all-reduced asynchronously as soon as it is full, while backward goes
               on (Li et al., "PyTorch Distributed", VLDB 2020, §3.2.3).
  ZeroStage1   + optimizer states partitioned (P_os, §5.1): a bucket is
               reduce-scattered instead, so each rank gets the summed gradient of its
               own shard only; it updates that shard; an all-gather sends the updated
               parameters to everyone. Full gradients are still held until the step ends.
  ZeroStage2   + gradients partitioned (P_os+g, §5.2): each gradient is copied into
               its bucket and dropped at once; the bucket is freed as soon as it is
               reduce-scattered. A rank keeps only its shard's gradient.
  ZeroStage3   + parameters partitioned (P_os+g+p, §5.3; stage3.py): a unit's full
               parameters exist only while it runs.

Traffic per step (§7.2): stages 0-2 move 2 Psi per rank -- an all-reduce *is* a
reduce-scatter plus an all-gather -- and stage 3 moves 3 Psi (``cost.zero_comm_volume``).
A rank's memory is ``cost.zero_memory``. Both are measured: the runner's MemoryProbe
counts the tensors of ``states()``, the trace counts the bytes of every collective.

Exactness. The optimizer is torch.optim.AdamW over the shards: AdamW is elementwise
(Loshchilov & Hutter 2019), so updating a slice with the slice's gradient is the same
arithmetic as updating the whole tensor. Results differ from the single-device
reference only by the order in which gradients are summed.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .. import comm, trace
from ..cost import ZERO_STAGES
from ..data_parallel.ddp import DDP_BUCKET_BYTES, assign_buckets
from ..memory import optimizer_states
from ..model import GPT, GPTConfig, loss_fn
from . import collectives
from .flat import Flat
from .probes import MemoryProbe, Tracer

STAGES = ZERO_STAGES  # (0, 1, 2, 3): one list, defined with the formulas in cost
BUCKET_BYTES = DDP_BUCKET_BYTES  # the same buckets as DDP by default


class Stage0DP:
    """One rank of plain data parallelism over ``group`` (default: the world), the
    baseline ZeRO starts from. ``train_step(x, y)`` trains on this rank's slice of the
    global batch and returns its loss; ``full_state()`` gives the full parameters and
    averaged gradients. ``probe`` and ``tracer`` (see probes.py) watch it work."""

    def __init__(self, config: GPTConfig, bucket_bytes: int = BUCKET_BYTES, lr: float = 1e-3,
                 seed: int = 0, weight_decay: float = 0.0, group=None, probe=None, tracer=None):
        self.group = group
        self.dp, self.rank = dist.get_world_size(group), dist.get_rank(group)
        self.device = comm.device(group)
        self.probe = probe if probe is not None else MemoryProbe()
        self.tracer = tracer if tracer is not None else Tracer()
        # Initialise the full model from the seed, then shard it: the numbers do not
        # depend on dp (DESIGN.md). At scale one would initialise shard by shard.
        self.model = m = GPT(config, seed).to(self.device)
        self.units = [("embed", m.embed), *((f"block{i}", b) for i, b in enumerate(m.blocks)),
                      ("head", m.head)]
        self._slot = {}  # parameter -> (its flat buffer, its index there)
        self.flats = self.partition(bucket_bytes)
        self._next = 0  # the next flat buffer whose collective is to be launched
        self.optimizer = torch.optim.AdamW([f.shard for f in self.flats], lr=lr,
                                           betas=(0.9, 0.95), weight_decay=weight_decay)

    # --- layout: what this rank keeps -----------------------------------------------

    def shards(self) -> tuple[int, int]:
        """(number of shards, this rank's): plain DP shards nothing."""
        return 1, 0

    def partition(self, bucket_bytes: int) -> list[Flat]:
        """Buckets in the order backward produces the gradients: reversed."""
        named = list(self.model.named_parameters())[::-1]
        sizes = [p.numel() * p.element_size() for _, p in named]
        flats = [Flat(f"bucket{i}", self.model, [named[j][0] for j in idx], *self.shards())
                 for i, idx in enumerate(assign_buckets(sizes, bucket_bytes))]
        for f in flats:
            self.keep(f)
        return flats

    def keep(self, f: Flat) -> None:
        # the full parameters, as module Parameters that view one flat buffer
        f.flat = f.flatten(self.device)
        f.bind([torch.nn.Parameter(v) for v in f.views(f.flat)])
        f.shard = f.flat[f.lo:f.hi]  # what this rank updates
        self.keep_gradients(f)
        for i, p in enumerate(f.parameters()):
            self._slot[p] = (f, i)
            p.register_post_accumulate_grad_hook(self._grad_ready)

    def keep_gradients(self, f: Flat) -> None:
        # full gradients, accumulated by autograd in place into one flat buffer
        f.incoming = torch.zeros(f.padded, device=self.device)
        f.reduced = f.incoming[f.lo:f.hi]
        for p, g in zip(f.parameters(), f.views(f.incoming)):
            p.grad = g

    # --- one step -------------------------------------------------------------------

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.zero_grad()
        logits = self.forward(x.to(self.device))
        with trace.span("forward loss"):
            loss = loss_fn(logits, y.to(self.device))
        with self.tracer.backward():
            loss.backward()  # the hooks launch each bucket's collective meanwhile
        self.wait_for_gradients()
        with trace.span("optimizer"):
            self.optimizer.step()
        self.share_parameters()
        return loss.item()

    def zero_grad(self) -> None:
        for f in self.flats:
            f.incoming.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for label, fn in self.units:
            h = self.tracer.unit_output(self.run_unit(label, fn, h), label)
        return h

    def run_unit(self, label: str, fn, h: torch.Tensor) -> torch.Tensor:
        with trace.span(f"forward {label}"):
            return fn(h)

    def _grad_ready(self, p: torch.Tensor) -> None:
        self._slot[p][0].pending -= 1
        self._launch_ready()

    def _launch_ready(self) -> None:
        # Strictly in bucket order (like DDP's Reducer): collectives must be issued in
        # the same order on every rank, or they would pair up the wrong buffers.
        while self._next < len(self.flats) and self.flats[self._next].pending == 0:
            self.reduce(self.flats[self._next])
            self._next += 1

    def reduce(self, f: Flat) -> None:
        f.wait = collectives.all_reduce(f.incoming, self.group, f"{f.label} grads")

    def wait_for_gradients(self) -> None:
        if self._next < len(self.flats):  # a bucket never filled: it would hang the others
            raise RuntimeError(f"{sum(f.pending for f in self.flats)} parameters got no "
                               "gradient in this backward pass; every parameter must be used")
        with trace.span("wait for gradients", kind="wait"):
            for f in self.flats:
                self.finish(f)
        self._next = 0

    def finish(self, f: Flat) -> None:
        f.wait()
        f.shard.grad = f.reduced.div_(self.dp)  # sum of the ranks' mean losses -> batch mean
        f.pending, f.wait = len(f.names), None

    def share_parameters(self) -> None:
        pass  # every rank updated every parameter itself

    # --- what this rank holds, and the full model for checking ----------------------

    def states(self) -> dict:
        """The tensors this rank keeps between steps, by kind (what the probe counts)."""
        params = list(self.model.parameters())
        return {"params": [t for f in self.flats for t in (f.flat, f.shard)] + params,
                "grads": [t for f in self.flats for t in (f.incoming, f.reduced)]
                + [p.grad for p in params],
                "optimizer": optimizer_states(self.optimizer)}

    def full_state(self) -> tuple[dict, dict]:
        """Full parameters and averaged gradients of the last step, by name, on every
        rank (a collective: call it outside a traced step)."""
        params, grads = {}, {}
        for f in self.flats:
            params.update(f.named(self.gather(f, f.shard.detach())))
            grads.update(f.named(self.gather(f, f.shard.grad)))
        return params, grads

    def gather(self, f: Flat, shard: torch.Tensor) -> torch.Tensor:
        return shard  # nothing is sharded: this rank's part is the whole


class ZeroStage1(Stage0DP):
    """P_os (§5.1): each rank keeps the optimizer states of its shard only. Buckets are
    reduce-scattered during backward -- this rank updates only its shard, so only that
    shard needs summing: with the all-gather after the update, 2 Psi per step like
    plain DP, not the 3 Psi of all-reduce + all-gather."""

    def shards(self) -> tuple[int, int]:
        return self.dp, self.rank

    def reduce(self, f: Flat) -> None:
        # f.reduced may be this rank's slice of f.incoming: in place
        f.wait = collectives.reduce_scatter(f.reduced, f.incoming, self.group,
                                            f"{f.label} grads")

    def share_parameters(self) -> None:
        # in place: this rank's shard already sits where it belongs in the output
        waits = [collectives.all_gather(f.flat, f.shard, self.group, f"{f.label} params")
                 for f in self.flats]
        with trace.span("wait for parameters", kind="wait"):
            for wait in waits:
                wait()

    def gather(self, f: Flat, shard: torch.Tensor) -> torch.Tensor:
        full = torch.empty(f.padded, device=self.device)
        return comm.all_gather(full, shard.contiguous(), self.group, label="full state")


class ZeroStage2(ZeroStage1):
    """P_os+g (§5.2): each rank keeps the gradient of its shard only. A gradient is
    copied into its bucket the moment autograd has it, and dropped; a full bucket is
    reduce-scattered and freed once that is done. At most two buckets are in flight
    (DeepSpeed's double-buffered bucket): full gradients never all exist at once."""

    IN_FLIGHT = 2

    def keep_gradients(self, f: Flat) -> None:
        f.reduced = torch.zeros(f.hi - f.lo, device=self.device)  # all this rank keeps

    def zero_grad(self) -> None:
        pass  # gradients arrive in fresh buckets; f.reduced is overwritten

    def _grad_ready(self, p: torch.Tensor) -> None:
        f, i = self._slot[p]
        if f.incoming is None:  # the bucket's first gradient: allocate it
            f.incoming = self.probe.allocated("buckets", self.bucket(f))
        f.view(f.incoming, i).copy_(p.grad)
        p.grad = None  # the full gradient is dropped
        super()._grad_ready(p)

    def bucket(self, f: Flat) -> torch.Tensor:
        b = torch.empty(f.padded, device=self.device)
        b[f.numel:].zero_()  # the padding; every other element is a gradient's copy
        return b

    def reduce(self, f: Flat) -> None:
        super().reduce(f)
        in_flight = [g for g in self.flats[:self._next] if g.incoming is not None]
        for g in in_flight[:len(in_flight) + 1 - self.IN_FLIGHT]:
            with trace.span("wait for a bucket", kind="wait"):
                self.finish(g)

    def finish(self, f: Flat) -> None:
        if f.incoming is None:
            return  # finished during backward already
        super().finish(f)
        self.probe.freed("buckets", f.incoming.nbytes)
        f.incoming = None

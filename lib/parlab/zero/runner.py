"""One ZeRO training run, in the lab's run convention:

    result = zero.run(ZeroRun(config=GPTConfig(...), steps=3, batch_size=8, zero_stage=2),
                      world_size=4)

The stages are the ZeRO parts applied to the lab's GPT (Rajbhandari et al., SC 2020, §5):

  0  plain DP, the baseline: ``BucketedDP`` with the gradients as views of its buckets
  1  ``ShardedOptimizer(stage=1)``: optimizer states partitioned (P_os)
  2  ``ShardedOptimizer(stage=2)``: + gradients partitioned (P_os+g)
  3  ``FullyShard``: + parameters partitioned (P_os+g+p)

and "ddp" / "fsdp2" are PyTorch's own (``peers.py``). Stage 3 takes FSDP's options:
``reshard_after_forward``, ``prefetch`` and ``replicate`` > 1 (HSDP, ``hybrid.py``); the
FSDP2 peer the first and the last. A ``MemoryProbe`` and a ``Tracer`` watch them from
outside: bytes held by kind, and one compute span per unit."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import comm, trace
from ..cost import ZERO_STAGES
from ..data_parallel.ddp import DDP_BUCKET_BYTES, BucketedDP
from ..memory import optimizer_states
from ..model import ADAMW_BETAS, GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, train
from ..validate import check_bool, check_choice, check_int
from .fully_shard import FullyShard
from .hybrid import HybridShard, hsdp_groups
from .peers import PEERS, torch_peer
from .probes import MemoryProbe, Tracer
from .sharded import ShardedOptimizer

EXTRAS = ("comm_bytes", "bytes_sent", "buckets")


@dataclass(frozen=True)
class ZeroRun(TrainRun):
    """A ZeRO run: ``zero_stage`` 0 (plain DP), 1, 2 or 3, or a torch peer "ddp" /
    "fsdp2"; gradients bucketed by ``bucket_bytes`` (stages 0-2, and DDP's
    ``bucket_cap_mb``). The dp ranks each train on an equal slice of ``batch_size``.
    Stage 3 only: ``reshard_after_forward`` (False: keep the gathered weights until
    backward), ``prefetch`` (the next unit's all-gather issued early), ``replicate``
    (HSDP: that many replicas of a ZeRO-3 group of world_size / replicate ranks).
    Events are always kept (``trace=True``)."""
    zero_stage: int | str = 3
    bucket_bytes: int = DDP_BUCKET_BYTES
    trace: bool = True
    reshard_after_forward: bool = True
    prefetch: bool = False
    replicate: int = 1

    def check(self, world_size: int) -> None:
        super().check(world_size)
        check_choice("zero_stage", self.zero_stage, ZERO_STAGES + PEERS)
        check_int("bucket_bytes", self.bucket_bytes)
        check_bool("reshard_after_forward", self.reshard_after_forward)
        check_bool("prefetch", self.prefetch)
        check_int("replicate", self.replicate)
        fsdp = (not self.reshard_after_forward, self.replicate != 1)
        if (any(fsdp) or self.prefetch) and self.zero_stage not in (3, "fsdp2"):
            raise ValueError(f"reshard_after_forward, prefetch and replicate are ZeRO-3's "
                             f"options: zero_stage={self.zero_stage!r} must be 3 (or 'fsdp2')")
        if self.prefetch and self.zero_stage == "fsdp2":
            raise ValueError("prefetch=True is FullyShard's (zero_stage=3); FSDP2 prefetches "
                             "one unit ahead by itself")
        if world_size % self.replicate:
            raise ValueError(f"replicate={self.replicate} must divide world_size={world_size}")
        if self.batch_size % world_size:
            raise ValueError(f"dp=world_size={world_size} must divide batch_size="
                             f"{self.batch_size} (each rank trains on an equal slice)")


def units(gpt: GPT) -> dict:
    """The GPT's pieces, {label: (first module, last module)}, for per-unit spans."""
    out = {"embed": (gpt.wte, gpt.wpe or gpt.wte)}
    out.update({f"block{i}": (b, b) for i, b in enumerate(gpt.blocks)})
    return {**out, "head": (gpt.ln_f, gpt.lm_head)}


def apply_zero(gpt: GPT, run: ZeroRun, group=None, probe=None):
    """(the module to train, its optimizer) for ``run.zero_stage`` over ``group``."""
    stage, opt = run.zero_stage, dict(lr=run.lr, betas=ADAMW_BETAS, weight_decay=run.weight_decay)
    if stage in PEERS:
        fsdp = dict(reshard_after_forward=run.reshard_after_forward, replicate=run.replicate) \
            if stage == "fsdp2" else {}
        return torch_peer(stage, gpt, group, run.bucket_bytes, **fsdp, **opt)
    if stage == 0:
        model = BucketedDP(gpt, group, run.bucket_bytes, gradient_as_bucket_view=True)
        return model, torch.optim.AdamW(gpt.parameters(), **opt)
    if stage in (1, 2):
        return gpt, ShardedOptimizer(gpt.named_parameters(), torch.optim.AdamW, group, stage,
                                     run.bucket_bytes, probe=probe, **opt)
    kw = dict(probe=probe, reshard_after_forward=run.reshard_after_forward, prefetch=run.prefetch)
    if run.replicate > 1:
        model = HybridShard(gpt, *hsdp_groups(run.replicate, group), **kw)
    else:
        model = FullyShard(gpt, group, **kw)
    return model, torch.optim.AdamW(model.parameters(), **opt)


class ZeroRecipe(Recipe):
    def __init__(self, run: ZeroRun, group=None, probe=None, tracer=None):
        super().__init__(run, group)
        self.probe, self.tracer = probe or MemoryProbe(), tracer or Tracer()
        self.gpt = GPT(run.config, run.seed).to(comm.device(group))
        loss_fn = self.gpt.loss_fn

        def timed_loss(logits, targets):
            with trace.span("forward loss"):
                return loss_fn(logits, targets)
        self.gpt.loss_fn = timed_loss
        self.model, self.optimizer = apply_zero(self.gpt, run, group, self.probe)
        self.tracer.attach(units(self.gpt))  # after the part's hooks: a unit's gather comes first

    def zero_grad(self) -> None:
        self.probe.reset()
        super().zero_grad()

    def train_step(self, x, y):
        device = comm.device(self.group)
        _, loss = self.model(x.to(device), y.to(device))
        with self.tracer.backward():
            loss.backward()  # the parts' hooks launch their collectives meanwhile
        sync = getattr(self.model, "finish_backward", None) or getattr(
            self.optimizer, "reduce_gradients", None)
        if sync is not None:
            sync()
        return loss.item()

    def states(self) -> dict:
        if isinstance(self.model, (FullyShard, HybridShard)):
            held = self.model.states()
        else:
            params = list(self.gpt.parameters())
            held = {"params": [_local(p) for p in params],
                    "grads": [_local(p.grad) for p in params]}
            if isinstance(self.optimizer, ShardedOptimizer):
                held["grads"] += [s.grad for s in self.optimizer.shards()]
        return {**held, "optimizer": [_local(t) for t in optimizer_states(
            getattr(self.optimizer, "inner", self.optimizer))]}

    def memory(self) -> dict:
        return self.probe.held(self.states())

    def full_state(self):
        if isinstance(self.model, (FullyShard, HybridShard)):
            params, grads = self.model.full_state_dict(), self.model.full_grads()
        elif hasattr(self.model, "full_state"):  # a torch peer
            params, grads = self.model.full_state()
        else:
            params = {k: v.detach().cpu().clone() for k, v in self.gpt.state_dict().items()}
            grads = (self.optimizer.gathered_gradients()
                     if isinstance(self.optimizer, ShardedOptimizer) else
                     {n: p.grad.detach().cpu().clone() for n, p in self.gpt.named_parameters()})
        return (params, {n: g.cpu() for n, g in grads.items()}) if self.rank == 0 else (None, None)

    def report(self, events, windows) -> dict:
        sent = [0] * self.run.steps
        for e in events:
            if e["kind"] == "comm" and e["meta"].get("step") is not None:
                sent[e["meta"]["step"]] += e["bytes_sent"]
        buckets = getattr(self.optimizer, "buckets", None) or getattr(self.model, "buckets", None) \
            or getattr(getattr(self.model, "fsdp", self.model), "units", [])
        return {"comm_bytes": sent, "bytes_sent": sum(sent),
                "buckets": [len(getattr(b, "params", ())) for b in buckets]}


def _local(t):
    """A DTensor's local shard (FSDP2's parameters), or the tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t


def train_worker(run: ZeroRun, group=None) -> dict:
    """Rank side of :func:`run`, data parallel over ``group`` (default: the world)."""
    return train(ZeroRecipe(run, group))


def collect(run: ZeroRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one group's ``train_worker`` returns, in group rank order;
    ``memory`` per rank is what it held after the last step (bytes by kind, and the
    peaks of its transient buffers), ``ranks[r]["comm_bytes"]`` the traced bytes it
    sent in each step."""
    return RunResult.gather(run, ranks, EXTRAS)


run = make_run(ZeroRun, train_worker, collect)

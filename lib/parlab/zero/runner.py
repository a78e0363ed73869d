"""One ZeRO training run, in the lab's run convention:

    result = zero.run(ZeroRun(config=GPTConfig(...), steps=3, batch_size=8, zero_stage=2),
                      world_size=4)

The stages are the ZeRO parts applied to the lab's GPT (Rajbhandari et al., SC 2020, §5):

  0  plain DP, the baseline: ``BucketedDP`` with the gradients as views of its buckets
  1  ``ShardedOptimizer(stage=1)``: optimizer states partitioned (P_os)
  2  ``ShardedOptimizer(stage=2)``: + gradients partitioned (P_os+g)
  3  ``FullyShard``: + parameters partitioned (P_os+g+p)

and "ddp" / "fsdp2" / "zero_redundancy" are PyTorch's own (``peers.py``). Stage 3 takes
FSDP's options: ``reshard_after_forward``, ``prefetch`` and ``replicate`` > 1 (HSDP,
``hybrid.py``); the FSDP2 peer the first and the last. A ``MemoryProbe`` and a ``Tracer`` watch them from
outside: bytes held by kind, and one compute span per unit."""

from __future__ import annotations

from dataclasses import dataclass


from .. import comm, trace
from ..cost import ZERO_STAGES
from ..data_parallel.ddp import DDP_BUCKET_BYTES
from ..memory import optimizer_states
from ..model import GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, named_state, names_of, train
from ..validate import check_bool, check_choice, check_int
from .peers import PEERS, torch_peer
from .probes import MemoryProbe, Tracer
from .stages import KERNELS, apply_zero

EXTRAS = ("comm_bytes", "bytes_sent", "buckets")


@dataclass(frozen=True)
class ZeroRun(TrainRun):
    """A ZeRO run: ``zero_stage`` 0 (plain DP), 1, 2 or 3, or a torch peer "ddp" /
    "fsdp2" / "zero_redundancy"; gradients bucketed by ``bucket_bytes`` (stages 0-2, and
    DDP's ``bucket_cap_mb``). The dp ranks each train on an equal slice of ``batch_size``.
    Stage 3 only: ``reshard_after_forward`` (False: keep the gathered weights until
    backward), ``prefetch`` (the next unit's all-gather issued early), ``replicate``
    (HSDP: that many replicas of a ZeRO-3 group of world_size / replicate ranks).
    ``kernel``: AdamW's implementation, "fused", "foreach" or "for-loop" (None: each
    part's default, ``stages.KERNELS``): give ours and torch's the same when timing them.
    Events are always kept (``trace=True``)."""
    zero_stage: int | str = 3
    bucket_bytes: int = DDP_BUCKET_BYTES
    trace: bool = True
    reshard_after_forward: bool = True
    prefetch: bool = False
    replicate: int = 1
    kernel: str | None = None

    def check(self, world_size: int) -> None:
        super().check(world_size)
        check_choice("zero_stage", self.zero_stage, ZERO_STAGES + PEERS)
        check_int("bucket_bytes", self.bucket_bytes)
        check_bool("reshard_after_forward", self.reshard_after_forward)
        check_bool("prefetch", self.prefetch)
        check_int("replicate", self.replicate)
        check_choice("kernel", self.kernel, KERNELS + (None,))
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


class ZeroRecipe(Recipe):
    """The lab's GPT under ``run.zero_stage`` (``stages.apply_zero``) or torch's peer."""

    def __init__(self, run: ZeroRun, group=None, probe=None, tracer=None):
        super().__init__(run, group)
        self.probe = probe or MemoryProbe()
        self.tracer = tracer or Tracer()
        self.gpt = GPT(run.config, run.seed).to(comm.device(group))
        loss_fn = self.gpt.loss_fn

        def timed_loss(logits, targets):
            with trace.span("forward loss"):
                return loss_fn(logits, targets)
        self.gpt.loss_fn = timed_loss
        self.names = names_of(self.gpt)  # before ZeRO-3 takes the parameters out
        opt = dict(lr=run.lr, weight_decay=run.weight_decay, kernel=run.kernel)
        fsdp = dict(reshard_after_forward=run.reshard_after_forward, replicate=run.replicate)
        if run.zero_stage in PEERS:
            self.zero = torch_peer(run.zero_stage, self.gpt, group, run.bucket_bytes,
                                   **(fsdp if run.zero_stage == "fsdp2" else {}), **opt)
            self.names = names_of(self.gpt)  # FSDP2 swapped every parameter for a DTensor
        else:
            if run.zero_stage == 3:
                opt.update(fsdp, prefetch=run.prefetch)
            self.zero = apply_zero(self.gpt, run.zero_stage, group, bucket_bytes=run.bucket_bytes,
                                   probe=self.probe, **opt)
        self.model = self.zero.model
        self.optimizer = self.zero.optimizer
        self.tracer.attach(units(self.gpt))  # after the part's hooks: a unit's gather comes first

    def zero_grad(self) -> None:
        self.probe.reset()
        super().zero_grad()

    def train_step(self, x, y):
        device = comm.device(self.group)
        _, loss = self.model(x.to(device), y.to(device))
        with self.tracer.backward():
            loss.backward()  # the part's hooks reduce the gradients, finished by its end
        return loss.item()

    def states(self) -> dict:
        """What this rank keeps between steps: the parameters it holds (whole, or its
        shards), their gradients and the shards' (ZeRO-1/2), the optimizer's states."""
        params = list(self.model.parameters())
        return {"params": [_local(p) for p in params],
                "grads": [_local(p.grad) for p in params]
                + [_local(g) for _, g in self.zero.sync.held_gradients()],
                "optimizer": [_local(t) for t in optimizer_states(self.optimizer)]}

    def memory(self) -> dict:
        return self.probe.held(self.states())

    def full_state(self):  # a collective: ZeRO's shards gathered, rank 0 keeps them
        sync = self.zero.sync
        values = sync.full_tensors()
        grads = sync.full_tensors(grads=True)
        if self.rank != 0:
            return None, None
        buffers = {b: b for b in self.gpt.buffers() if id(b) in self.names}
        return named_state(self.names, {**values, **buffers}, grads)

    def report(self, events, windows) -> dict:
        sent = [0] * self.run.steps
        for e in events:
            if e["kind"] == "comm" and e["meta"].get("step") is not None:
                sent[e["meta"]["step"]] += e["bytes_sent"]
        return {"comm_bytes": sent, "bytes_sent": sum(sent),
                "buckets": [len(g) for g in self.zero.sync.collective_groups()]}


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

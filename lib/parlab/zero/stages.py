"""ZeRO stages 1, 2 and 3: data parallelism without replicating the model states.

Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", SC 2020. Plain data parallelism keeps on every rank the parameters, the
gradients and the optimizer states (for AdamW: exp_avg and exp_avg_sq). ZeRO-DP
(§5) partitions them over the dp ranks, each rank owning a contiguous 1/dp shard:

  stage 1 (P_os)      optimizer states sharded. Full gradients are still computed
                      and held; a reduce-scatter leaves each rank the summed
                      gradient of its own shard, it updates that shard, and an
                      all-gather sends the updated parameters to everyone.
  stage 2 (P_os+g)    + gradients sharded: each unit's gradient is reduce-scattered
                      as soon as backward has produced it, then dropped (§5.2).
  stage 3 (P_os+g+p)  + parameters sharded: a unit's full parameters exist only
                      while it runs -- all-gathered just before its forward and
                      freed after it, all-gathered again for its backward (§5.3).
  stage 0             plain data parallelism (all-reduce), the baseline.

Traffic per step (§7.2): stages 0-2 move 2 Psi per rank, a reduce-scatter plus an
all-gather (an all-reduce *is* those two); stage 3 moves 3 Psi, the parameters
being gathered twice (``cost.zero_comm_volume``). A rank's memory is
``cost.zero_memory``. Both are measured here: bytes of the tensors a rank holds,
and the bytes of every traced collective.

Layout. Parameters are grouped into *units* -- the embeddings, each block, the head
-- the granularity at which stage 2 reduce-scatters and stage 3 gathers (FSDP
calls them "FSDP units"). Each unit's parameters are flattened into one fp32
buffer, padded to a multiple of dp, so every rank's shard is one contiguous slice.

Exactness. The optimizer is torch.optim.AdamW run over the shards: AdamW is
elementwise (Loshchilov & Hutter 2019), so updating a slice with the slice's
gradient is the same arithmetic as updating the whole tensor. Results differ from
the single-device reference only by the order in which gradients are summed.
"""

from __future__ import annotations

import math
import weakref

import torch
import torch.distributed as dist

from .. import comm, trace
from ..model import GPT, GPTConfig, loss_fn
from ..trace import backward_segments

STAGES = (0, 1, 2, 3)




class Unit:
    """The parameters gathered and reduced together (embeddings, one block, or the
    head): names, shapes and offsets in one flat buffer of ``padded`` elements."""

    def __init__(self, label, module, prefix, fn, dp, rank, names=None):
        self.label, self.module, self.prefix, self.fn = label, module, prefix, fn
        self.names = names or [n for n, _ in module.named_parameters()]  # relative to module
        self.shapes = [module.get_parameter(n).shape for n in self.names]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.numel = sum(self.sizes)
        self.padded = -(-self.numel // dp) * dp  # a multiple of dp: equal shards
        self.lo, self.hi = rank * self.padded // dp, (rank + 1) * self.padded // dp

    def flatten(self, device) -> torch.Tensor:
        flat = torch.zeros(self.padded, device=device)
        torch.cat([self.module.get_parameter(n).detach().flatten() for n in self.names],
                  out=flat[:self.numel])
        return flat

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        return [v.view(s) for v, s in zip(flat[:self.numel].split(self.sizes), self.shapes)]

    def bind(self, tensors) -> None:
        """Make the module's attributes point at ``tensors`` (or None: hold nothing)."""
        for name, t in zip(self.names, tensors):
            path, _, attr = name.rpartition(".")
            mod = self.module.get_submodule(path)
            mod._parameters.pop(attr, None)
            setattr(mod, attr, t)


class ZeroDP:
    """One rank's model and optimizer under ZeRO stage ``stage`` (0 = plain DP).

    ``train_step(x, y)`` takes this rank's slice of the global batch and returns its
    loss; afterwards ``memory`` holds the bytes this rank keeps (params / grads /
    optimizer, plus for stage 3 the peak of gathered parameters)."""

    def __init__(self, config: GPTConfig, stage: int, lr: float = 1e-3, seed: int = 0,
                 weight_decay: float = 0.0, group=None):
        if isinstance(stage, bool) or stage not in STAGES:
            raise ValueError(f"stage={stage!r} must be one of {STAGES} (0 = plain DP)")
        self.stage, self.group = stage, group
        self.dp, self.rank = dist.get_world_size(group), dist.get_rank(group)
        self.device = comm.device(group)
        # Initialise the full model from the seed, then shard it: the numbers do not
        # depend on dp (DESIGN.md). At scale one would initialise shard by shard.
        model = self.model = GPT(config, seed).to(self.device)
        dp, r = self.dp, self.rank
        self.units = [Unit("embed", model, "", model.embed, dp, r, ["wte.weight", "wpe.weight"])]
        self.units += [Unit(f"block{i}", b, f"blocks.{i}.", b, dp, r)
                       for i, b in enumerate(model.blocks)]
        head = [n for n, _ in model.named_parameters() if n.startswith(("ln_f.", "lm_head."))]
        self.units += [Unit("head", model, "", model.head, dp, r, head)]
        self._live = self._peak = 0  # bytes of gathered parameters held now / at most (stage 3)
        self._gathered = []  # weak references to them: tests check they really are freed
        for u in self.units:
            flat = u.flatten(self.device)
            if stage == 3:
                u.shard = flat[u.lo:u.hi].clone().requires_grad_()  # all this rank keeps
                u.bind([None] * len(u.names))  # the full tensors are freed here
                u.regathered = u.forward_ptr = None
                continue
            u.flat = flat  # replicated parameters, as module Parameters viewing the flat buffer
            u.bind([torch.nn.Parameter(v) for v in u.views(flat)])
            u.params = [u.module.get_parameter(n) for n in u.names]
            u.shard = flat if stage == 0 else flat[u.lo:u.hi]  # what this rank updates
            if stage <= 1:  # full gradients accumulate in place into one flat buffer
                u.flat_grad = torch.zeros(u.padded, device=self.device)
                for p, g in zip(u.params, u.views(u.flat_grad)):
                    p.grad = g
            else:  # stage 2: reduce-scatter each unit as soon as its last gradient is in
                for p in u.params:
                    p.register_post_accumulate_grad_hook(lambda p, u=u: self._grad_ready(u))
        self.optimizer = torch.optim.AdamW([u.shard for u in self.units], lr=lr,
                                           betas=(0.9, 0.95), weight_decay=weight_decay)
        self.memory = {}
        # While tracing: (time, unit) where each unit's backward begins -- to trace the
        # compute between the collectives.
        self._bwd_marks = []

    # --- one step ---------------------------------------------------------------------

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        for u in self.units:
            if self.stage <= 1:
                u.flat_grad.zero_()
            else:
                u.shard.grad, u.ready = None, 0
        self._peak = 0
        logits = self.forward(x)
        with trace.span("forward loss"):
            loss = loss_fn(logits, y.to(self.device))
        t0 = trace.now()
        loss.backward()  # stages 2 and 3 reduce-scatter during backward
        if trace.is_recording():  # compute spans between the collectives, per unit
            comms = [(e["start"], e["end"]) for e in trace.recorded(since=t0, kind="comm")]
            for start, end, label in backward_segments(t0, trace.now(), comms,
                                                        self._bwd_marks):
                trace.record("compute", f"backward {label}", start, end)
        for u in self.units if self.stage <= 1 else []:
            self._reduce_after_backward(u)
        with trace.span("optimizer"):
            self.optimizer.step()
        for u in self.units if self.stage in (1, 2) else []:
            # in place: this rank's shard is already where it belongs in the output
            comm.all_gather(u.flat, u.flat[u.lo:u.hi], self.group, label=f"{u.label} params")
        self.memory = self._held_bytes()
        return loss.item()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(self.device)
        self._bwd_marks = []
        for u in self.units:
            if self.stage == 3:
                h = self._run_unit(u, h)
            else:
                with trace.span(f"forward {u.label}"):
                    h = u.fn(h)
            if trace.is_recording() and h.requires_grad:  # when u's backward begins
                h.register_hook(lambda g, u=u: self._bwd_marks.append((trace.now(), u.label)))
        return h

    def _reduce_after_backward(self, u: Unit) -> None:
        """Stage 0: all-reduce the full gradient. Stage 1: reduce-scatter it -- this
        rank only updates its shard, so it only needs that shard summed (2 Psi per
        step with the all-gather, not the 3 Psi of all-reduce + all-gather)."""
        g = u.flat_grad
        if self.stage == 0:
            comm.all_reduce(g, group=self.group, label=f"{u.label} grads")
        else:
            g = g[u.lo:u.hi]  # in place: output = input + rank * shard (NCCL allows it too)
            comm.reduce_scatter(g, u.flat_grad, group=self.group, label=f"{u.label} grads")
        u.shard.grad = g.div_(self.dp)  # sum of per-rank mean losses -> mean over the batch

    def _grad_ready(self, u: Unit) -> None:
        """Stage 2, during backward: once every parameter of ``u`` has its gradient,
        reduce-scatter them and drop the full gradients (a bucket = a unit)."""
        u.ready += 1
        if u.ready < len(u.params):
            return
        u.shard.grad = self._reduce_scatter([p.grad for p in u.params], u)
        for p in u.params:
            p.grad = None

    def _reduce_scatter(self, grads, u: Unit) -> torch.Tensor:
        # One flat copy of the unit's gradients, for one collective: a transient second
        # copy (DeepSpeed copies each gradient into a preallocated bucket as it arrives).
        flat = torch.zeros(u.padded, device=self.device)
        torch.cat([g.flatten() if g is not None else torch.zeros(n, device=self.device)
                   for g, n in zip(grads, u.sizes)], out=flat[:u.numel])
        shard = torch.empty(u.hi - u.lo, device=self.device)
        comm.reduce_scatter(shard, flat, group=self.group, label=f"{u.label} grads")
        return shard.div_(self.dp)

    # --- stage 3: parameters that exist only while their unit runs ----------------------

    def _all_gather_unit(self, u: Unit, why: str) -> torch.Tensor:
        full = torch.empty(u.padded, device=self.device)
        comm.all_gather(full, u.shard.detach(), self.group, label=f"{u.label} params ({why})")
        self._live += full.nbytes
        self._peak = max(self._peak, self._live)
        self._gathered = [r for r in self._gathered if r() is not None] + [weakref.ref(full)]
        return full

    def _release(self, u: Unit) -> None:
        self._live -= u.padded * u.shard.element_size()

    def gathered_alive(self) -> int:
        """Bytes of gathered parameter buffers still alive (ask after a moment: gloo
        drops its reference to a buffer on its own thread, just after the call)."""
        return sum(r().nbytes for r in self._gathered if r() is not None)

    def _run_unit(self, u: Unit, h: torch.Tensor) -> torch.Tensor:
        params = _GatherParams.apply(u.shard, u, self)
        u.bind(params)
        u.forward_ptr = params[0].untyped_storage().data_ptr()
        # Autograd would keep the weights it needs for backward (e.g. a Linear's
        # weight, for the input's gradient) and with them the gathered buffer. These
        # hooks store a (offset, shape, stride) note instead; backward re-gathers.
        hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: self._pack(u, t),
                                                         lambda s: self._unpack(u, s))
        with hooks, trace.span(f"forward {u.label}"):
            out = u.fn(h)
        u.bind([None] * len(u.names))  # no reference left: the full parameters are freed
        u.forward_ptr = None
        self._release(u)
        return out

    def _pack(self, u: Unit, t: torch.Tensor):
        if u.forward_ptr is not None and t.untyped_storage().data_ptr() == u.forward_ptr:
            return ("param", t.storage_offset(), t.shape, t.stride())
        return t  # an activation: kept as autograd would

    def _unpack(self, u: Unit, saved):
        if not (isinstance(saved, tuple) and saved[:1] == ("param",)):
            return saved
        if u.regathered is None:  # the first op of this unit's backward that needs weights
            u.regathered = self._all_gather_unit(u, "backward")
        _, offset, shape, stride = saved
        return u.regathered.as_strided(shape, stride, offset)

    # --- what this rank holds, and the full model for checking ------------------------

    def _held_bytes(self) -> dict:
        def storages(ts):  # unique storages: a view of a flat buffer is not extra memory
            return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                        for t in ts if t is not None}.values())
        params = [u.shard if self.stage == 3 else u.flat for u in self.units]
        grads = [u.shard.grad if self.stage >= 2 else u.flat_grad for u in self.units]
        grads += [p.grad for p in self.model.parameters()]  # stage 2 must have dropped these
        states = [v for s in self.optimizer.state.values() for v in s.values()
                  if isinstance(v, torch.Tensor)]
        out = {"params": storages(params + list(self.model.parameters())),
               "grads": storages(grads), "optimizer": storages(states)}
        out["total"] = out["params"] + out["grads"] + out["optimizer"]
        out["gathered_peak"] = self._peak if self.stage == 3 else 0
        return out

    def full_state(self) -> tuple[dict, dict]:
        """Full parameters and (averaged) gradients of the last step, by name, on
        every rank: an all-gather of the shards (call it outside a traced step)."""
        params, grads = {}, {}
        for u in self.units:
            for out, shard in ((params, u.shard.detach()), (grads, u.shard.grad)):
                flat = shard
                if self.stage != 0:
                    flat = torch.empty(u.padded, device=self.device)
                    comm.all_gather(flat, shard.contiguous(), self.group, label="full state")
                out.update({u.prefix + n: v.cpu().clone() for n, v in zip(u.names, u.views(flat))})
        return params, grads


class _GatherParams(torch.autograd.Function):
    """Stage 3's autograd edge between a unit's shard and its full parameters.
    forward: all-gather the shard, return the full parameters (views of one buffer).
    backward: receives their gradients, reduce-scatters them into the shard's
    gradient and frees the parameters re-gathered for this unit's backward --
    autograd runs it after every op that used them."""

    @staticmethod
    def forward(ctx, shard, unit, zero):
        ctx.unit, ctx.zero = unit, zero
        return tuple(unit.views(zero._all_gather_unit(unit, "forward")))

    @staticmethod
    def backward(ctx, *grads):
        if ctx.unit.regathered is not None:
            ctx.unit.regathered = None
            ctx.zero._release(ctx.unit)
        return ctx.zero._reduce_scatter(grads, ctx.unit), None, None

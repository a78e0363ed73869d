"""ZeRO stage 3, P_os+g+p (Rajbhandari et al., SC 2020, §5.3): parameters partitioned
too. A rank stores only its shard of each unit -- the embeddings, each block, the head
(FSDP's "units") -- and a unit's full parameters exist only while it runs:
all-gathered just before its forward and freed after it, all-gathered again for its
backward and freed after that. Its gradient is then reduce-scattered as stage 2 does
(asynchronously, while backward goes on with the unit before it), so the reduce-scatter
granularity is the unit, not a bucket of ``bucket_bytes``.
"""

from __future__ import annotations

import torch

from .. import comm, trace
from .flat import Flat
from .stages import ZeroStage2


class ZeroStage3(ZeroStage2):
    """ZeroStage2 whose parameters are sharded as well (see the module docstring)."""

    def partition(self, bucket_bytes: int) -> list[Flat]:
        """One flat buffer per unit, listed in the order backward reaches them."""
        names = [n for n, _ in self.model.named_parameters()]
        prefixes = {"embed": ("wte.", "wpe."), "head": ("ln_f.", "lm_head.")}
        prefixes.update({f"block{i}": f"blocks.{i}." for i in range(len(self.model.blocks))})
        flats = [Flat(label, self.model, [n for n in names if n.startswith(prefixes[label])],
                      *self.shards()) for label, _ in reversed(self.units)]
        self._unit = {f.label: f for f in flats}
        for f in flats:
            self.keep(f)
        return flats

    def keep(self, f: Flat) -> None:
        f.shard = f.flatten(self.device)[f.lo:f.hi].clone().requires_grad_()  # all it keeps
        f.bind([None] * len(f.names))  # the full tensors are freed here
        self.keep_gradients(f)
        f.regathered = f.forward_ptr = None

    def share_parameters(self) -> None:
        pass  # each unit gathers the parameters it needs when it runs

    # --- parameters that exist only while their unit runs ---------------------------

    def run_unit(self, label: str, fn, h: torch.Tensor) -> torch.Tensor:
        f = self._unit[label]
        params = _GatherParams.apply(f.shard, f, self)
        f.bind(params)
        f.forward_ptr = params[0].untyped_storage().data_ptr()
        # Autograd would keep the weights it needs for backward (e.g. a Linear's
        # weight, for the input's gradient) and with them the gathered buffer. These
        # hooks store a (offset, shape, stride) note instead; backward re-gathers.
        hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: self._pack(f, t),
                                                         lambda s: self._unpack(f, s))
        with hooks, trace.span(f"forward {label}"):
            out = fn(h)
        f.bind([None] * len(f.names))  # no reference left: the full parameters are freed
        f.forward_ptr = None
        self.probe.freed("gathered", f.padded * f.shard.element_size())
        return out

    def all_gather(self, f: Flat, why: str) -> torch.Tensor:
        full = self.probe.allocated("gathered", torch.empty(f.padded, device=self.device))
        return comm.all_gather(full, f.shard.detach(), self.group, label=f"{f.label} params ({why})")

    def _pack(self, f: Flat, t: torch.Tensor):
        if f.forward_ptr is not None and t.untyped_storage().data_ptr() == f.forward_ptr:
            return ("param", t.storage_offset(), t.shape, t.stride())
        return t  # an activation: kept as autograd would

    def _unpack(self, f: Flat, saved):
        if not (isinstance(saved, tuple) and saved[:1] == ("param",)):
            return saved
        if f.regathered is None:  # the first op of this unit's backward that needs weights
            f.regathered = self.all_gather(f, "backward")
        _, offset, shape, stride = saved
        return f.regathered.as_strided(shape, stride, offset)

    def gradients_in(self, f: Flat, grads) -> None:
        """The unit's backward is done: free its re-gathered parameters and hand its
        gradients to stage 2's bucket machinery (the unit is one bucket)."""
        if f.regathered is not None:
            f.regathered = None
            self.probe.freed("gathered", f.padded * f.shard.element_size())
        f.incoming = self.probe.allocated("buckets", self.bucket(f))
        torch.cat([g.flatten() if g is not None else torch.zeros(n, device=self.device)
                   for g, n in zip(grads, f.sizes)], out=f.incoming[:f.numel])
        f.pending = 0
        self._launch_ready()


class _GatherParams(torch.autograd.Function):
    """Stage 3's autograd edge between a unit's shard and its full parameters.
    forward: all-gather the shard, return the full parameters (views of one buffer).
    backward: receives their gradients -- autograd runs it after every op that used
    them -- and passes them on to be reduce-scattered into the shard's gradient."""

    @staticmethod
    def forward(ctx, shard, unit, zero):
        ctx.unit, ctx.zero = unit, zero
        return tuple(unit.views(zero.all_gather(unit, "forward")))

    @staticmethod
    def backward(ctx, *grads):
        ctx.zero.gradients_in(ctx.unit, grads)
        return None, None, None  # the shard's gradient is set when its reduce-scatter ends

"""ZeRO stage 3 / FSDP over any module: ``FullyShard(module, group)``.

Rajbhandari et al., SC 2020, §5.3 (P_os+g+p): the parameters are partitioned too. A rank
stores only its shard of every parameter (zero/flat.py: chunk r of each, FSDP2's
per-parameter sharding) and a *unit*'s full parameters exist only while the unit runs:
all-gathered by a hook just before its forward and freed after it, all-gathered again
for its backward and freed after that. The unit's gradients are then reduce-scattered
(asynchronously, while backward goes on with the unit before it), so each rank receives
the averaged gradient of its own shards. Traffic: 3 Psi per step, against 2 Psi for
plain data parallelism (§7.2.2): the parameters are gathered twice.

Units (FSDP's wrapping policy): by default every child of every ``nn.ModuleList`` (a
transformer's blocks), and the root -- the rest: embeddings, final norm, head. A
parameter used by two units (tied weights) belongs to the root, which is gathered for
the whole forward. The parameters the optimizer sees are the shards
(``FullyShard.parameters()``): when backward returns, each trainable one has the
averaged gradient of its own shape and dtype (the family's interface,
data_parallel/grad_sync.py), so any torch optimizer steps it.

Gradient accumulation: under ``no_sync()`` full gradients add up on each rank (FSDP2's
set_requires_gradient_sync(False)); the next backward outside, or ``finish_grad_sync()``,
sends them. ``compute_dtype`` (FSDP2's MixedPrecisionPolicy param_dtype = reduce_dtype): the shards
stay fp32 (the master weights); what is gathered, computed with and reduce-scattered is
cast to it, and so are a unit's floating-point inputs. ``reshard_after_forward=False``
keeps a unit's gathered parameters from its forward to its backward (FSDP2's option:
one all-gather fewer, the memory held longer; ZeRO-2 with sharded storage). ``prefetch``
issues the next unit's all-gather before this unit computes (zero/prefetch.py).
"""

from __future__ import annotations


import torch
import torch.distributed as dist
import torch.nn as nn

from .. import comm, trace
from ..data_parallel.grad_sync import GradSync, broadcast_state, used_anywhere
from ..mesh import check_group
from ..validate import check_bool, check_choice
from .flat import ShardLayout
from .prefetch import Prefetcher


class _Unit:
    """One unit: its module, its parameters (each with every (module, attribute) that
    holds it) and this rank's shards of them."""

    def __init__(self, label, module, params, slots, parts, index):
        self.label = label
        self.module = module
        self.params = params
        self.slots = slots
        self.layout = ShardLayout([p.shape for p in params], parts, index)
        self.shards = [nn.Parameter(self.layout.chunk(p.detach(), i), requires_grad=p.requires_grad)
                       for i, p in enumerate(params)]
        self.held = None      # full gradients accumulated under no_sync
        self.waits = []       # reduce-scatters in flight
        self.used = [False] * len(params)  # got a gradient this step (on this rank)


class FullyShard(GradSync, nn.Module):
    """ZeRO-3 over ``group`` (default: the world) for ``module``; see the module doc.
    ``units``: submodules to gather one at a time (default: the children of every
    ModuleList); ``probe``: a ``zero.MemoryProbe`` told of every gathered buffer."""

    def __init__(self, module: nn.Module, group=None, units=None, compute_dtype=None,
                 reshard_after_forward: bool = True, probe=None, prefetch: bool = False):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise ValueError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        check_choice("compute_dtype", compute_dtype, (None, torch.float32, torch.bfloat16,
                                                      torch.float16))
        self.reshard = check_bool("reshard_after_forward", reshard_after_forward)
        self.group = check_group(group)
        self.dtype = compute_dtype
        self.probe = probe
        self.dp = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        broadcast_state(module, group)  # shard the first rank's weights: replicas agree
        self.module = module
        self.units = self._units(module, units)
        self.shards = nn.ParameterList([s for u in self.units for s in u.shards])
        self.prefetcher = Prefetcher(self) if check_bool("prefetch", prefetch) else None
        for u in self.units:
            for slots in u.slots:  # the full tensors leave the module: it holds shards only
                for owner, attr in slots:
                    del owner._parameters[attr]
                    setattr(owner, attr, None)
            u.module.register_forward_pre_hook(lambda m, a, k, u=u: self._before(u, a, k),
                                               with_kwargs=True)
            u.module.register_forward_hook(lambda m, a, out, u=u: self._after(u), always_call=True)

    def _units(self, module, units) -> list[_Unit]:
        names = {m: n for n, m in module.named_modules()}
        if units is None:
            units = [c for m in module.modules() if isinstance(m, nn.ModuleList) for c in m]
        for u in units:
            if u not in names or u is module:
                raise ValueError(f"units must be submodules of module, got {type(u).__name__}")
        label = {u: names[u] for u in units}
        label[module] = ""  # the root: whatever no other unit owns alone
        owners = {}
        slots = {}
        self.names = {}
        for name, p in module.named_parameters(remove_duplicate=False):
            owner_name, _, attr = name.rpartition(".")
            inner = max((u for u in label if name.startswith(label[u] + ".") or u is module),
                        key=lambda u: len(label[u]))
            owners.setdefault(p, set()).add(inner)
            slots.setdefault(p, []).append((module.get_submodule(owner_name), attr))
            self.names.setdefault(p, []).append(name)
        out = []
        for u in list(units) + [module]:
            mine = [p for p in owners if (next(iter(owners[p])) if len(owners[p]) == 1
                                          else module) is u]
            if mine:
                out.append(_Unit(label[u], u, mine, [slots[p] for p in mine], self.dp, self.rank))
        return out

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    # --- forward: gather, compute, free ---------------------------------------------
    def _all_gather(self, u: _Unit, why: str, async_op: bool = False):
        """The unit's full flat buffer (async_op: and the ``wait()`` to call before use)."""
        dtype = self.dtype or u.shards[0].dtype
        full = torch.empty(self.dp * u.layout.block, dtype=dtype, device=u.shards[0].device)
        own, label = u.layout.own([s.detach() for s in u.shards], dtype), \
            f"{u.label or 'root'} params ({why})"
        if async_op:
            return full, comm.all_gather_async(full, own, self.group, label=label)
        return comm.all_gather(full, own, self.group, label=label)

    def _gather(self, u: _Unit, why: str) -> list[torch.Tensor]:
        full = self.prefetcher.take(u, why) if self.prefetcher is not None else None
        if full is None:
            full = self._all_gather(u, why)
        if self.prefetcher is not None:  # the next unit's, before this one computes
            self.prefetcher.issue_after(u, why)
        params = u.layout.unpack(full)  # each its own tensor: freed one by one
        if self.probe is not None:
            for t in params:
                self.probe.allocated("gathered", t)
        return params

    def _before(self, u: _Unit, args, kwargs):
        gathered = _Gathered(self, u)
        params = _Unshard.apply(gathered, *u.shards)
        for slots, t in zip(u.slots, params):
            for owner, attr in slots:
                setattr(owner, attr, t)
        if self.reshard:
            # Autograd would keep the weights it needs for backward (a Linear's weight,
            # for the input's gradient) and with them the gathered buffer. These hooks
            # store a note instead; backward gathers the unit again.
            gathered.hooks = torch.autograd.graph.saved_tensors_hooks(gathered.pack,
                                                                      gathered.unpack)
            gathered.hooks.__enter__()
        u.open = gathered
        if self.dtype is not None:  # a unit computes in compute_dtype: cast its inputs
            cast = lambda t: t.to(self.dtype) if torch.is_tensor(t) and t.is_floating_point() else t  # noqa: E731
            return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
        return None

    def _after(self, u: _Unit) -> None:
        gathered = getattr(u, "open", None)
        u.open = None
        if gathered is None:
            return
        if gathered.hooks is not None:
            gathered.hooks.__exit__(None, None, None)
        for slots in u.slots:  # no reference left here: the full parameters are freed
            for owner, attr in slots:
                setattr(owner, attr, None)
        if self.reshard:  # (kept otherwise: autograd holds them until the unit's backward)
            self._freed(u, gathered)

    def _freed(self, u: _Unit, gathered) -> None:
        if self.probe is not None:
            self.probe.freed("gathered", sum(u.layout.numels) * gathered.itemsize)

    # --- backward: the unit's gradients, reduce-scattered into the shards -----------
    def _gradients_in(self, u: _Unit, gathered, grads) -> None:
        self.grad_ready()
        if gathered.regathered is not None or not self.reshard:
            gathered.regathered = None
            self._freed(u, gathered)
        for i, g in enumerate(grads):
            u.used[i] = u.used[i] or g is not None
        grads = [None if not s.requires_grad else g for s, g in zip(u.shards, grads)]
        if u.held is not None:  # what no_sync accumulated joins this backward's share
            grads = [h if g is None else (g if h is None else g.float() + h)
                     for g, h in zip(grads, u.held)]
            u.held = None
        if not self.sync:
            u.held = [None if g is None else g.float() for g in grads]
            return
        self._launch(u, grads)

    def _launch(self, u: _Unit, grads) -> None:
        dtype = self.dtype or u.shards[0].dtype
        flat = u.layout.pack(grads, dtype, u.shards[0].device)
        out = torch.empty(u.layout.block, dtype=dtype, device=flat.device)
        arrived = comm.reduce_scatter_async(out, flat, self.group,
                                            f"{u.label or 'root'} grads")
        u.waits.append((arrived, out))

    def _finish(self) -> None:
        """Send what ``no_sync`` held, wait for every reduce-scatter; each trainable
        shard's gradient is then the average over the group of its part of the gradient
        (summed over micro-batches)."""
        if self.prefetcher is not None:
            self.prefetcher.drain()  # a gather no unit asked for: the shards change next
        for u in self.units:
            if u.held is not None:
                held = u.held
                u.held = None
                self._launch(u, held)
        with trace.span("wait for gradients", kind="wait"):
            for u in self.units:
                for arrived, out in u.waits:
                    arrived()
                    for s, piece in zip(u.shards, u.layout.split(out.float().div_(self.dp))):
                        if s.requires_grad:
                            s.grad = piece.clone() if s.grad is None else s.grad.add_(piece)
                u.waits = []
        # A parameter no rank used keeps no gradient (the ranks agree after the last
        # reduce-scatter: one MAX all-reduce of a byte each), so an optimizer skips it.
        pairs = [(u, i) for u in self.units for i, s in enumerate(u.shards) if s.requires_grad]
        for (u, i), anywhere in zip(pairs, used_anywhere([u.used[i] for u, i in pairs], self.group)):
            if not anywhere:
                u.shards[i].grad = None
        for u in self.units:
            u.used = [False] * len(u.params)

    # --- the full model, for checking and checkpoints -------------------------------
    @torch.no_grad()
    def gather_full(self, grads: bool = False) -> dict:
        """{original parameter: its full value (or averaged gradient)}: a collective."""
        out = {}
        for u in self.units:
            tensors = [s.grad if grads else s.detach() for s in u.shards]
            if all(t is None for t in tensors):
                continue
            own = u.layout.own([t if t is not None else torch.zeros_like(s)
                                for t, s in zip(tensors, u.shards)])
            full = own.new_empty(self.dp * own.numel())
            comm.all_gather(full, own, self.group, label="full state")
            out.update({p: t for p, t, s in zip(u.params, u.layout.unpack(full), tensors)
                        if s is not None})
        return out

    def full_state_dict(self) -> dict:
        """Every parameter, full, under its names in the module (a tied one under each),
        and the module's buffers: a collective (every rank gets it)."""
        out = {n: t.cpu() for p, t in self.gather_full().items() for n in self.names[p]}
        return {**out, **{k: v.detach().cpu().clone() for k, v in self.module.state_dict().items()}}

    def full_grads(self) -> dict:
        """Every trainable parameter's averaged gradient, full, by name (a collective)."""
        return {n: t.cpu() for p, t in self.gather_full(grads=True).items() for n in self.names[p]}

    def full_tensors(self, grads: bool = False) -> dict:
        """{original parameter: its full value, or its full averaged gradient}: a
        collective (the name the family shares for ``gather_full``)."""
        return self.gather_full(grads)

    def collective_groups(self) -> list[list]:
        return [u.params for u in self.units]

    def held_gradients(self) -> list:
        """(original parameter, the gradient of this rank's shard of it)."""
        return [(p, s.grad) for u in self.units for p, s in zip(u.params, u.shards)]

    def states(self) -> dict:
        """What this rank keeps between steps: its shards and their gradients."""
        return {"params": list(self.shards), "grads": [s.grad for s in self.shards]}


class _Gathered:
    """One forward of one unit: the saved-tensor notes and the backward's re-gather."""

    def __init__(self, fsdp: FullyShard, unit: _Unit):
        self.fsdp = fsdp
        self.unit = unit
        self.hooks = None
        self.regathered = None
        self.ptrs: dict = {}
        self.itemsize = torch.empty((), dtype=fsdp.dtype or unit.shards[0].dtype).element_size()

    def pack(self, t):
        i = self.ptrs.get(t.untyped_storage().data_ptr())
        return t if i is None else ("param", i, t.storage_offset(), t.shape, t.stride())

    def unpack(self, saved):
        if not (isinstance(saved, tuple) and saved[:1] == ("param",)):
            return saved
        if self.regathered is None:  # the first op of this unit's backward that needs weights
            self.regathered = self.fsdp._gather(self.unit, "backward")
        _, i, offset, shape, stride = saved
        return self.regathered[i].as_strided(shape, stride, offset)


class _Unshard(torch.autograd.Function):
    """The autograd edge between a unit's shards and its full parameters. forward:
    all-gather, return the full parameters; backward: receives their gradients -- once
    every op that used them is done -- and reduce-scatters them into the shards."""

    @staticmethod
    def forward(ctx, gathered, *shards):
        ctx.gathered = gathered
        ctx.set_materialize_grads(False)  # an unused parameter's gradient stays None
        full = gathered.fsdp._gather(gathered.unit, "forward")
        gathered.ptrs = {t.untyped_storage().data_ptr(): i for i, t in enumerate(full)}
        ctx.mark_non_differentiable(*[t for t, s in zip(full, shards) if not s.requires_grad])
        return tuple(full)

    @staticmethod
    def backward(ctx, *grads):
        g = ctx.gathered
        g.fsdp._gradients_in(g.unit, g, grads)
        return (None,) * (1 + len(grads))

"""ZeRO stages 1 and 2 as an optimizer: ``ShardedOptimizer(params, torch.optim.AdamW,
group, stage=1)`` over any parameters and any elementwise torch optimizer.

Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", SC 2020. Plain data parallelism keeps on every rank the parameters, the
gradients and the optimizer states (AdamW: exp_avg and exp_avg_sq); ZeRO-DP (§5)
partitions them over the N_d data-parallel ranks:

  stage 1  P_os (§5.1): each rank keeps the optimizer states of its 1/N_d of the
           parameters (zero/flat.py's FlatLayout: the bucket's parameters end to end,
           cut in N_d; rank r keeps block r). After backward, gradients are
           reduce-scattered, so each rank gets the averaged gradient of its block only;
           it updates its block; an all-gather hands the updated parameters to everyone.
           Full gradients are held until the step.
  stage 2  P_os+g (§5.2): the same, but each gradient is copied into its bucket the
           moment autograd has it, and dropped; a full bucket is reduce-scattered while
           backward goes on and freed when done (at most two in flight, DeepSpeed's
           double buffer). A rank never holds every full gradient at once.

Traffic per step (§7.2): a reduce-scatter and an all-gather, 2 Psi per rank -- what one
all-reduce moves (an all-reduce *is* the two). Gradients travel in buckets of
``bucket_bytes`` (DDP's layout: reverse parameter order, so that backward fills them
front to back), each one collective; the parameters live in their bucket's buffer (views of it), so an
all-gather lands straight in them. Nothing else is exchanged: which parameters no
rank used travels inside the buckets (one count per tensor, below), since on a busy
machine a collective costs its latency however small it is.

Exactness: the optimizer steps each piece of a parameter in a rank's block with that
piece's gradient, which for an elementwise rule (SGD, Adam, AdamW, ...) is the arithmetic of the whole tensor; LBFGS's
line search or Adafactor's factored moments look across elements, and are refused.

The exchange finishes inside backward (the family's interface, data_parallel/grad_sync.py):
when ``loss.backward()`` returns, each rank's shard gradients are averaged. Gradient
accumulation: under ``no_sync()`` nothing is exchanged and gradients add up in full
(stage 2 too, as FSDP2's ``set_requires_gradient_sync(False)``); without it, stage 2
reduce-scatters every micro-batch and sums the shards -- m times the traffic, never the
full gradients -- and stage 1, whose full gradients keep adding up, reduce-scatters
the sum so far each time and keeps the last.
"""

from __future__ import annotations

import inspect

import torch
import torch.distributed as dist

from .. import comm, trace
from ..data_parallel.ddp import DDP_BUCKET_BYTES, assign_buckets
from ..data_parallel.grad_sync import GradSync, broadcast_tensors
from ..mesh import check_group
from ..validate import check_choice, check_int
from .flat import FlatLayout

# Optimizers whose update of an element reads only that element's gradient and state.
ELEMENTWISE = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.Adamax,
               torch.optim.NAdam, torch.optim.RAdam, torch.optim.RMSprop, torch.optim.Adagrad,
               torch.optim.Adadelta, torch.optim.Rprop, torch.optim.ASGD)


def named_trainable(params) -> list[tuple[str, torch.nn.Parameter]]:
    """(name, parameter) pairs from parameters or ``named_parameters()`` (with
    ``remove_duplicate=False`` a tied parameter comes twice: kept once, under its first
    name), frozen ones left out."""
    out = []
    seen = set()
    for i, item in enumerate(params):
        name, p = item if isinstance(item, tuple) else (f"parameter {i}", item)
        if not isinstance(p, torch.Tensor):
            raise ValueError(f"params must be tensors or (name, tensor) pairs, got {type(p).__name__}")
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


class _Bucket:
    """Parameters reduced together, living in ``flat`` (``parts`` rows of
    ``flat.FlatLayout``'s blocks; row r is rank r's): each parameter is a view of it.
    This rank's piece of parameter i is ``shards[i]``, a view of its own row (None: it
    has none). In this round of the exchange, ``ready``: the ones whose gradient is
    complete; ``held``: gradients accumulated under ``no_sync``, still to be sent;
    ``used``: the ones some rank had a gradient for since the last ``zero_grad``.

    The gradients' buffer is ``parts`` rows of ``width`` elements: the block, then one
    count per parameter -- 1 where this rank has its gradient. The reduce-scatter sums
    them, so every rank learns how many ranks used each parameter from the same
    collective as the gradients (an unused one keeps no gradient, as on one device),
    with no collective of its own."""

    @torch.no_grad()
    def __init__(self, named, parts: int, index: int):
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.layout = FlatLayout([p.shape for p in self.params], parts, index)
        self.width = self.layout.block + len(self.params)
        first = self.params[0]
        self.flat = torch.zeros(parts, self.layout.block, dtype=first.dtype, device=first.device)
        for i, p in enumerate(self.params):  # each parameter moves into the buffer
            view = self.layout.tensor(self.flat, i)
            view.copy_(p)
            p.data = view  # the same Parameter (the module's, the user's), its new storage
        row = self.flat[index]
        # views of this rank's pieces: the optimizer updates the weights in place
        self.shards = [self.layout.piece(row, i) if i in self.layout.mine else None
                       for i in range(len(self.params))]
        self.ready = set()
        self.held = set()
        self.used = set()
        self.incoming = None
        self.wait = None


class ShardedOptimizer(GradSync, torch.optim.Optimizer):
    """ZeRO stage 1 or 2 over ``group`` (default: the world) for ``params`` (parameters
    or ``named_parameters()``), stepping ``optimizer_cls(shards, **optimizer_kwargs)``.
    Use it as any optimizer: ``loss.backward(); opt.step(); opt.zero_grad()``: backward
    reduce-scatters the gradients and divides them by the group size (the mean over
    replicas; ``divide_by``: over another count), ``step`` updates this rank's shards
    (finishing first a round that ``no_sync`` held: ``finish_grad_sync``) and
    all-gathers the parameters. At construction the group's first rank
    broadcasts the parameters (the frozen ones given too). A parameter no rank used
    keeps no gradient, so the optimizer skips it as on one device."""

    def __init__(self, params, optimizer_cls, group=None, stage: int = 1,
                 bucket_bytes: int = DDP_BUCKET_BYTES, divide_by: int | None = None,
                 probe=None, **optimizer_kwargs):
        check_choice("stage", stage, (1, 2))
        if not (isinstance(optimizer_cls, type) and issubclass(optimizer_cls, ELEMENTWISE)):
            raise ValueError(
                f"optimizer_cls={getattr(optimizer_cls, '__name__', optimizer_cls)!r}: each rank "
                "updates only its shard of every tensor, which is the whole tensor's update only "
                "for an elementwise optimizer (" + ", ".join(c.__name__ for c in ELEMENTWISE)
                + "); LBFGS's line search or a factored second moment read across the shards")
        self.group = check_group(group)
        self.stage = stage
        self.dp = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.divide_by = self.dp if divide_by is None else check_int("divide_by", divide_by)
        self.probe = probe
        params = list(params)
        named = named_trainable(params)
        if not named:
            raise ValueError("params holds no trainable parameter")
        super().__init__([p for _, p in named], {})
        # every replica starts from the first rank's weights -- the frozen ones too
        broadcast_tensors({id(t): t for t in (x[1] if isinstance(x, tuple) else x
                                              for x in params)}.values(), self.group)
        rev = named[::-1]  # backward produces the last layers' gradients first
        self.buckets = [_Bucket([rev[i] for i in idx], self.dp, self.rank) for idx in
                        assign_buckets([p.numel() * p.element_size() for _, p in rev],
                                       bucket_bytes, [(p.dtype, p.device) for _, p in rev])]
        self._slot = {p: (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        shards = [b.shards[i] for _, p in named for b, i in [self._slot[p]]
                  if b.shards[i] is not None]
        # (a rank with no piece of anything -- fewer elements than ranks -- steps an empty
        # tensor: torch refuses an optimizer over nothing)
        shards = shards or [self.buckets[0].flat[self.rank, :0]]
        # A fused kernel (one call for the whole list) takes away the optimizer's cost per
        # tensor. torch leaves it off by default on CPU; we ask for it where the optimizer
        # has one (time us against a peer with the same: bench/zero.py --kernel).
        if (not {"fused", "foreach"} & set(optimizer_kwargs)
                and "fused" in inspect.signature(optimizer_cls).parameters
                and all(p.device.type in ("cpu", "cuda") and p.is_floating_point()
                        for _, p in named)):
            optimizer_kwargs["fused"] = True
        self.inner = optimizer_cls(shards, **optimizer_kwargs)
        self.state = self.inner.state  # what this rank keeps: its pieces' states, by piece
        for p in self._slot:
            p.register_post_accumulate_grad_hook(self._grad_ready)
        self._next = 0    # the next bucket to launch, in index order
        self._got = set()  # parameters with a gradient on this rank since the last round

    # --- backward: buckets reduce-scattered as they fill ----------------------------
    def _grad_ready(self, p: torch.Tensor) -> None:
        self.grad_ready()
        b, i = self._slot[p]
        self._got.add(p)
        if not self.sync:
            b.held.add(i)  # accumulated under no_sync: sent with the next exchange
            return
        if self.stage == 2:  # into the bucket at once, and the full gradient dropped
            self._into_bucket(b, i)
        b.ready.add(i)
        # Strictly in bucket order (like DDP's Reducer): collectives must be issued in the
        # same order on every rank, or they would pair up the wrong buffers.
        while len(self.buckets[self._next].ready) == len(self.buckets[self._next].params):
            self._launch(self.buckets[self._next])
            self._next = (self._next + 1) % len(self.buckets)
            if self._next == 0:  # a round is complete: the next backward starts another
                break

    def _into_bucket(self, b: _Bucket, i: int) -> None:
        if b.incoming is None:
            b.incoming = torch.zeros(self.dp, b.width, dtype=b.params[0].dtype,
                                     device=b.params[0].device)
            if self.probe is not None:
                self.probe.allocated("buckets", b.incoming)
        p = b.params[i]
        if p.grad is not None:
            b.layout.place(b.incoming, i, p.grad)
            if self.stage == 2:
                p.grad = None  # dropped: only the shard's gradient will be kept
            # (stage 1 keeps it, and autograd adds the next micro-batch's to it: each
            # exchange sends the sum so far, and replaces the shard's gradient)

    def _launch(self, b: _Bucket) -> None:
        for i in range(len(b.params)):
            self._into_bucket(b, i)
        # the counts: every row (each rank's block) says which parameters this rank used
        used = [1.0 if p in self._got else 0.0 for p in b.params]
        b.incoming[:, b.layout.block:] = torch.tensor(used, dtype=b.incoming.dtype)
        b.ready.clear()
        b.held.clear()
        out = torch.empty(b.width, dtype=b.incoming.dtype, device=b.incoming.device)
        arrived = comm.reduce_scatter_async(out, b.incoming.view(-1), self.group,
                                            f"bucket{self.buckets.index(b)} grads")
        b.wait = lambda: (arrived(), out)[1]
        if self.stage == 2:  # at most two buckets in flight: wait for the older ones
            for older in [c for c in self.buckets if c.wait is not None and c is not b][:-1]:
                with trace.span("wait for a bucket", kind="wait"):
                    self._finish_bucket(older)

    def _finish_bucket(self, b: _Bucket) -> None:
        reduced = b.wait()
        b.wait = None
        if self.probe is not None:
            self.probe.freed("buckets", b.incoming.nbytes)
        b.incoming = None
        users = reduced[b.layout.block:].tolist()  # how many ranks used each parameter
        b.used.update(i for i, n in enumerate(users) if n)
        # the mean, into a buffer of the gradients' own (the division writes it anyway):
        # a rank keeps exactly its pieces' gradients, not the counts beside them
        grads = reduced[:b.layout.block].div(self.divide_by)
        for i in b.layout.mine:
            if users[i] == 0:
                continue  # no rank used it: no gradient to add, as on one device
            s, piece = b.shards[i], b.layout.piece(grads, i)
            if s.grad is None or self.stage == 1:  # stage 1 sent the whole sum so far
                s.grad = piece  # a view of the reduced block
            else:  # stage 2 sent only what arrived since its last exchange
                s.grad.add_(piece)

    def _finish(self) -> None:
        """Finish this round's gradient exchange: every bucket reduce-scattered and
        averaged into this rank's shard gradients. A bucket still missing a gradient
        goes now with zeros in its place; its counts tell which parameters no rank used,
        and those get nothing added (``_finish_bucket``)."""
        if self._next:  # a round under way: finish it
            left = self.buckets[self._next:]
        elif any(b.ready or b.held for b in self.buckets):  # gradients not sent (no_sync)
            left = self.buckets
        else:  # every bucket went out during backward
            left = []
        for b in left:
            self._launch(b)
        with trace.span("wait for gradients", kind="wait"):
            for b in self.buckets:
                if b.wait is not None:
                    self._finish_bucket(b)
        self._next = 0
        self._got = set()

    # --- the step: update this rank's shards, gather the parameters -----------------
    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("closure: ShardedOptimizer does not re-evaluate the loss "
                             "(elementwise optimizers need none)")
        self.finish_grad_sync()  # a round no_sync held (else the backward finished it)
        with trace.span("optimizer shards"):
            self.inner.step()
        self.all_gather_parameters()

    @torch.no_grad()
    def all_gather_parameters(self) -> None:
        """Every rank's updated block -> the full parameters everywhere, in place, with one
        all-gather per dtype and device (on a busy machine every collective costs its
        latency; nothing is left to overlap them with).

        One bucket (DDP's default 25 MiB holds a small model): its buffer, of which the
        parameters are views, is gathered into directly -- this rank's row already holds
        what its optimizer wrote, so nothing is copied. Several: their rows are not
        contiguous (row r of each bucket sits in that bucket's buffer), so they are
        gathered through one buffer and copied into place -- a copy of the parameters,
        cheaper than one collective per bucket (13 buckets of a 3.3 MB model on 2 busy
        cores, gloo: 2.2 ms against 3.0 at 2 ranks, 7.7 against 15.6 at 4)."""
        together = {}
        for b in self.buckets:
            together.setdefault((b.flat.dtype, b.flat.device), []).append(b)
        waits = []
        for (dtype, device), buckets in together.items():
            if len(buckets) == 1:
                waits.append(([], all_gather_async(buckets[0].flat, self.group, "params")))
                continue
            blocks = [b.layout.block for b in buckets]
            full = torch.empty(self.dp, sum(blocks), dtype=dtype, device=device)
            parts = full.split(blocks, dim=1)  # each bucket's rows: a column range
            for b, part in zip(buckets, parts):
                part[self.rank].copy_(b.flat[self.rank])
            waits.append((list(zip(buckets, parts)), all_gather_async(full, self.group, "params")))
        with trace.span("wait for parameters", kind="wait"):
            for copies, arrived in waits:
                arrived()
                for b, part in copies:
                    b.flat.copy_(part)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for b in self.buckets:
            b.used.clear()
            for p, s in zip(b.params, b.shards):
                p.grad = None
                if s is not None:
                    s.grad = None

    def shards(self) -> list[torch.Tensor]:
        """This rank's pieces of the parameters (what its optimizer steps)."""
        return [s for b in self.buckets for s in b.shards if s is not None]

    def collective_groups(self) -> list[list]:
        return [b.params for b in self.buckets]

    def held_gradients(self) -> list:
        """(parameter, the gradient of this rank's piece of it, None if it has none): what
        it steps from."""
        return [(p, None if s is None else s.grad)
                for b in self.buckets for p, s in zip(b.params, b.shards)]

    @torch.no_grad()
    def full_tensors(self, grads: bool = False) -> dict:
        """{parameter: its full value, or its full averaged gradient}. The parameters are
        whole on every rank after each step; the gradients are gathered from the shards
        (a collective -- bookkeeping: ZeRO itself never needs them whole)."""
        if not grads:
            return {p: p.detach() for b in self.buckets for p in b.params}
        out = {}
        for b in self.buckets:
            own = torch.zeros_like(b.flat[self.rank])
            for i in b.layout.mine:
                if b.shards[i].grad is not None:
                    b.layout.piece(own, i).copy_(b.shards[i].grad)
            full = own.new_empty(self.dp * own.numel())
            comm.all_gather(full, own, self.group, label="full gradients")
            out.update({p: b.layout.tensor(full, i) for i, p in enumerate(b.params)
                        if i in b.used})
        return out

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state_dict) -> None:
        self.inner.load_state_dict(state_dict)


class _AllOf:
    """Several started collectives waited on as one (``trace.in_flight`` takes one)."""

    def __init__(self, works):
        self.works = works

    def wait(self) -> None:
        for w in self.works:
            w.wait()

    def get_future(self):
        return torch.futures.collect_all([w.get_future() for w in self.works])


def all_gather_async(full: torch.Tensor, group=None, label: str = "params"):
    """Start the all-gather of the rows of ``full`` (parts, block): row r is rank r's block,
    this rank's already in place; returns ``wait()``. NCCL: torch's all-gather.

    On gloo, as one broadcast per rank of its own row, all in flight at once: the same
    bytes (each rank's block reaches the n - 1 others), but gloo runs them side by side
    on its worker threads, where its all-gather is a ring of n - 1 steps one after the
    other. Measured here on 3.3 MB (2 CPU cores, load 4; bench/zero.py --collectives):
    0.9 ms against 1.7 ms at 2 ranks, 2.6 ms against 5.7 ms at 4."""
    if dist.get_backend(group) != "gloo":
        return comm.all_gather_async(full.view(-1), full[dist.get_rank(group)], group, label)
    works = [dist.broadcast(row, group=group, group_src=r, async_op=True)
             for r, row in enumerate(full)]
    return trace.in_flight(_AllOf(works), f"all_gather {label}", async_op=True,
                           **comm.modelled_bytes("all_gather", full.nbytes, group),
                           dtype=str(full.dtype).removeprefix("torch."))

"""Collectives: the classic algorithms written by hand, and traced wrappers of torch's.

Part 1 builds all-reduce from nothing but point-to-point send/recv, the way NCCL
and MPI do inside:

  ring_reduce_scatter  n-1 steps: every rank sends one chunk to its right
                       neighbour and adds the chunk arriving from its left; after
                       the last step rank r holds chunk r summed over all ranks.
  ring_all_gather      n-1 steps: the finished chunks travel once round the ring.
  ring_all_reduce      reduce-scatter, then all-gather (Patarasuk & Yuan 2009).
                       Each rank sends 2 (n-1)/n of the buffer in total.
  naive_all_reduce     everyone sends to rank 0, which reduces and sends the
                       result back: rank 0 moves (n-1) full buffers each way.

Every send and receive they post is recorded by ``parlab.trace`` with its exact
byte count (``bytes_modelled=False``), so the notebook can put measured bytes next
to the 2(n-1)/n S formula of ``parlab.cost``.

Part 2 wraps torch.distributed's own collectives (``all_reduce``, ``all_gather``,
``reduce_scatter``, ``all_to_all``, ``broadcast``, ``barrier``) with the same
tracing; the ``*_async`` forms launch one and return ``wait()``, its event spanning
launch to completion (``trace.in_flight``), as DDP's and ZeRO's buckets need. We cannot see what gloo or NCCL put on the wire, so those events carry
the bytes the ring algorithm would move, from ``cost.collective_bytes``, and say
so with ``bytes_modelled=True``.

With CUDA tensors on gloo (several ranks sharing one GPU), gloo runs all-reduce,
broadcast and all-to-all on the GPU tensors itself; send/recv and the flat
all-gather/reduce-scatter are staged through CPU copies by the launcher
(launch/devices.py says which and why). ``device()`` is where a rank puts its tensors.

Any tensor size works, including sizes not divisible by the number of ranks:
chunk i has ``numel // n`` elements, plus one for the first ``numel % n`` chunks
(``chunk_bounds``); empty chunks are simply not sent.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from . import cost, trace

# --- reduction operators ------------------------------------------------------------

_REDUCE = {
    "sum": lambda acc, x: acc.add_(x),
    "avg": lambda acc, x: acc.add_(x),  # divided by n once, at the end
    "prod": lambda acc, x: acc.mul_(x),
    "max": lambda acc, x: torch.maximum(acc, x, out=acc),
    "min": lambda acc, x: torch.minimum(acc, x, out=acc),
}
_FROM_TORCH = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "prod",
               dist.ReduceOp.MAX: "max", dist.ReduceOp.MIN: "min"}
if hasattr(dist.ReduceOp, "AVG"):
    _FROM_TORCH[dist.ReduceOp.AVG] = "avg"


def _op_name(op) -> str:
    name = _FROM_TORCH.get(op, op) if not isinstance(op, str) else op.lower()
    if name not in _REDUCE:
        raise ValueError(f"op={op!r} must be one of {sorted(_REDUCE)} or a torch ReduceOp")
    return name


# --- who is where in the group ------------------------------------------------------

def _ring(group):
    """(my rank in group, group size, global rank of each group rank)."""
    n = dist.get_world_size(group)
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(n))
    return dist.get_rank(group), n, ranks


def chunk_bounds(numel: int, n: int) -> list[tuple[int, int]]:
    """[start, end) of each of the n chunks of a flat buffer of ``numel`` elements."""
    base, extra = divmod(numel, n)
    bounds = []
    start = 0
    for i in range(n):
        end = start + base + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


# --- point to point, traced with exact byte counts --------------------------------

def exchange(send_buf: torch.Tensor | None, dst: int, recv_buf: torch.Tensor | None,
             src: int, group=None, name: str = "sendrecv", **meta) -> None:
    """Send ``send_buf`` to global rank ``dst`` while receiving ``recv_buf`` from ``src``.

    Both are posted before either is waited on: in a ring every rank sends and
    receives at once, and a blocking send first would deadlock once messages are
    larger than the socket buffers. ``None`` (or an empty tensor) skips that side.
    """
    send_buf = send_buf if send_buf is not None and send_buf.numel() else None
    recv_buf = recv_buf if recv_buf is not None and recv_buf.numel() else None
    with trace.span(name, kind="comm", bytes_sent=_nbytes(send_buf) if send_buf is not None
                    else 0, bytes_recv=_nbytes(recv_buf) if recv_buf is not None else 0,
                    **meta):
        works = []
        if recv_buf is not None:
            works.append(dist.irecv(recv_buf, src=src, group=group))
        if send_buf is not None:
            works.append(dist.isend(send_buf, dst=dst, group=group))
        for w in works:
            w.wait()


def send(tensor: torch.Tensor, dst: int, group=None) -> None:
    """Traced blocking send to global rank ``dst``."""
    exchange(tensor, dst, None, -1, group, name="send")


def recv(tensor: torch.Tensor, src: int, group=None) -> None:
    """Traced blocking receive from global rank ``src``."""
    exchange(None, -1, tensor, src, group, name="recv")


# --- the ring, by hand ---------------------------------------------------------------

def _reduce_scatter_phase(flat, bounds, op, group, on_step=None) -> None:
    """In place on ``flat``: afterwards chunk ``rank`` holds the reduction over all ranks.

    Step s: send chunk (r - s - 1), receive chunk (r - s - 2) from the left and
    fold it in. Chunk c starts at rank c + 1 and travels right, picking up one
    rank's contribution per hop; after n - 1 hops it arrives, complete, at rank c.
    """
    r, n, ranks = _ring(group)
    right = ranks[(r + 1) % n]
    left = ranks[(r - 1) % n]
    reduce = _REDUCE[op]
    scratch = flat.new_empty(max(e - b for b, e in bounds))  # one receive buffer, reused
    for s in range(n - 1):
        send_c = (r - s - 1) % n
        recv_c = (r - s - 2) % n
        (a, b), (c, d) = bounds[send_c], bounds[recv_c]
        incoming = scratch[:d - c]
        exchange(flat[a:b], right, incoming, left, group, name="ring_reduce_scatter",
                 phase="reduce_scatter", step=s, chunk=recv_c)
        with trace.span("reduce", kind="compute", step=s, chunk=recv_c):
            reduce(flat[c:d], incoming)
        if on_step is not None:
            on_step("reduce_scatter", s, flat)


def _all_gather_phase(flat, bounds, group, on_step=None) -> None:
    """In place on ``flat``: chunk ``rank`` is final; afterwards every chunk is.

    Step s: send chunk (r - s), receive chunk (r - s - 1) straight into place.
    """
    r, n, ranks = _ring(group)
    right = ranks[(r + 1) % n]
    left = ranks[(r - 1) % n]
    for s in range(n - 1):
        send_c = (r - s) % n
        recv_c = (r - s - 1) % n
        (a, b), (c, d) = bounds[send_c], bounds[recv_c]
        exchange(flat[a:b], right, flat[c:d], left, group, name="ring_all_gather",
                 phase="all_gather", step=s, chunk=recv_c)
        if on_step is not None:
            on_step("all_gather", s, flat)


def ring_all_reduce(tensor: torch.Tensor, group=None, op="sum", on_step=None) -> torch.Tensor:
    """All-reduce ``tensor`` in place with the ring algorithm; returns it.

    2 (n-1) steps; each rank sends and receives 2 (n-1)/n of the buffer.
    ``on_step(phase, step, flat_buffer)`` is called after every step (the notebook
    uses it to animate the ring).
    """
    op = _op_name(op)
    _, n, _ = _ring(group)
    flat = tensor.view(-1) if tensor.is_contiguous() else tensor.contiguous().view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    _reduce_scatter_phase(flat, bounds, op, group, on_step)
    _all_gather_phase(flat, bounds, group, on_step)
    if op == "avg":
        flat.div_(n)
    if flat.data_ptr() != tensor.data_ptr():
        tensor.copy_(flat.view_as(tensor))
    return tensor


def ring_reduce_scatter(tensor: torch.Tensor, group=None, op="sum") -> torch.Tensor:
    """Reduce ``tensor`` (same shape on every rank) and return this rank's chunk,
    flattened: elements ``chunk_bounds(numel, n)[rank]``. The input is not modified.
    n-1 steps; each rank sends (n-1)/n of the buffer."""
    op = _op_name(op)
    r, n, _ = _ring(group)
    flat = tensor.detach().reshape(-1).clone()
    bounds = chunk_bounds(flat.numel(), n)
    _reduce_scatter_phase(flat, bounds, op, group)
    a, b = bounds[r]
    mine = flat[a:b].clone()
    return mine.div_(n) if op == "avg" else mine


def ring_all_gather(shard: torch.Tensor, group=None, sizes: list[int] | None = None
                    ) -> torch.Tensor:
    """Concatenate every rank's flattened ``shard`` in rank order, by the ring.

    ``sizes``: each rank's shard length, when they differ (as after
    ``ring_reduce_scatter`` of a size not divisible by n); default all equal.
    n-1 steps; each rank sends (n-1)/n of the output.
    """
    r, n, _ = _ring(group)
    sizes = [shard.numel()] * n if sizes is None else list(sizes)
    if len(sizes) != n or sizes[r] != shard.numel():
        raise ValueError(f"sizes={sizes} must list {n} shard lengths, with "
                         f"sizes[{r}] == this shard's {shard.numel()} elements")
    starts = [sum(sizes[:i]) for i in range(n)]
    bounds = [(s, s + k) for s, k in zip(starts, sizes)]
    flat = shard.new_empty(sum(sizes))
    flat[bounds[r][0]:bounds[r][1]] = shard.reshape(-1)
    _all_gather_phase(flat, bounds, group)
    return flat


def naive_all_reduce(tensor: torch.Tensor, group=None, op="sum") -> torch.Tensor:
    """All-reduce in place through rank 0: gather, reduce, send back. For contrast:
    rank 0 receives and sends (n-1) full buffers, so its link is the bottleneck
    and the time grows linearly with n."""
    op = _op_name(op)
    r, n, ranks = _ring(group)
    root = ranks[0]
    buf = tensor.contiguous()
    if r == 0:
        incoming = torch.empty_like(buf)
        for peer in ranks[1:]:
            recv(incoming, peer, group)
            with trace.span("reduce", kind="compute"):
                _REDUCE[op](buf, incoming)
        if op == "avg":
            buf.div_(n)
        for peer in ranks[1:]:
            send(buf, peer, group)
    else:
        send(buf, root, group)
        recv(buf, root, group)
    if buf.data_ptr() != tensor.data_ptr():
        tensor.copy_(buf)
    return tensor


# --- torch's own collectives, traced (bytes modelled) ------------------------------

def modelled_bytes(op: str, nbytes: int, group=None) -> dict:
    """Trace fields for a torch collective on ``nbytes``: the bytes a ring would move
    (we cannot see the backend's wire), flagged as modelled, and ``op`` for timelines."""
    b = int(cost.collective_bytes(op, nbytes, dist.get_world_size(group), "ring"))
    return {"bytes_sent": b, "bytes_recv": b, "bytes_modelled": True, "op": op}


def _traced(op: str, nbytes: int, group, label: str | None, meta: dict):
    """The comm span of one torch collective, named ``op`` (or "op label"); ``meta``:
    extra fields for the event (e.g. which layer, which pass)."""
    return trace.span(f"{op} {label}" if label else op, kind="comm",
                      **modelled_bytes(op, nbytes, group), **meta)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, label: str | None = None, **meta):
    """torch.distributed.all_reduce, traced; bytes are what a ring would move."""
    with _traced("all_reduce", _nbytes(tensor), group, label, meta):
        dist.all_reduce(tensor, op=op, group=group)
    return tensor


def all_reduce_grads(params, group=None, scale: float = 1.0, label: str = "grads",
                     **meta) -> None:
    """Sum the gradients of ``params`` over ``group`` as ONE flat, traced all-reduce (one
    message instead of one per tensor), then multiply them by ``scale`` (1/n: a mean).
    Parameters without a gradient are skipped; on a group of one rank it only scales.
    What every strategy does after backward for the parameters its ranks share."""
    params = [p for p in params if p.grad is not None]
    if not params:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    if dist.get_world_size(group) > 1:
        all_reduce(flat, group=group, label=label, **meta)
    if scale != 1.0:
        flat.mul_(scale)
    for p, chunk in zip(params, flat.split([p.numel() for p in params])):
        p.grad.copy_(chunk.view_as(p.grad))


# torch 2.13 renamed the flat-tensor forms; older releases have only the old names.
_all_gather_flat = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_flat = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def all_gather(output, input, group=None, label: str | None = None, **meta):
    """All-gather into one flat tensor, traced; ``output`` is n times ``input`` (``input``
    may be this rank's slice of ``output``: in place)."""
    with _traced("all_gather", _nbytes(output), group, label, meta):
        _all_gather_flat(output, input, group=group)
    return output


def reduce_scatter(output, input, op=dist.ReduceOp.SUM, group=None, label: str | None = None,
                   **meta):
    """Reduce-scatter of one flat tensor, traced; ``input`` is n times ``output``."""
    with _traced("reduce_scatter", _nbytes(input), group, label, meta):
        _reduce_scatter_flat(output, input, op=op, group=group)
    return output


def all_to_all(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
               label: str | None = None, **meta):
    """all_to_all_single, traced (uneven splits allowed, as in MoE dispatch)."""
    with _traced("all_to_all", _nbytes(input), group, label, meta):
        dist.all_to_all_single(output, input, output_split_sizes, input_split_sizes, group=group)
    return output


def broadcast(tensor, src: int, group=None, label: str | None = None, **meta):
    """torch.distributed.broadcast from global rank ``src``, traced."""
    with _traced("broadcast", _nbytes(tensor), group, label, meta):
        dist.broadcast(tensor, src=src, group=group)
    return tensor


# --- the same, launched asynchronously: they run beside the compute -----------------

def _in_flight(work, op: str, tensor, group, label: str | None, meta: dict):
    """A started collective on ``tensor`` (its whole buffer), traced: its bytes and dtype."""
    return trace.in_flight(work, f"{op} {label}" if label else op, async_op=True,
                           **modelled_bytes(op, _nbytes(tensor), group),
                           dtype=str(tensor.dtype).removeprefix("torch."), **meta)


def all_reduce_async(tensor, group=None, label: str | None = None, **meta):
    """Start a sum all-reduce of ``tensor``; returns ``wait()`` (call it before reading)."""
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return _in_flight(work, "all_reduce", tensor, group, label, meta)


def all_gather_async(output, input, group=None, label: str | None = None, **meta):
    """Start ``all_gather``'s flat form (``input`` may be this rank's slice of ``output``)."""
    work = _all_gather_flat(output, input, group=group, async_op=True)
    return _in_flight(work, "all_gather", output, group, label, meta)


def reduce_scatter_async(output, input, group=None, label: str | None = None, **meta):
    """Start a sum reduce-scatter of the flat ``input`` into ``output``.

    On gloo, by pairwise exchange instead of gloo's own reduce-scatter, which cannot be
    waited on through a future and took 1.5-1.7x the time of an all-reduce of the same
    3.3 MB buffer here (2 and 4 CPU ranks) though it has half the work. The
    pairwise-exchange algorithm MPICH uses for long messages (Thakur, Rabenseifner &
    Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA 2005):
    one all-to-all sends slice j of the buffer to rank j -- (n-1)/n of the buffer per
    rank, the same bytes as a ring reduce-scatter -- and each rank adds up the n slices
    it received (measured at 0.4-0.6x the all-reduce). NCCL gets torch's own."""
    if dist.get_backend(group) != "gloo":
        work = _reduce_scatter_flat(output, input, group=group, async_op=True)
        return _in_flight(work, "reduce_scatter", input, group, label, meta)
    n = dist.get_world_size(group)
    received = torch.empty_like(input)  # slice r of every rank's input, in rank order
    work = dist.all_to_all_single(received, input, group=group, async_op=True)
    arrived = _in_flight(work, "reduce_scatter", input, group, label, meta)

    def wait():
        arrived()
        torch.sum(received.view(n, -1), 0, out=output.view(-1))

    return wait


_device: list = []  # set by the launcher when a rank's tensors are not where its backend implies


def use_device(dev) -> None:
    """Where this rank's tensors live from now on (None: by the backend). The launcher
    calls it (launch/devices.py): a GPU for ranks sharing GPUs over gloo, ``cpu:0`` in
    the dry run."""
    _device[:] = [] if dev is None else [torch.device(dev)]


def device(group=None) -> torch.device:
    """Where this rank's tensors live for collectives on ``group``: the device the
    launcher chose (a GPU shared by several ranks over gloo: launch/devices.py), else
    its GPU under NCCL (the launcher has set the current device), else the CPU."""
    if _device:
        return _device[0]
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def barrier(group=None) -> None:
    """Traced barrier: the time a rank spends here is waiting, not communicating."""
    with trace.span("barrier", kind="wait"):
        dist.barrier(group=group)

"""Per-rank timed events on one clock, returned to the notebook as plain data.

Every traced operation becomes an :class:`Event`: which rank, what kind of work
(``compute``, ``comm`` or ``wait``), a name, start and end times, and the bytes the
rank sent and received. Timelines, bubble measurements and byte counts in the
notebooks are all built from these events.

Clock. Events use ``time.perf_counter()``, which on Linux reads ``CLOCK_MONOTONIC``:
one clock shared by every process on a host, so ranks started by ``parlab.launch``
are aligned without any correction. Ranks on different hosts (``torchrun``) have
unrelated monotonic clocks; :func:`sync_clocks` estimates each rank's offset from
rank 0 by ping-pong (Cristian's algorithm, 1989: take the exchange with the smallest
round trip, assume the reply took half of it) and shifts later events by it.

Bytes. ``bytes_modelled`` says where a byte count came from. Hand-written
algorithms (``parlab.comm.ring_all_reduce`` and friends) count the bytes of every
send and receive they post: those counts are measured (``bytes_modelled=False``).
For torch's own collectives we cannot see what the backend puts on the wire, so
``parlab.comm`` records what the ring algorithm would move (``cost.collective_bytes``)
and marks it ``bytes_modelled=True``.

The launcher also gives each rank a small shared "status slot": the name of the
traced operation the rank is inside right now. When a job hangs, the launcher reads
the slots to say which operation each stuck rank was blocked in.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

KINDS = ("compute", "comm", "wait")
FINISH_GRAD_SYNC = "finish grad sync"  # a data-parallel part's round, finished at backward's end


@dataclass
class Event:
    rank: int
    kind: str  # one of KINDS
    name: str
    start: float  # seconds, on the aligned clock
    end: float
    bytes_sent: int = 0
    bytes_recv: int = 0
    bytes_modelled: bool = False
    meta: dict = field(default_factory=dict)  # small extras: step, micro-batch, chunk...

    @property
    def duration(self) -> float:
        return self.end - self.start


_events: list[Event] = []
_tags: list[dict] = []  # context set from outside (trace.tagged): which layer, which pass...
_probes: dict = {}  # name -> callbacks (trace.probe): work counters a runner installs
_recording = False
_rank = 0
_offset = 0.0  # added to perf_counter(); set by sync_clocks()
_stack: list[str] = []  # names of the spans this rank is inside, innermost last
_status = None  # (shared char buffer, byte offset, width), installed by the launcher


def now() -> float:
    """The aligned clock, in seconds."""
    return time.perf_counter() + _offset


def set_rank(rank: int) -> None:
    global _rank
    _rank = int(rank)


def start() -> None:
    """Clear earlier events and start recording."""
    global _recording
    _events.clear()
    _recording = True


def stop() -> list[dict]:
    """Stop recording and return this rank's events as plain dicts (picklable)."""
    global _recording
    _recording = False
    out = [asdict(e) for e in _events]
    _events.clear()
    return out


def is_recording() -> bool:
    return _recording


def recorded(since: float = float("-inf"), kind: str | None = None) -> list[dict]:
    """The events recorded so far (not cleared) that start at or after ``since``,
    optionally of one ``kind``: for code that lays out spans around earlier ones."""
    return [asdict(e) for e in _events if e.start >= since and kind in (None, e.kind)]


def record(kind: str, name: str, start: float, end: float, bytes_sent: int = 0,
           bytes_recv: int = 0, bytes_modelled: bool = False, **meta) -> None:
    """Record an event measured by the caller (times from :func:`now`)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} must be one of {KINDS}")
    if _recording:
        _events.append(Event(_rank, kind, name, start, end, int(bytes_sent),
                             int(bytes_recv), bool(bytes_modelled), {**tags(), **meta}))


# --- context from outside: tags, module labels, probes ------------------------------

@contextmanager
def tagged(**meta):
    """Every event recorded inside carries ``meta`` (inner tags win): how a runner says
    which layer or pass a collective served without the collective's signature knowing."""
    _tags.append(meta)
    try:
        yield
    finally:
        _untag(meta)


def _untag(meta: dict) -> None:
    for i in range(len(_tags) - 1, -1, -1):
        if _tags[i] is meta:  # by identity: two layers may carry equal tags
            del _tags[i]
            return


def tags() -> dict:
    """The tags in force now, merged (innermost last)."""
    out = {}
    for t in _tags:
        out.update(t)
    return out


def keep_tags(ctx) -> None:
    """In an autograd function's forward: keep the tags in force (which layer called it)
    for the collectives its backward will issue (``tagged_as``)."""
    ctx.trace_tags = tags()


def tagged_as(ctx, **meta):
    """``tagged(**meta)`` plus what ``keep_tags(ctx)`` kept (``ctx`` None: nothing)."""
    return tagged(**{**(getattr(ctx, "trace_tags", None) or {}), **meta})


def label_modules(model, names: dict | None = None) -> list:
    """Tag everything recorded during each submodule's forward with ``layer=<its name>``
    (``names``: {module: name}, default ``model.named_modules()``). Autograd functions
    that communicate in backward keep the tags of their forward (see ``tensor_parallel.
    mappings``). Returns the hook handles (``.remove()`` them to stop)."""
    names = names if names is not None else {m: n for n, m in model.named_modules()}
    handles = []
    open_ = {}

    def enter(module, args):
        meta = {"layer": names[module]}
        open_.setdefault(id(module), []).append(meta)  # a stack: a module may nest itself
        _tags.append(meta)

    def leave(module, args, out):
        if open_.get(id(module)):
            _untag(open_[id(module)].pop())

    for module in names:
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave, always_call=True))
    return handles


def probe(name: str, value, **meta) -> None:
    """Report a work counter (e.g. the attention scores a ring block computes) to the
    callbacks a runner installed with ``add_probe``; nothing happens otherwise."""
    for fn in _probes.get(name, ()):
        fn(value, {**tags(), **meta})


def add_probe(name: str, fn) -> None:
    """Call ``fn(value, tags)`` on every ``probe(name, value)``."""
    _probes.setdefault(name, []).append(fn)


def clear_probes() -> None:
    _probes.clear()


@contextmanager
def span(name: str, kind: str = "compute", bytes_sent: int = 0, bytes_recv: int = 0,
         bytes_modelled: bool = False, **meta):
    """Time the body as one event, and publish its name in the status slot meanwhile."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} must be one of {KINDS}")
    _stack.append(name)
    _publish()
    t0 = now()
    try:
        yield
    finally:
        t1 = now()
        _stack.pop()
        _publish()
        record(kind, name, t0, t1, bytes_sent, bytes_recv, bytes_modelled, **meta)


def current_op() -> str:
    """The innermost traced operation this rank is inside ('' when none)."""
    return _stack[-1] if _stack else ""


# --- status slot, read by the launcher when a job hangs ---------------------------

def install_status_slot(buffer, offset: int, width: int) -> None:
    """Called by the launcher in each rank: where to publish the current op's name."""
    global _status
    _status = (buffer, offset, width)
    _publish()


def _publish() -> None:
    if _status is None:
        return
    buf, off, width = _status
    text = " > ".join(_stack)[-width:].encode("utf-8", "replace")[:width]
    buf[off:off + width] = text.ljust(width, b"\0")


def read_status_slot(buffer, offset: int, width: int) -> str:
    return bytes(buffer[offset:offset + width]).rstrip(b"\0").decode("utf-8", "replace")


# --- clock alignment across hosts --------------------------------------------------

def sync_clocks(rounds: int = 8, group=None) -> float:
    """Align this rank's clock to rank 0's; returns the offset applied (seconds).

    Collective: every rank of ``group`` must call it. Rank 0 ping-pongs with each
    peer in turn; for each round the peer notes its send time t0, rank 0 replies
    with its clock t1, the peer notes t2; the round with the smallest round trip
    gives offset = t1 - (t0 + t2) / 2 (Cristian 1989). On a single host the result
    is ~0 (one monotonic clock), which is itself a useful check.
    """
    import torch
    import torch.distributed as dist

    from .mesh import global_rank

    global _offset
    rank = dist.get_rank(group)
    world = dist.get_world_size(group)
    buf = torch.zeros(1, dtype=torch.float64)
    best = (float("inf"), 0.0)
    for peer in range(1, world):
        peer_global = global_rank(group, peer)
        root_global = global_rank(group, 0)
        for _ in range(rounds):
            if rank == 0:
                dist.recv(buf, src=peer_global, group=group)
                buf.fill_(time.perf_counter())
                dist.send(buf, dst=peer_global, group=group)
            elif rank == peer:
                t0 = time.perf_counter()
                dist.send(buf, dst=root_global, group=group)
                dist.recv(buf, src=root_global, group=group)
                t2 = time.perf_counter()
                rtt = t2 - t0
                if rtt < best[0]:
                    best = (rtt, buf.item() - (t0 + t2) / 2)
    _offset = best[1] if rank != 0 else 0.0
    return _offset


def step_of(t: float, windows) -> int | None:
    """Index of the training step whose (start, end) window, from ``windows`` in order,
    ``t`` falls in (or before the end of); None after the last."""
    return next((s for s, (_, end) in enumerate(windows) if t <= end), None)


def comm_rows(events: list[dict], windows, meta=("op", "layer", "direction", "operator")
              ) -> list[dict]:
    """One flat row per comm event of ``events`` (``stop()``'s dicts): the ``meta``
    fields named, its name, bytes, start and end, and the ``step`` it began in
    (``step_of`` over ``windows``, the (start, end) of each training step)."""
    return [{**{k: e["meta"].get(k) for k in meta}, "name": e["name"],
             "bytes_sent": e["bytes_sent"], "bytes_recv": e["bytes_recv"],
             "bytes_modelled": e["bytes_modelled"], "start": e["start"], "end": e["end"],
             "step": step_of(e["start"], windows)}
            for e in events if e["kind"] == "comm"]


def interleaved(steps: dict, rounds: int, warmup: int = 0, record: bool = False,
                sync=None, group=None, clock=None) -> dict:
    """Time several ways of doing a step against each other on this rank (A/B testing).

    ``steps``: {label: fn(round)} -- each runs one step. Every round runs every label
    once, the order rotating each round so none always goes first (load drifts on a
    shared machine), each step started on all ranks together (barrier). ``sync`` is
    called before and after a timed step (e.g. ``torch.cuda.synchronize``). Returns
    {"times": {label: [seconds per round]}, "events": {label: [this rank's events,
    meta tagged with its round]}} -- warm-up rounds left out, events only if ``record``.
    ``clock``: what a step's time is read from (default ``time.perf_counter``, wall time;
    ``time.thread_time`` gives this thread's CPU time, which other processes' load does
    not stretch). Collective: every rank of ``group`` calls it with the same labels."""
    import torch.distributed as dist

    from .validate import check_int
    check_int("rounds", rounds)
    labels = list(steps)
    sync = sync or (lambda: None)
    clock = clock or time.perf_counter
    out = {"times": {v: [] for v in labels}, "events": {v: [] for v in labels}}
    for k in range(warmup + rounds):
        for v in labels[k % len(labels):] + labels[:k % len(labels)]:
            dist.barrier(group=group)
            if record:
                start()
            sync()
            t0 = clock()
            steps[v](k)
            sync()
            t1 = clock()
            events = stop() if record else []
            if k >= warmup:
                out["times"][v].append(t1 - t0)
                out["events"][v] += [dict(e, meta={**e["meta"], "step": k - warmup})
                                     for e in events]
    return out


# --- reading events: how much communication hid behind backward ---------------------

def overlap_fraction(events: list[dict]) -> float:
    """Share of the time gradients were on the wire that backward was still computing.
    Per rank, C = the union of its comm events (buckets in flight at once count once) and
    B = its backward spans, less the round a part finishes at backward's end (its span
    "finish grad sync": inside ``loss.backward()``, after the last gradient); the result is
    sum |C ∩ B| / sum |C| over ranks and steps. 0 = fully exposed (as in NaiveDP), 1 =
    fully hidden behind backward."""
    on_wire = 0.0
    inside = 0.0
    for rank in {e["rank"] for e in events}:
        busy = []  # merged comm intervals of this rank
        for s, t in sorted((e["start"], e["end"]) for e in events
                           if e["rank"] == rank and e["kind"] == "comm"):
            if busy and s <= busy[-1][1]:
                busy[-1][1] = max(busy[-1][1], t)
            else:
                busy.append([s, t])
        backward = [(e["start"], e["end"]) for e in events
                    if e["rank"] == rank and e["name"] == "backward"]
        finish = [(e["start"], e["end"]) for e in events
                  if e["rank"] == rank and e["name"] == FINISH_GRAD_SYNC]
        backward = [piece for b in backward for piece in _minus(b, finish)]
        for s, t in busy:
            on_wire += t - s
            inside += sum(max(0.0, min(t, b1) - max(s, b0)) for b0, b1 in backward)
    return inside / on_wire if on_wire > 0 else 0.0


def _minus(interval, holes) -> list:
    """``interval`` (start, end) with the ``holes`` cut out: the pieces left."""
    pieces = [interval]
    for h0, h1 in holes:
        pieces = [p for s, t in pieces
                  for p in ((s, min(t, h0)), (max(s, h1), t)) if p[1] > p[0]]
    return pieces


def backward_segments(t0: float, t1: float, comms, marks, min_s: float = 1e-6):
    """Split the backward pass [t0, t1] into compute segments: cut out the collectives
    (``comms``: (start, end)) and cut where a unit's backward begins (``marks``: (time,
    unit label), from a hook on the unit's output). Returns [(start, end, label)], the
    part before the first mark labelled "loss" (the loss function's own backward)."""
    cuts = sorted([(t, 1, label) for t, label in marks] + [(s, 0, e) for s, e in comms])
    out = []
    cursor = t0
    label = "loss"

    def emit(end):
        if end - cursor >= min_s:
            out.append((cursor, end, label))

    for t, is_mark, x in cuts:
        if is_mark:
            if t > cursor:
                emit(t)
                cursor = t
            label = x
        else:
            emit(t)
            cursor = max(cursor, x)
    emit(t1)
    return out


# --- asynchronous collectives: one comm event from launch to completion --------------

def in_flight(work, name: str, **fields):
    """Trace a collective launched with ``async_op=True`` (``work``, what it returned)
    from its launch, now, to its completion, and return ``wait()``: it waits for the
    work and records that comm event (``fields``: ``record``'s bytes and meta, e.g.
    ``comm.modelled_bytes(...)``). gloo completes async work on a background thread;
    a callback there notes the time, so the bar ends when the data arrived, not when
    the caller got round to waiting. The event is recorded only while recording."""
    if not _recording:
        return work.wait  # nothing to record: waiting is all there is (no closure, no event)
    start = now()
    done = []
    work.get_future().then(lambda _f: done.append(now()))

    def wait() -> None:
        work.wait()
        record("comm", name, start, done[0] if done else now(), **fields)

    return wait

"""Watching what the learner's function asks of ``torch.distributed``, on a rank.

A checker wants to know how many bytes the learner's code sent, which collectives it
called, and sometimes whether a message goes to the right peer, before a wrong one
hangs or crashes the job. Hooking the name ``dist`` in the namespace the learner's
source runs in is not enough: the learner may import it again (``import
torch.distributed as dist``, ``from torch.distributed import isend``), which binds the
real module or function and bypasses the hook. So ``DistWatch`` patches the functions
on the module objects themselves, ``torch.distributed`` and
``torch.distributed.distributed_c10d``, for the duration of a ``with`` block: whatever
name the learner reaches them by, and the imports inside its function run during the
call, it gets the watched one.

Point-to-point traffic is seen at ``isend`` / ``irecv``: torch's own ``send`` and
``recv`` call them, and ``batch_isend_irecv`` calls each ``P2POp``'s op, which is the
patched ``isend`` / ``irecv`` (``P2POp`` checks its op against the module's globals,
which are the patched ones too). A call made from inside another watched call (``send``
going through ``isend``) is not recorded twice. What stays unseen: the process group's
own methods (``dist.group.WORLD.send``) and ``torch.ops.c10d``: ``saw_nothing`` lets a
checker say plainly that it could not count, instead of blaming the learner.

A collective called with ``async_op=True`` returns torch's ``Work`` wrapped so that its
``wait()`` is noted too (``timeline``): a checker can tell a collective still in flight
from one already done. The wrapper hands every other attribute to the ``Work``; a wait
reached some other way (``get_future().wait()``) is not seen.
"""

from __future__ import annotations

import inspect

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

__all__ = ["DistWatch", "Diagnosis", "P2P", "COLLECTIVES"]

P2P = ("send", "recv", "isend", "irecv")
COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_single",
               "reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single", "broadcast",
               "reduce", "all_to_all", "all_to_all_single", "gather", "scatter")  # those torch has
# patched in distributed_c10d too, because torch calls them by their global names there
# (send -> isend, recv -> irecv, P2POp's check of its op, batch_isend_irecv)
_BOTH = ("isend", "irecv")


class Diagnosis(Exception):
    """Raised on a rank by a checker's watch when the learner's code is about to do
    something wrong (a message to the wrong peer): its text is the verdict.
    ``learner.run_learner`` turns it into ``verdict(False, text)``, so no rank has to
    hang or crash before the learner hears what is wrong."""


class DistWatch:
    """``with DistWatch() as w: fn(...)`` on a rank. Afterwards: ``w.calls``, the
    names of the watched functions called, in order (one per call the learner made);
    ``w.sent`` / ``w.received``, bytes of the tensors passed to send/isend and
    recv/irecv; ``w.messages``, (kind, peer, bytes) per point-to-point call, kind
    "send" or "recv", peer a global rank (None: receive from anyone).

    ``w.collectives``: (op, ranks of its group, elements it reduces or contributes) per
    collective call, for checkers that ask *which* group carried how much.

    ``w.timeline``: the order of events, ("issue", i) when collective ``i`` (an index into
    ``collectives``) is called and ("done", i) when it has returned (blocking) or its
    ``Work`` has been waited for (``async_op=True``); a checker may add its own events
    (the learner's matmuls) to see what ran while a collective was in flight.

    ``on_message(kind, peer, tensor)``, if given, is called before each point-to-point
    call is made; it may raise ``Diagnosis`` to stop the rank with a verdict.

    A call is recorded by the watch active when it is made, not the one active when the
    function was looked up: ``from torch.distributed import all_reduce`` during the
    forward binds a watched function that a custom autograd backward may call later,
    under the backward's watch."""

    def __init__(self, on_message=None):
        self.calls: list[str] = []
        self.messages: list[tuple[str, int | None, int]] = []
        self.collectives: list[tuple[str, tuple | None, int]] = []
        self.timeline: list[tuple] = []
        self.sent = self.received = 0
        self._on_message = on_message

    @property
    def saw_nothing(self) -> bool:
        """No point-to-point message and no collective seen on this rank."""
        return not self.calls

    def __enter__(self):
        if not _active:
            _patch()
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)
        if not _active:  # restored however the block ends
            _restore()
        return False

    def _note(self, kind: str, args, kwargs) -> None:
        """Record one point-to-point call: (tensor, peer, group, tag) as torch takes them,
        by position or by name (dst/src, group_dst/group_src)."""
        names = ("tensor", ("dst" if kind == "send" else "src"), "group", "tag")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        tensor = bound.get("tensor")
        peer = bound.get(names[1])
        group_peer = bound.get("group_dst" if kind == "send" else "group_src")
        if peer is None and group_peer is not None:
            group = bound.get("group")
            try:  # a rank of ``group``: the global rank it is
                peer = group_peer if group is None else dist.get_global_rank(group, group_peer)
            except (ValueError, RuntimeError):
                peer = group_peer
        size = tensor.numel() * tensor.element_size() if isinstance(tensor, torch.Tensor) else 0
        if kind == "send":
            self.sent += size
        else:
            self.received += size
        self.messages.append((kind, peer, size))
        if self._on_message is not None:
            self._on_message(kind, peer, tensor)


    def _note_collective(self, op: str, real, args, kwargs) -> int | None:
        """Record one collective: its group's ranks and the elements of its input (the
        tensor all-reduced, the piece gathered, the whole list reduce-scattered); its
        index in ``collectives`` (None: not recorded)."""
        try:
            bound = inspect.signature(real).bind_partial(*args, **kwargs).arguments
        except (TypeError, ValueError):
            return None
        group = bound.get("group")
        try:
            ranks = tuple(dist.get_process_group_ranks(group)) if group is not None \
                else tuple(range(dist.get_world_size()))
        except (ValueError, RuntimeError):
            ranks = None
        data = next((bound[k] for k in ("tensor", "input", "input_tensor", "input_list")
                     if k in bound), None)
        if isinstance(data, (list, tuple)):
            numel = sum(t.numel() for t in data if isinstance(t, torch.Tensor))
        else:
            numel = data.numel() if isinstance(data, torch.Tensor) else 0
        self.collectives.append((op, ranks, numel))
        return len(self.collectives) - 1

    def _issued(self, index: int, result):
        """Collective ``index`` was called: blocking (no ``Work`` back) it is done already;
        with ``async_op=True`` it is done when its ``Work`` has been waited for."""
        self.timeline.append(("issue", index))
        if not hasattr(result, "wait"):
            self.timeline.append(("done", index))
            return result
        return _WatchedWork(result, self, index)


class _WatchedWork:
    """torch's ``Work`` for an async collective, noting ("done", i) in its watch's
    timeline when first waited for; every other attribute is the ``Work``'s own."""

    __slots__ = ("_work", "_watch", "_index", "_waited")

    def __init__(self, work, watch: DistWatch, index: int):
        self._work, self._watch, self._index, self._waited = work, watch, index, False

    def wait(self, *args, **kwargs):
        result = self._work.wait(*args, **kwargs)
        if not self._waited:
            self._waited = True
            self._watch.timeline.append(("done", self._index))
        return result

    def __getattr__(self, name):
        return getattr(self._work, name)


# --- the patching: once per process, while at least one watch is active ----------------------

_active: list[DistWatch] = []
_real: dict[str, object] = {}      # op -> torch's own function
_wrappers: dict[str, object] = {}  # op -> its watched stand-in (made once, kept)
_depth = [0]  # > 0 inside a watched call: torch calling itself is not the learner


def _wrap(op: str, real):
    p2p = op in P2P
    kind = "send" if op in ("send", "isend") else "recv"

    def watched(*args, **kwargs):
        index = None
        if _active and _depth[0] == 0:
            watch = _active[-1]
            watch.calls.append(op)
            if p2p:
                watch._note(kind, args, kwargs)
            else:
                index = watch._note_collective(op, real, args, kwargs)
        _depth[0] += 1
        try:
            result = real(*args, **kwargs)
        finally:
            _depth[0] -= 1
        return result if index is None else watch._issued(index, result)

    watched.__name__ = watched.__qualname__ = op
    watched.__doc__ = real.__doc__
    watched.__wrapped__ = real
    return watched


def _patch() -> None:
    for op in P2P + COLLECTIVES:
        real = getattr(dist, op, None)
        if real is None:
            continue
        real = _real.setdefault(op, getattr(real, "__wrapped__", real))
        wrapper = _wrappers.setdefault(op, _wrap(op, real))
        setattr(dist, op, wrapper)
        if op in _BOTH:
            setattr(c10d, op, wrapper)


def _restore() -> None:
    for op, real in _real.items():
        setattr(dist, op, real)
        if op in _BOTH:
            setattr(c10d, op, real)

"""Instrumentation the runner hands to a ZeRO trainer, kept out of the algorithm:

  MemoryProbe  the bytes a rank holds after a step (params / grads / optimizer, as in
               the ZeRO paper's Fig. 1), plus the peak of the transient buffers the
               algorithm reports (gathered parameters, gradient buckets), and weak
               references that show those buffers really are freed.
  Tracer       where each unit's backward begins, to cut the backward pass into one
               compute span per unit in the trace (``trace.backward_segments``).

The trainer calls ``probe.allocated(kind, tensor)`` / ``probe.freed(kind, nbytes)``
and ``tracer.unit_output(h, label)`` / ``with tracer.backward():`` unconditionally;
both cost next to nothing when nobody looks.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import torch

from .. import trace
from ..memory import held_bytes


class MemoryProbe:
    """Bytes held, by kind. ``held(trainer)`` counts ``trainer.states()`` ({"params",
    "grads", "optimizer"}: lists of tensors; unique storages, so a view of a flat buffer
    is no extra memory) and adds the peaks of the transient kinds since ``reset()``."""

    TRANSIENT = ("gathered", "buckets")  # stage 3's gathered parameters; stage 2-3's buckets

    def __init__(self):
        self.live = dict.fromkeys(self.TRANSIENT, 0)
        self.peak = dict.fromkeys(self.TRANSIENT, 0)
        self._refs = {k: [] for k in self.TRANSIENT}

    def reset(self) -> None:
        self.peak = dict(self.live)

    def allocated(self, kind: str, t: torch.Tensor) -> torch.Tensor:
        self.live[kind] += t.nbytes
        self.peak[kind] = max(self.peak[kind], self.live[kind])
        self._refs[kind] = [r for r in self._refs[kind] if r() is not None] + [weakref.ref(t)]
        return t

    def freed(self, kind: str, nbytes: int) -> None:
        self.live[kind] -= nbytes

    def alive(self, kind: str) -> int:
        """Bytes of ``kind`` buffers still referenced by anyone (ask after a moment:
        gloo drops its reference to a buffer on its own thread, just after the call)."""
        return sum(r().nbytes for r in self._refs[kind] if r() is not None)

    def held(self, trainer) -> dict:
        out = held_bytes(**trainer.states())
        out.update({f"{k}_peak": v for k, v in self.peak.items()})
        return out


class Tracer:
    """Per-unit backward compute spans: a hook on each unit's output notes when its
    backward begins; after backward, the pass is cut there and around the blocking
    collectives and waits inside it (not around async ones: those ran beside it)."""

    def __init__(self):
        self.marks = []

    def unit_output(self, h: torch.Tensor, label: str) -> torch.Tensor:
        if trace.is_recording() and h.requires_grad:
            h.register_hook(lambda g: self.marks.append((trace.now(), label)))
        return h

    @contextmanager
    def backward(self):
        t0 = trace.now()
        try:
            yield
        finally:
            if trace.is_recording():
                blocking = [(e["start"], e["end"]) for e in trace.recorded(since=t0)
                            if e["kind"] != "compute" and not e["meta"].get("async_op")]
                for start, end, label in trace.backward_segments(t0, trace.now(), blocking,
                                                                 self.marks):
                    trace.record("compute", f"backward {label}", start, end)
            self.marks = []

"""Instrumentation the runner hands to a ZeRO part, kept out of the algorithm:

  MemoryProbe  the bytes a rank holds after a step (params / grads / optimizer, as in
               the ZeRO paper's Fig. 1), plus the peak of the transient buffers the
               parts report (gathered parameters, gradient buckets), and weak
               references that show those buffers really are freed.
  Tracer       per-unit compute spans, from hooks it attaches to the model from
               outside: each unit's forward, and where each unit's backward begins, to
               cut the backward pass into one span per unit (``trace.backward_segments``).

The parts call ``probe.allocated(kind, tensor)`` / ``probe.freed(kind, nbytes)`` when
given a probe; both cost next to nothing.
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

    def held(self, states: dict) -> dict:
        """``held_bytes`` of ``states`` ({"params", "grads", "optimizer"}: lists of tensors;
        unique storages, so a view of a buffer is no extra memory) and the transient peaks."""
        out = held_bytes(**states)
        out.update({f"{k}_peak": v for k, v in self.peak.items()})
        return out


class Tracer:
    """Per-unit compute spans. ``attach(units)``, units = {label: (first module, last
    module)} in forward order: a unit's forward runs from its first module's forward to
    its last one's end; a hook on the last one's output notes when the unit's backward
    begins. ``with tracer.backward():`` then cuts the pass there and around the blocking
    collectives and waits inside it (not around async ones: those ran beside it)."""

    def __init__(self):
        self.marks = []
        self._open = {}

    def attach(self, units: dict) -> None:
        for label, (first, last) in units.items():
            first.register_forward_pre_hook(lambda m, a, label=label: self._start(label))
            last.register_forward_hook(lambda m, a, out, label=label: self._end(label, out))

    def _start(self, label: str) -> None:
        self._open[label] = trace.now()

    def _end(self, label: str, out) -> None:
        t0 = self._open.pop(label, None)
        if t0 is not None:
            trace.record("compute", f"forward {label}", t0, trace.now())
        if trace.is_recording() and isinstance(out, torch.Tensor) and out.requires_grad:
            out.register_hook(lambda g: self.marks.append((trace.now(), label)))

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

"""What a rank holds: the bytes of the storages behind tensors, counted once each.

Every strategy reports its memory the same way -- bytes by kind (params, grads,
optimizer, ...) after a step -- so that measurements sit next to ``cost.zero_memory``
and ``cost.activation_memory``. A view of a buffer already counted is not counted
again: ZeRO's parameters are views of one flat buffer, and that is one allocation.

``ActivationCounter`` measures the other half, what a forward keeps for backward; the
runners attach it from outside (saved-tensor hooks), never inside an algorithm.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


def held_bytes(**kinds) -> dict:
    """{kind: bytes of the distinct storages behind its tensors (None skipped; a storage
    already counted under an earlier kind is not counted again)} plus "total"."""
    seen = set()
    out = {}
    for kind, tensors in kinds.items():
        out[kind] = 0
        for t in tensors:
            if t is None or t.untyped_storage().data_ptr() in seen:
                continue
            seen.add(t.untyped_storage().data_ptr())
            out[kind] += t.untyped_storage().nbytes()
    out["total"] = sum(out.values())
    return out


def optimizer_states(opt) -> list[torch.Tensor]:
    """The tensors an optimizer keeps (for AdamW: exp_avg, exp_avg_sq, step); ``opt``
    may be a list of optimizers."""
    opts = opt if isinstance(opt, (list, tuple)) else [opt]
    return [v for o in opts for s in o.state.values() for v in s.values()
            if isinstance(v, torch.Tensor)]


class ActivationCounter:
    """Bytes of the distinct storages autograd saves for backward during a forward
    (``saved_tensors_hooks``), the tensors in ``weights`` left out (weights are not
    activations; Korthikanti et al. 2022, §4 count only activations).

        counter = ActivationCounter(model.parameters())
        counter.regions({block: f"blocks.{i}" for i, block in enumerate(model.blocks)})
        with counter.measure("step 0"):
            loss = model(x, y)
        counter.bytes["step 0"]     # {"blocks.0": ..., "blocks.1": ..., "other": ...}

    A saved storage counts once, in the region (module) whose forward saved it first;
    ``count_inputs(modules)`` also counts each module's input (an activation-checkpointed
    module keeps only that), and ``measure`` yields ``keep(t)`` to count a tensor by hand.
    A key is measured once; a second ``measure`` of it counts nothing (hooks cost time)."""

    def __init__(self, weights=()):
        self._weights = {t.untyped_storage().data_ptr() for t in weights}
        self.bytes: dict = {}
        self._seen: dict | None = None  # storage -> bytes, while measuring
        self._region = "other"

    def regions(self, modules: dict) -> list:
        """Attribute what each module's forward saves to its label ({module: label})."""
        handles = []
        for module, label in modules.items():
            handles.append(module.register_forward_pre_hook(
                lambda m, a, label=label: setattr(self, "_region", label)))
            handles.append(module.register_forward_hook(
                lambda m, a, out: setattr(self, "_region", "other"), always_call=True))
        return handles

    def count_inputs(self, modules) -> list:
        return [m.register_forward_pre_hook(lambda m, args: self.keep(args[0]))
                for m in modules]

    @contextmanager
    def measure(self, key="forward"):
        if key in self.bytes:
            yield lambda t: t
            return
        self._seen = {}
        counts = {}
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.keep, lambda t: t):
                yield self.keep
            for nbytes, region in self._seen.values():
                counts[region] = counts.get(region, 0) + nbytes
            self.bytes[key] = counts
        finally:
            self._seen = None

    def total(self, key) -> int:
        return sum(self.bytes[key].values())

    def keep(self, t):
        if self._seen is not None and isinstance(t, torch.Tensor):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in self._weights and ptr not in self._seen:
                self._seen[ptr] = (t.untyped_storage().nbytes(), self._region)
        return t

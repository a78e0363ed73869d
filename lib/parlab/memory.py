"""What a rank holds: the bytes of the storages behind tensors, counted once each.

Every strategy reports its memory the same way -- bytes by kind (params, grads,
optimizer, ...) after a step -- so that measurements sit next to ``cost.zero_memory``
and ``cost.activation_memory``. A view of a buffer already counted is not counted
again: ZeRO's parameters are views of one flat buffer, and that is one allocation.
"""

from __future__ import annotations

import torch


def held_bytes(**kinds) -> dict:
    """{kind: bytes of the distinct storages behind its tensors (None skipped; a storage
    already counted under an earlier kind is not counted again)} plus "total"."""
    seen, out = set(), {}
    for kind, tensors in kinds.items():
        out[kind] = 0
        for t in tensors:
            if t is None or t.untyped_storage().data_ptr() in seen:
                continue
            seen.add(t.untyped_storage().data_ptr())
            out[kind] += t.untyped_storage().nbytes()
    out["total"] = sum(out.values())
    return out


def optimizer_states(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The tensors an optimizer keeps (for AdamW: exp_avg, exp_avg_sq, step)."""
    return [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]

"""Loss scaling for fp16 gradients (Micikevicius et al. 2018, "Mixed precision training",
arXiv 1710.03740, §3.2): multiply the loss by S before backward, so the gradients, S times
larger, sit inside fp16's range instead of below its smallest subnormal (2^-24); divide
them by S before the optimizer sees them.

Dynamic scaling picks S by trial: start high; if any gradient came out inf or NaN (it
overflowed fp16's 65504), skip this step and halve S; after ``growth_interval`` good steps
in a row, double S. ``DynamicLossScaler`` is that rule and nothing else; the tests check it
against ``torch.amp.GradScaler("cpu")`` step by step (same scales, same skipped steps, same
parameters). bf16 has fp32's exponent range, so it needs none of this.

fp16 on this CPU is emulated where it matters for the lesson: ``to_fp16_grads`` rounds
every gradient to fp16 and back (what storing it in fp16 would do: underflow to 0 below
2^-24, inf above 65504), since a CPU backward in fp16 is slow and partly unsupported.
"""

from __future__ import annotations

import torch

from ..validate import check_float, check_int


class DynamicLossScaler:
    """Use as: ``(scaler.scale(loss)).backward()``, then ``scaler.step(optimizer)`` (finds
    inf/NaN, unscales, steps or skips), then ``scaler.update()``. ``skipped`` lists the
    steps (0, 1, ...) whose update was skipped; ``scales`` the scale each step used."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000):
        self.scale_value = check_float("init_scale", init_scale)
        self.growth = check_float("growth_factor", growth_factor, 1.0)
        self.backoff = check_float("backoff_factor", backoff_factor)
        if self.backoff >= 1:
            raise ValueError(f"backoff_factor={backoff_factor} must be < 1")
        self.interval = check_int("growth_interval", growth_interval)
        self.good_steps = 0          # steps in a row without inf/NaN
        self.found_inf = False
        self.steps = 0
        self.skipped = []
        self.scales = []

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale_value

    def get_scale(self) -> float:
        return self.scale_value

    @torch.no_grad()
    def step(self, optimizer) -> bool:
        """Unscale the gradients of ``optimizer``'s parameters and step, unless one of them
        is inf/NaN: then nothing changes (the step is skipped). Returns whether it stepped."""
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        self.found_inf = not all(torch.isfinite(g).all() for g in grads)
        self.scales.append(self.scale_value)
        if not self.found_inf:
            for g in grads:
                g.mul_(1.0 / self.scale_value)  # the scale is a power of 2: exact
            optimizer.step()
        else:
            self.skipped.append(self.steps)
        self.steps += 1
        return not self.found_inf

    def update(self) -> None:
        """The next step's scale: x backoff after an overflow, x growth after
        ``growth_interval`` good steps in a row."""
        if self.found_inf:
            self.scale_value *= self.backoff
            self.good_steps = 0
        else:
            self.good_steps += 1
            if self.good_steps == self.interval:
                self.scale_value *= self.growth
                self.good_steps = 0


@torch.no_grad()
def to_fp16_grads(params) -> None:
    """Round every gradient to fp16 and back to its own dtype, in place (see module doc)."""
    for p in params:
        if p.grad is not None:
            p.grad.copy_(p.grad.to(torch.float16).to(p.grad.dtype))


@torch.no_grad()
def underflow(grads: torch.Tensor, dtype=torch.float16, scale: float = 1.0) -> dict:
    """What storing ``grads * scale`` in ``dtype`` loses, as fractions of the nonzero
    elements: "zero" (flushed to 0), "subnormal" (kept with fewer mantissa bits), "overflow"
    (became inf)."""
    g = grads.detach().float().flatten() * scale
    nz = g != 0
    n = max(int(nz.sum()), 1)
    a = g[nz].abs()
    q = g[nz].to(dtype).float().abs()
    tiny = torch.finfo(dtype).smallest_normal
    return {"zero": int((q == 0).sum()) / n,
            "subnormal": int(((q > 0) & (q < tiny)).sum()) / n,
            "overflow": int(torch.isinf(q).sum()) / n,
            "below_normal": int((a < tiny).sum()) / n}

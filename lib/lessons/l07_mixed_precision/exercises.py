"""Notebook 07 (mixed precision), "Your turn": checkers and reference solutions.

Numeric answers compare with ``parlab.cost`` (bytes per parameter, unit roundoff, ulps) and
``torch.finfo``. The coding exercise ``my_scaled_step(params, optimizer, scale, good_steps,
growth_interval)`` is one step of dynamic loss scaling; the checker runs it in a child
process on real training (the lab's GPT, fp16-rounded gradients, an overflow planted at one
step) beside ``torch.amp.GradScaler("cpu")`` and compares the scales, the skipped steps and
the parameters.
"""

from __future__ import annotations

import torch

from parlab import cost
from parlab.validate import check_int
from lessons.common.checkers import core
from lessons.common.i18n import t
from .hints import HINTS
from .text import TEXT
from lessons.common import record

__all__ = ["check_bytes_per_param", "check_fp16_smallest_normal", "check_vanishing_update",
           "check_bf16_allreduce_bound", "check_scaled_step", "solution_scaled_step", "SOLUTIONS",
           "hints", "solution_html", "show_solution"]


# --- numeric answers ----------------------------------------------------------------------

def check_bytes_per_param(answer, recipe: str = "bf16_mixed") -> dict:
    """Bytes per parameter of model states for ``recipe`` (Adam)."""
    b = cost.training_bytes_per_param(recipe)
    parts = " + ".join(f"{v:g} ({t(TEXT, 'part_' + k) if 'part_' + k in TEXT else k})"
                       for k, v in b.items() if k != "total" and v)
    return core.check_number(answer, b["total"], unit="bytes", name="bytes per parameter",
                             hint=t(TEXT, "bytes_hint"),
                             explanation=t(TEXT, "bytes_why", parts=parts, total=b["total"]))


def check_fp16_smallest_normal(answer) -> dict:
    """fp16's smallest positive normal number."""
    want = torch.finfo(torch.float16).smallest_normal
    # read off a table or worked out by hand: right to the digits typed (6.1e-5, 6.104e-5)
    return core.check_number(answer, want, digits=2, name="smallest normal",
                             hint=t(TEXT, "normal_hint"), explanation=t(TEXT, "normal_why", want=want))


def check_vanishing_update(answer, weight: float = 1.0, fmt: str = "bf16",
                           direction: str = "down") -> dict:
    """The largest update moving ``weight`` (a value of ``fmt``) ``direction`` ("up": an
    increase, "down": a decrease) that rounding to nearest in ``fmt`` takes back to ``weight``."""
    want = cost.vanishing_update(weight, fmt, direction)
    other = cost.vanishing_update(weight, fmt, "up" if direction == "down" else "down")
    w = f"{weight:.10g}"
    nxt = f"{weight - 2 * want if direction == 'down' else weight + 2 * want:.10g}"
    if want != other:  # a power of two: the threshold of the other side is the likely slip
        got, bad = core.read_number(answer, "threshold")
        if bad is None and got and abs(got / other - 1) <= 0.01:
            return core.verdict(False, t(TEXT, "vanish_other_side" if direction == "down"
                                         else "vanish_other_side_up",
                                         got=got, w=w, other=other, fmt=fmt), want=want)
    tie = t(TEXT, "vanish_tie_even" if _even(weight, fmt) else "vanish_tie_odd",
            want=want, w=w, nxt=nxt)
    return core.check_number(answer, want, rel_tol=0.01, name="threshold",
                             hint=t(TEXT, f"vanish_hint_{direction}", fmt=fmt,
                                    bits=cost.mantissa_bits(fmt), w=w),
                             explanation=t(TEXT, f"vanish_why_{direction}", fmt=fmt, w=w, nxt=nxt,
                                           gap=2 * want, tie=tie))


def _even(weight: float, fmt: str) -> bool:
    """Whether ``weight``'s last mantissa bit in ``fmt`` is 0 (a tie rounds to it)."""
    return (abs(weight) / cost.ulp(weight, fmt)) % 2 == 0 if weight else True


def check_bf16_allreduce_bound(answer, world_size: int = 1024) -> dict:
    """(n - 1) u for a ring's bf16 sum over ``world_size`` ranks (first order of gamma_(n-1))."""
    check_int("world_size", world_size, 2)
    want = (world_size - 1) * cost.unit_roundoff("bf16")
    return core.check_number(answer, want, rel_tol=0.01, name="(n-1) u",
                             hint=t(TEXT, "bound_hint"),
                             explanation=t(TEXT, "bound_why", n=world_size, want=want))


# --- coding exercise: one step of dynamic loss scaling, on real training --------------------

def solution_scaled_step(params, optimizer, scale, good_steps, growth_interval):
    """After ``(loss * scale).backward()``: skip on inf/NaN, else unscale and step; return
    (next scale, good steps in a row)."""
    grads = [p.grad for p in params if p.grad is not None]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    if not finite:
        return scale * 0.5, 0  # overflow: no step, back off
    for g in grads:
        g.mul_(1.0 / scale)
    optimizer.step()
    good_steps += 1
    if good_steps == growth_interval:
        return scale * 2.0, 0
    return scale, good_steps


def _train(step_fn, steps, overflow_at, growth_interval, init_scale):
    from parlab.model import GPT, reference_optimizer
    from .models import SMALL, _batch
    from parlab.precision.loss_scaling import to_fp16_grads
    torch.set_num_threads(1)
    model = GPT(SMALL)
    params = list(model.parameters())
    opt = reference_optimizer(params, 1e-3)
    scale, good, scales, skipped = init_scale, 0, [], []
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval) \
        if step_fn is None else None
    for s in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = model(*_batch(s))[1]
        scaled = scaler.scale(loss) if scaler else loss * scale
        scales.append(float(scaler.get_scale()) if scaler else float(scale))
        (scaled * (2.0 ** 24 if s == overflow_at else 1.0)).backward()
        to_fp16_grads(params)
        before = [p.detach().clone() for p in params]
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            scale, good = step_fn(params, opt, scale, good, growth_interval)
        if all(torch.equal(a, p) for a, p in zip(before, params)):
            skipped.append(s)
    return {"scales": scales, "skipped": skipped, "params": [p.detach().clone() for p in params],
            "names": [n for n, _ in model.named_parameters()]}


def scaled_step_harness(source, name, steps, overflow_at, growth_interval, init_scale):
    """In the child: the learner's step and torch's GradScaler on the same training."""
    fn = core.load_learner(source, name)
    return {"learner": _train(fn, steps, overflow_at, growth_interval, init_scale),
            "torch": _train(None, steps, overflow_at, growth_interval, init_scale)}


def check_scaled_step(fn, steps: int = 8, overflow_at: int = 3, growth_interval: int = 2,
                      init_scale: float = 1024.0, timeout: float = 60.0) -> dict:
    """Train the lab's GPT ``steps`` steps with ``fn`` as the loss-scaling step, an overflow
    planted at step ``overflow_at``; compare with torch.amp.GradScaler("cpu")."""
    check_int("steps", steps, 2)
    check_int("overflow_at", overflow_at, 0, steps - 1)
    check_int("growth_interval", growth_interval)
    core.check_timeout(timeout)
    got, bad = core.run_learner(scaled_step_harness, fn, 1, steps, overflow_at, growth_interval,
                                float(init_scale), timeout=timeout)
    if bad:
        return bad
    mine, ref = got[0]["learner"], got[0]["torch"]
    if mine["skipped"] != ref["skipped"]:
        return core.verdict(False, t(TEXT, "step_skipped", mine=mine["skipped"], ref=ref["skipped"],
                                     overflow_at=overflow_at))
    for s, (a, b) in enumerate(zip(mine["scales"], ref["scales"])):
        if a != b:
            return core.verdict(False, t(TEXT, "step_scale", s=s, a=a, b=b, mine=mine["scales"][:s + 1],
                                         ref=ref["scales"][:s + 1]))
    for name, a, b in zip(ref["names"], mine["params"], ref["params"]):
        d = (a - b).abs().max().item()
        if not d <= 1e-6:
            return core.verdict(False, t(TEXT, "step_params", steps=steps, name=name, d=d))
    return core.verdict(True, t(TEXT, "step_ok", steps=steps, scales=mine["scales"],
                                overflow_at=overflow_at))


# --- reference solutions on demand ---------------------------------------------------------

SOLUTIONS = {"my_scaled_step": solution_scaled_step}


def hints(name: str):
    """Hint 1, hint 2, then the reference solution ("my_scaled_step"), each behind a click."""
    return core.hints(SOLUTIONS, HINTS, name)


def solution_html(name: str) -> str:
    return core.solution_html(SOLUTIONS, name)


def show_solution(name: str) -> None:
    """Print the reference solution of a coding exercise (its source)."""
    core.show_solution(SOLUTIONS, name)


record.watch(globals())  # each check_* above also leaves its verdict in the learner's record

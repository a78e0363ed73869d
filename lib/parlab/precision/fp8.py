"""FP8, emulated: quantize = scale, clamp, cast to float8, cast back (and unscale).

FP8 has so little range (e4m3: 2^-9 .. 448) that a tensor must be scaled into it first:
s = fp8_max / amax, q = fp8(clamp(x s)), x_hat = q / s (Micikevicius et al. 2022, "FP8
formats for deep learning", arXiv 2209.05433, §3-4: e4m3 for weights and activations,
e5m2's wider range for gradients, one scale per tensor). What sets amax:

  current   the tensor's own amax, this step (one extra pass over it before the cast);
  delayed   the largest amax of the last ``history`` steps (NVIDIA Transformer Engine's
            recipe): no extra pass, but a tensor that grew since overflows and is clamped.

and over how many values one scale is shared (``block``): the whole tensor, or tiles --
DeepSeek-V3 (arXiv 2412.19437, §3.3.2 "fine-grained quantization") scales activations per
1 x 128 tile (one token, 128 channels) and weights per 128 x 128 block, so one outlier
spoils only its own tile. Here the GEMM then runs in fp32 on the dequantized values: the
rounding is fp8's, the speed is not (an fp8 GEMM needs an fp8 tensor core).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..validate import check_choice, check_int
from .formats import dtype_of

SCALINGS = ("current", "delayed")


def _tiles(x: torch.Tensor, block):
    """x (2-D) cut into (rows/br, br, cols/bc, bc) tiles; ``block`` clipped to x's shape."""
    rows, cols = x.shape
    br = min(block[0], rows)
    bc = min(block[1], cols)
    if rows % br or cols % bc:
        raise ValueError(f"block={tuple(block)} must tile the tensor's shape {tuple(x.shape)}")
    return x.reshape(rows // br, br, cols // bc, bc)


def amax(x: torch.Tensor, block=None) -> torch.Tensor:
    """|x|'s maximum: one scalar (``block`` None), or one per tile (a 2-D x, or x flattened
    to (-1, last dim)), shaped to broadcast against the tiles."""
    if block is None:
        return x.detach().abs().amax().float()
    t = _tiles(x.detach().reshape(-1, x.shape[-1]), block)
    return t.abs().amax(dim=(1, 3), keepdim=True).float()


def fake_quantize(x: torch.Tensor, fmt="e4m3", block=None, scale_amax=None) -> torch.Tensor:
    """x rounded through fp8 ``fmt`` with the scale fp8_max / amax (``scale_amax``: the amax
    to use, e.g. a delayed one; default: x's own, per ``block``), back in x's dtype."""
    dt = dtype_of(fmt)
    top = torch.finfo(dt).max
    a = amax(x, block) if scale_amax is None else scale_amax
    s = top / a.clamp_min(1e-12)
    if block is None:
        q = (x.float() * s).clamp(-top, top).to(dt).float() / s
        return q.to(x.dtype)
    t = _tiles(x.detach().reshape(-1, x.shape[-1]).float(), block)
    q = (t * s).clamp(-top, top).to(dt).float() / s
    return q.reshape(x.shape).to(x.dtype)


def relative_error(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """||x_hat - x|| / ||x|| (Frobenius)."""
    x = x.detach().double()
    x_hat = x_hat.detach().double()
    return float((x_hat - x).norm() / x.norm().clamp_min(1e-300))


class AmaxHistory:
    """Delayed scaling's state for one tensor: the amaxes of the last ``length`` steps."""

    def __init__(self, length: int = 16):
        self.length = check_int("length", length)
        self.seen = []

    def scale_amax(self, x: torch.Tensor) -> torch.Tensor:
        """The amax to scale this step's x by (the history's max; x's own on the first
        step), then x's amax joins the history."""
        now = amax(x)
        use = max(self.seen) if self.seen else now
        self.seen = (self.seen + [now])[-self.length:]
        return torch.as_tensor(use)


class _Fp8Matmul(torch.autograd.Function):
    """y = x_q w_q^T, with the output's gradient rounded through e5m2 in backward."""

    @staticmethod
    def forward(ctx, xq, wq, grad_fmt):
        ctx.save_for_backward(xq, wq)
        ctx.grad_fmt = grad_fmt
        return xq @ wq.t()

    @staticmethod
    def backward(ctx, gy):
        xq, wq = ctx.saved_tensors
        g = gy if ctx.grad_fmt is None else fake_quantize(gy, ctx.grad_fmt)
        return g @ wq, (g.reshape(-1, g.shape[-1]).t() @ xq.reshape(-1, xq.shape[-1])), None


class Fp8Linear(nn.Module):
    """An ``nn.Linear`` whose GEMMs see fp8-rounded operands: input and weight in e4m3,
    the output's gradient in e5m2 (``grad_fmt``, None: not rounded). Shares the parameters
    of the Linear it was made from. ``scaling``: "current" or "delayed"; ``block``: None
    (per tensor) or the tile for the weight (inputs get 1 x block[1])."""

    def __init__(self, linear: nn.Linear, scaling: str = "current", block=None,
                 grad_fmt="e5m2", history: int = 16):
        super().__init__()
        self.weight = linear.weight
        self.bias = linear.bias
        self.scaling = check_choice("scaling", scaling, SCALINGS)
        if scaling == "delayed" and block is not None:
            raise ValueError("scaling='delayed' keeps one amax per tensor: use block=None")
        self.block = block
        self.grad_fmt = grad_fmt
        self.hist = {"x": AmaxHistory(history), "w": AmaxHistory(history)}
        self.weight_fp8 = None  # the last forward's fp8 weight (what an fp8 GEMM reads)

    def _q(self, t, which):
        if self.scaling == "delayed":
            return fake_quantize(t, "e4m3", scale_amax=self.hist[which].scale_amax(t))
        block = None if self.block is None else (self.block if which == "w" else (1, self.block[1]))
        return fake_quantize(t, "e4m3", block)

    def forward(self, x):
        wq = self._q(self.weight, "w")
        self.weight_fp8 = wq.detach().to(torch.float8_e4m3fn)  # kept, as a cache of it would be
        xq = self._q(x, "x")
        # straight-through: the GEMM's inputs are the rounded values, the gradient flows to
        # the unrounded x and weight as if the rounding were the identity
        y = _Fp8Matmul.apply(x + (xq - x).detach(), self.weight + (wq - self.weight).detach(),
                             self.grad_fmt)
        return y if self.bias is None else y + self.bias


def apply_fp8(model: nn.Module, **kw) -> nn.Module:
    """Every ``nn.Linear`` in ``model`` replaced, in place, by an ``Fp8Linear`` over the same
    parameters (``kw`` as Fp8Linear's). Returns the model."""
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Fp8Linear(child, **kw))
        else:
            apply_fp8(child, **kw)
    return model


def fp8_weight_copies(model: nn.Module) -> list[torch.Tensor]:
    """The fp8 weight copies the model's Fp8Linear layers hold (after a forward)."""
    return [m.weight_fp8 for m in model.modules() if isinstance(m, Fp8Linear)
            and m.weight_fp8 is not None]



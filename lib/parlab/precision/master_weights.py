"""Where the weight update lands: AdamW with bf16 weights, four ways.

Adam's step is computed in fp32 from fp32 moments every time; the four modes differ
only in how ``w + update`` is stored:

  "bf16"        round to nearest into the bf16 weight. An update below half the gap to the
                weight's neighbour on that side is lost (``cost.vanishing_update``): a
                LayerNorm gain of 1.0 has bf16 neighbours 2^-7 above and 2^-8 below, so an
                increase up to 2^-8 and a decrease up to 2^-9 vanish, and every Adam step of
                size lr = 1e-3 on it does.
  "master"      an fp32 master copy takes the update; the bf16 weight is a rounded copy of
                it for the forward and backward (Micikevicius et al. 2018, "Mixed precision
                training", arXiv 1710.03740, §3.1: the fp32 master copy of weights).
  "kahan"       bf16 weight plus a bf16 compensation buffer holding what rounding dropped,
                added back at the next step (Kahan summation; Zamirai et al. 2020,
                "Revisiting BFloat16 training", arXiv 2010.06192).
  "stochastic"  round at random, unbiased on average (Zamirai et al. 2020, ibid.).

The weights may be bf16 tensors, or fp32 tensors that hold bf16 values (rounded here at
construction): the same roundings, at fp32's speed on a CPU without bf16 matmuls (7x
faster for the lab's GPT here), so the loss curves differ from true bf16 compute only by
the rounding inside the forward and backward, which is not what this lesson is about.

``step()`` counts the vanished updates: elements whose intended change was nonzero but
whose stored weight did not change. With fp32 parameters and mode "fp32" it is AdamW
(``torch.optim.AdamW``, decoupled decay, Loshchilov & Hutter 2019), which the tests check.
"""

from __future__ import annotations

import torch

from ..model import ADAMW_BETAS
from ..validate import check_choice, check_float
from .formats import round_stochastic

MODES = ("fp32", "bf16", "master", "kahan", "stochastic")


class MixedAdamW:
    """AdamW over ``params`` (bf16 tensors for every mode but "fp32"). After ``step()``:
    ``vanished`` / ``nonzero`` = elements of the last step whose update was lost / meant
    to move; ``states()`` = what it keeps, for ``memory.held_bytes``."""

    def __init__(self, params, lr: float = 1e-3, betas=ADAMW_BETAS, eps: float = 1e-8,
                 weight_decay: float = 0.0, mode: str = "master", seed: int = 0):
        self.mode = check_choice("mode", mode, MODES)
        self.lr = check_float("lr", lr)
        self.wd = check_float("weight_decay", weight_decay, strict=False)
        self.betas = betas
        self.eps = check_float("eps", eps)
        self.params = [p for p in params if p.requires_grad]
        for p in self.params:
            if p.dtype not in (torch.float32, torch.bfloat16) or (mode == "fp32" and p.dtype != torch.float32):
                raise ValueError(f"mode={mode!r}: parameters must be fp32{'' if mode == 'fp32' else ' or bf16'}, "
                                 f"got {p.dtype}")
        self.t = 0
        self.m = [torch.zeros_like(p, dtype=torch.float32) for p in self.params]
        self.v = [torch.zeros_like(p, dtype=torch.float32) for p in self.params]
        self.master = ([p.detach().float().clone() for p in self.params] if mode == "master"
                       else [])  # from the weights as given (fp32 at init: nothing lost yet)
        if mode != "fp32":
            with torch.no_grad():
                for p in self.params:
                    p.copy_(p.to(torch.bfloat16))  # what a bf16 weight holds
        self.comp = ([torch.zeros_like(p, dtype=torch.bfloat16) for p in self.params] if mode == "kahan" else [])
        self.gen = torch.Generator().manual_seed(seed)
        self.vanished = 0
        self.nonzero = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def _update(self, i: int, w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """The intended change of weight ``w`` (fp32): -lr (m_hat / (sqrt(v_hat) + eps) + wd w)."""
        b1, b2 = self.betas
        self.m[i].lerp_(g, 1 - b1)
        self.v[i].mul_(b2).addcmul_(g, g, value=1 - b2)
        m_hat = self.m[i] / (1 - b1 ** self.t)
        v_hat = self.v[i] / (1 - b2 ** self.t)
        return -self.lr * (m_hat / (v_hat.sqrt() + self.eps) + self.wd * w)

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        self.vanished = 0
        self.nonzero = 0
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            if self.mode == "master":
                w = self.master[i]
                u = self._update(i, w, p.grad.float())
                old = w.clone()
                w.add_(u)               # the fp32 master keeps (almost) every update
                kept = w != old
                new = w.to(torch.bfloat16)  # the compute copy, rounded afresh each step
            else:
                w = p.float()
                u = self._update(i, w, p.grad.float())
                if self.mode == "fp32":
                    new = w + u
                elif self.mode == "bf16":
                    new = (w + u).to(torch.bfloat16)
                elif self.mode == "stochastic":
                    new = round_stochastic(w + u, self.gen)
                else:  # kahan: fold in what the last rounding dropped, keep what this one drops
                    y = u - self.comp[i].float()
                    new = (w + y).to(torch.bfloat16)
                    self.comp[i].copy_((new.float() - w) - y)
                kept = new != p
            moved = u != 0
            self.vanished += int((moved & ~kept).sum())
            self.nonzero += int(moved.sum())
            p.copy_(new)

    def states(self) -> dict:
        """{"master": fp32 copies, "optimizer": m, v and any compensation buffers}."""
        return {"master": list(self.master), "optimizer": self.m + self.v + self.comp}

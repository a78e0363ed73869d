"""What an op computes, kept out of the executor: the executor says *which* op runs
(F, B or W of a micro-batch on a chunk) and moves the messages; a compute object
says what the op does. The runner picks one and passes it in.

  RealCompute       the stages' forward, backward and weight-gradient passes; what a
                    forward keeps for backward is counted beside it by the
                    ``memory.ActivationCounter`` it is given, never inside the schedule walk
  EmulatedCompute   each op sleeps its fixed duration and makes a stamped message of
                    the right size, so the schedule's shape shows even with more
                    ranks than cores

Both speak in terms of ``Stash`` (what one (micro-batch, chunk) keeps between
its F and its last backward op) and ``Action`` (``schedules.Action``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ..memory import ActivationCounter
from .backward import WeightConsumers, input_grad, weight_nodes


@dataclass
class Stash:
    """What the forward of one (micro-batch, chunk) leaves for its backward."""
    input: torch.Tensor                     # received activation (token ids on stage 0)
    output: torch.Tensor                    # sent activation (the loss on the last stage)
    output_grad: torch.Tensor | None = None  # kept by B for W (zero-bubble schedules)
    consumers: WeightConsumers | None = None  # B's gradients into the weights' nodes, for W
    nbytes: int = 0                         # bytes autograd keeps for the backward


class RealCompute:
    """The model chunks of one rank. F runs a chunk (and, on the last stage, the loss
    scaled by 1/m: the mean over the global batch); B back-propagates through it -- or,
    with ``split_backward`` (zero-bubble schedules), computes the input gradient only
    and keeps what W needs to compute the weight gradients later (``backward.py``)."""

    def __init__(self, stages, m: int, split_backward: bool, counter=None):
        self.stages = stages
        self.m = m
        self.split_backward = split_backward
        self.params = [q for st in stages for q in st.parameters()]
        # each chunk's weights by their graph node, for B to find where they enter
        self.weights = [weight_nodes(st.parameters()) for st in stages] if split_backward else []
        if counter is None:  # what autograd saves, and each module's input (all a
            counter = ActivationCounter(self.params)  # checkpointed module keeps)
            for st in stages:
                counter.count_inputs(st.layers)
        self.counter = counter

    def forward(self, a, stage: int, inp, target):
        if inp.is_floating_point():  # an activation: its gradient goes back to stage - 1
            inp.requires_grad_()
        chunk = self.stages[a.chunk]
        with self.counter.measure((a.mb, a.chunk)) as keep:
            out = chunk(inp)
            if chunk.last:
                out = chunk.loss(out, target) / self.m  # the stage's own loss
            for t in (inp, out):
                keep(t)
        return out

    def kept_bytes(self, a) -> int:
        return self.counter.total((a.mb, a.chunk))

    joins_b_w = True  # a B and its W back to back run as one backward (executor.py)

    def backward(self, a, stage: int, stash: Stash, grad, whole: bool = False):
        """The gradient with respect to the chunk's input (None on stage 0); ``whole``:
        the weight gradients too, in the same walk."""
        wants = stash.input.requires_grad
        if self.split_backward and not whole:
            if not wants:  # stage 0 sends nothing back: its whole backward waits for W
                return None
            dx, stash.consumers = input_grad(stash.output, grad, stash.input,
                                             self.weights[a.chunk])
            return dx
        torch.autograd.backward(stash.output, grad)
        return stash.input.grad if wants else None

    def weight(self, a, stage: int, stash: Stash) -> None:
        """Weight gradients: from the gradients B kept at the weights' nodes -- or, where
        B walked nothing (stage 0) or could not keep them, back from the output."""
        if stash.consumers is not None:
            stash.consumers.weight_grads()
        else:
            torch.autograd.backward(stash.output, stash.output_grad,
                                    inputs=list(self.stages[a.chunk].parameters()))


class EmulatedCompute:
    """Every op lasts exactly ``durations[op]`` seconds and does nothing else but check
    the message it received and make the one it sends: a zero tensor of the real
    activation's ``shape`` stamped with (micro-batch, stage), so a message that comes
    from the wrong op fails loudly. The last stage's F makes a zero "loss"."""

    def __init__(self, durations: dict, shape: tuple, n_stages: int, device="cpu"):
        self.durations = durations
        self.shape = shape
        self.n_stages = n_stages
        self.device = device
        self.params: list = []

    def forward(self, a, stage: int, inp, target):
        with self._lasting("F"):
            if stage > 0:
                self._check(inp, a, stage - 1)
            if stage < self.n_stages - 1:
                return self._stamp(a, stage)
            return torch.zeros((), device=self.device)

    def kept_bytes(self, a) -> int:
        return 0

    def backward(self, a, stage: int, stash: Stash, grad, whole: bool = False):
        with self._lasting("B"):
            if grad is not None:
                self._check(grad, a, stage + 1)
            return self._stamp(a, stage) if stage > 0 else None

    def weight(self, a, stage: int, stash: Stash) -> None:
        with self._lasting("W"):
            pass

    @contextmanager
    def _lasting(self, op: str):
        deadline = time.perf_counter() + self.durations[op]
        yield
        time.sleep(max(0.0, deadline - time.perf_counter()))

    def _stamp(self, a, stage: int) -> torch.Tensor:
        out = torch.zeros(self.shape, device=self.device)
        out[0, 0, :2] = torch.tensor([a.mb, stage], device=self.device)
        return out

    @staticmethod
    def _check(received, a, src: int) -> None:
        if received[0, 0, :2].tolist() != [a.mb, src]:
            raise RuntimeError(f"{a}: expected the message of micro-batch {a.mb} from stage "
                               f"{src}, got {received[0, 0, :2].tolist()}")

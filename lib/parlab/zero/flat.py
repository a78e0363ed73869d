"""How ZeRO lays out the model states: parameters flattened into one fp32 buffer per
group -- a gradient bucket in stages 0-2, a unit (the embeddings, one block, the head)
in stage 3 -- padded to a multiple of the number of shards, so that each rank owns one
contiguous slice [lo, hi) of every buffer and a reduce-scatter or an all-gather of the
buffer is one collective (DeepSpeed's flat partitions; FSDP1's FlatParameter).
"""

from __future__ import annotations

import math

import torch


class Flat:
    """The parameters ``names`` of ``model`` as one flat buffer of ``padded`` elements,
    cut into ``parts`` equal shards; this rank's is shard ``index``: [lo, hi).

    The trainer decides what the rank keeps of it, in these attributes:
      flat      the full parameters (stages 0-2; module parameters are views of it)
      shard     what this rank's optimizer updates (a slice of flat, or its own tensor)
      incoming  where this step's full gradients land, before they are reduced
      reduced   where this rank's summed gradient slice lands
    """

    def __init__(self, label: str, model: torch.nn.Module, names: list[str], parts: int = 1,
                 index: int = 0):
        self.label, self.model, self.names = label, model, names
        self.shapes = [model.get_parameter(n).shape for n in names]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.numel = sum(self.sizes)
        self.offsets = [sum(self.sizes[:i]) for i in range(len(names))]
        self.padded = -(-self.numel // parts) * parts  # a multiple of parts: equal shards
        self.lo, self.hi = index * self.padded // parts, (index + 1) * self.padded // parts
        self._slots = [(model.get_submodule(n.rpartition(".")[0]), n.rpartition(".")[2])
                       for n in names]
        self.flat = self.shard = self.incoming = self.reduced = None
        self.pending = len(names)  # gradients still to arrive this step
        self.wait = None  # waits for the collective in flight on this buffer

    def flatten(self, device) -> torch.Tensor:
        """The current parameters, copied into a new padded flat buffer."""
        flat = torch.zeros(self.padded, device=device)
        torch.cat([self.model.get_parameter(n).detach().flatten() for n in self.names],
                  out=flat[:self.numel])
        return flat

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """One view of ``flat`` per parameter, shaped like it."""
        return [v.view(s) for v, s in zip(flat[:self.numel].split(self.sizes), self.shapes)]

    def view(self, flat: torch.Tensor, i: int) -> torch.Tensor:
        """The view of ``flat`` that is parameter ``i``."""
        return flat[self.offsets[i]:self.offsets[i] + self.sizes[i]].view(self.shapes[i])

    def parameters(self) -> list[torch.Tensor]:
        return [self.model.get_parameter(n) for n in self.names]

    def bind(self, tensors) -> None:
        """Make the module attributes point at ``tensors`` (Parameters, plain tensors, or
        None: the module holds nothing)."""
        for (module, attr), t in zip(self._slots, tensors):
            module._parameters.pop(attr, None)
            setattr(module, attr, t)

    def named(self, flat: torch.Tensor) -> dict:
        """{parameter name: a CPU copy of its slice of ``flat``}."""
        return {n: v.cpu().clone() for n, v in zip(self.names, self.views(flat))}

"""Pipeline stages from an ordered list of modules (Huang et al. 2019, "GPipe", §2.2).

Any model that is a chain of modules -- each feeding the next -- can be cut into stages:
``PipelineStage(modules, loss_fn)`` runs its modules one after the other, and the last
stage (the one given the ``loss_fn``) also computes the loss. The executor does not look
inside. The lab's GPT lists itself as such a chain (``GPT.layers()``: embeddings,
blocks, head); ``gpt_stages`` cuts it: ``p`` stages, one per rank, or ``v`` chunks per
rank for interleaved schedules, the embeddings on the first, the head on the last.

Another model's blocks rarely take the activation alone: a Llama decoder layer wants a
causal mask and its rotary tables (cos, sin), a GPT-2 block returns a tuple. Only
activations travel between stages, so ``BlockAdapter`` makes what a block needs again,
on its own stage, from the activation it receives, and picks the activation out of what
it returns (tests/parlab/any_model/test_hf_models.py cuts Hugging Face's Llama so).
"""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint as _checkpoint


def split_layers(n_layers: int, n_stages: int, first: int | None = None,
                 last: int | None = None) -> list[range]:
    """Layers of each virtual stage, balanced: sizes differ by at most one, the larger
    stages first (the last stage also carries the head and the loss). ``first`` /
    ``last``: the first / last stage takes exactly that many (0 allowed: the embedding
    or the head alone), the stages between them share the rest, balanced -- fewer
    blocks beside the embedding and the head, whose vocabulary-sized matrices cost
    about as much as a few blocks (Megatron-LM's decoder_first_pipeline_num_layers /
    decoder_last_pipeline_num_layers). Checked by ``check_uneven``."""
    if first is None and last is None:
        base, extra = divmod(n_layers, n_stages)
        sizes = [base + (s < extra) for s in range(n_stages)]
    else:
        check_uneven(n_layers, n_stages, first, last)
        ends = [x for x in (first, last) if x is not None]
        inner = n_stages - len(ends)
        inner = split_layers(n_layers - sum(ends), inner) if inner else []
        sizes = ([first] if first is not None else []) + [len(r) for r in inner] + (
            [last] if last is not None else [])
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + size)
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def check_uneven(n_layers: int, n_stages: int, first: int | None, last: int | None) -> None:
    """ValueError naming the field unless ``first`` / ``last`` (blocks on the first / last
    stage, or None) leave every stage between them at least one block."""
    for name, x in (("first_stage_layers", first), ("last_stage_layers", last)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
            raise ValueError(f"{name}={x!r} must be an integer >= 0 (or None)")
    if n_stages < 2:
        raise ValueError(f"first_stage_layers / last_stage_layers need at least 2 stages, "
                         f"got {n_stages}")
    ends = [x for x in (first, last) if x is not None]
    rest = n_layers - sum(ends)
    inner = n_stages - len(ends)
    if inner == 0 and rest:
        raise ValueError(f"first_stage_layers + last_stage_layers = {sum(ends)} must equal "
                         f"n_layers={n_layers}: there are only {n_stages} stages")
    if rest < inner:
        raise ValueError(f"first_stage_layers={first}, last_stage_layers={last} leave {rest} "
                         f"of n_layers={n_layers} blocks for {inner} other stage(s): each "
                         f"needs one")


class PipelineStage(nn.Module):
    """``modules`` run in order; with ``loss_fn`` this is a last stage. ``checkpoint``:
    the modules to run under activation checkpointing, which keeps only each one's input
    and recomputes it during backward (Chen et al. 2016, "Training deep nets with
    sublinear memory cost"). ``names``: a label per module, for tables."""

    def __init__(self, modules, loss_fn=None, checkpoint=(), names=None):
        super().__init__()
        self.layers = nn.ModuleList(modules)
        if not len(self.layers):
            raise ValueError("modules must list at least one module")
        self.loss_fn = loss_fn
        self.last = loss_fn is not None
        self.checkpointed = {id(m) for m in checkpoint}
        self.names = list(names) if names is not None else [type(m).__name__ for m in modules]

    def forward(self, x):
        for m in self.layers:
            x = _checkpoint(m, x, use_reentrant=False) if id(m) in self.checkpointed else m(x)
        return x

    def loss(self, out, targets):
        return self.loss_fn(out, targets)


class BlockAdapter(nn.Module):
    """``block`` as a pipeline layer, activation in, activation out:
    ``output(block(x, **extra(x)))``. ``extra(x)``: the keyword arguments the block needs
    beside x -- a causal mask, position ids, rotary tables -- computed from x itself (its
    shape, device and dtype), on every stage that runs the block; ``output(out)``: the
    activation, from what the block returns (``lambda out: out[0]`` for a tuple). A block
    that returns anything but a tensor without an ``output`` to say which part is the
    activation is refused (ValueError naming it) at its first forward, before any
    gradient or step.

        BlockAdapter(layer, extra=lambda x: {"attention_mask": causal(x),
                                             "position_embeddings": rotary(x, pos(x))})"""

    def __init__(self, block: nn.Module, extra=None, output=None):
        super().__init__()
        self.block = block
        self.extra = extra
        self.output = output

    def forward(self, x):
        out = self.block(x, **(self.extra(x) if self.extra is not None else {}))
        if self.output is not None:
            out = self.output(out)
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{type(self.block).__name__} returned a {type(out).__name__}, "
                             "not an activation tensor: give BlockAdapter an output= that "
                             "picks it (lambda out: out[0] for a tuple)")
        return out


class AtPositions(nn.Module):
    """``module(x, positions)`` with fixed ``positions``: under context parallelism a
    rank's tokens sit at these global positions, and a pipeline passes activations only."""

    def __init__(self, module: nn.Module, positions):
        super().__init__()
        self.module = module
        self.positions = positions  # not a buffer: it differs by rank, and DP broadcasts buffers

    def forward(self, x):
        return self.module(x, self.positions)


def gpt_stages(model, p: int, rank: int, v: int = 1, checkpoint: bool = False,
               positions=None, where=None, first: int | None = None,
               last: int | None = None) -> list[PipelineStage]:
    """The v chunks of ``rank`` of the lab's GPT (already parallelized or not): chunk c is
    virtual stage c * p + rank, the blocks balanced by ``split_layers``. Their modules are
    ``model``'s own, so their parameters are the model's. ``positions``: the global
    positions of this rank's tokens (context parallelism), given to the embeddings and
    the blocks. ``where``: a ``placement.Placement`` other than round-robin (ZB-V's V:
    chunk 1 of rank r is stage 2p - 1 - r). ``first`` / ``last``: blocks on the first /
    last stage (``split_layers``)."""
    embed, *blocks, head = model.layers()
    if positions is not None:
        embed = AtPositions(embed, positions)
        blocks = [AtPositions(b, positions) for b in blocks]
    n = p * v if where is None else where.n_stages
    chunks = []
    for c in range(v):
        s = c * p + rank if where is None else where.stage(rank, c)
        cut = split_layers(len(blocks), n, first, last)[s]
        mine = [(f"blocks.{i}", blocks[i]) for i in cut]
        if s == 0:
            mine.insert(0, ("embed", embed))
        if s == n - 1:
            mine.append(("head", head))
        chunks.append(PipelineStage([m for _, m in mine], model.loss_fn if s == n - 1 else None,
                                    [m for name, m in mine if checkpoint and name.startswith("blocks")],
                                    [name for name, _ in mine]))
    return chunks

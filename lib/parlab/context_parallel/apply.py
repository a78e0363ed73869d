"""Context parallelism applied to a model: its attention cores replaced by ring attention
or Ulysses over one process group, everything else untouched.

A rank holds s/cp positions of every sequence (``layout.py``) and runs the whole model
on them: every layer but attention works position by position, so only attention needs
the other ranks -- and only its core, softmax(q k^T) v, which ``ring_attention`` and
``ulysses_attention`` compute exactly over the sharded sequence. Two more things differ
from one device, both the caller's (the runner):

* positions: each token is embedded with its *global* position (``shard_positions``,
  passed as the model's ``positions``), so the zigzag layout's second chunk gets rows
  late in ``wpe`` and the right rotation under RoPE;
* the loss: each rank's is the mean over its tokens; with equal shards the mean of the
  ranks' losses is the reference's, and so is the mean of their gradients, which
  ``sync_grads`` computes (one flat all-reduce, as Megatron-LM reduces gradients over its
  context-parallel ranks together with the data-parallel ones).
"""

from __future__ import annotations

from functools import partial

import torch.distributed as dist
import torch.nn as nn

from .. import comm, trace
from . import ring, ulysses

ATTENTIONS = ("ring", "ulysses")


def context_parallel_core(group, layout: str, attention: str):
    """The causal attention core of a rank holding ``layout``'s shard over ``group``."""
    fn = {"ring": ring.ring_attention, "ulysses": ulysses.ulysses_attention}[attention]
    return partial(fn, causal=True, group=group, layout=layout)


def apply_context_parallel(model: nn.Module, group=None, layout: str = "zigzag",
                           attention: str = "ring") -> list[str]:
    """Every attention core of ``model`` -- a submodule with a callable ``core``, (B, H, T,
    hd) q, k, v -> causal softmax(q k^T / sqrt(hd)) v, as the lab's attention has -- made
    context-parallel over ``group``, in place; returns the dotted names of the modules
    whose core it swapped. A model with none (another library's attention computes its
    core inline, where nothing can be swapped from outside) is a ValueError: it would
    otherwise train each rank's shard as if it were the whole sequence, silently."""
    swapped = [name for name, m in model.named_modules() if callable(getattr(m, "core", None))]
    if not swapped:
        raise ValueError(f"apply_context_parallel found no attention core in "
                         f"{type(model).__name__}: it looks for submodules with a callable "
                         "'core' attribute (q, k, v) -> causal attention, as "
                         "parlab.model.CausalSelfAttention has")
    core = context_parallel_core(group, layout, attention)
    for name in swapped:
        model.get_submodule(name).core = core
    return swapped


def sync_grads(model: nn.Module, group=None) -> None:
    """Average every gradient over the context-parallel group: one flat, traced all-reduce."""
    with trace.tagged(layer="all", direction="backward", operator="cp_grad_sync"):
        comm.all_reduce_grads(model.parameters(), group, 1.0 / dist.get_world_size(group),
                              label="cp grads")

"""Tensor parallelism applied to a model by a plan: module name -> how to split it.

    parallelize(model, {"fc1": Colwise(), "fc2": Rowwise()}, group)

swaps each named submodule in place for its tensor-parallel form, built from the full
weights it already holds (torch's ``parallelize_module`` works the same way;
torchtitan keeps one such plan per model). Names may use ``*`` for one component
("blocks.*.attn.qkv"). The styles (Shoeybi et al. 2019, §3; Korthikanti et al. 2022,
§4.2.2 for sequence parallelism):

  Colwise(parts)        nn.Linear -> ColumnParallelLinear: rank r keeps a slice of the
                        output features (of each part: q, k and v alike)
  Rowwise()             nn.Linear -> RowParallelLinear: a slice of the input features,
                        the partial outputs summed (g, or g-bar with sequence parallelism)
  VocabParallel()       nn.Embedding -> VocabParallelEmbedding: a slice of the rows
  SequenceParallel()    a replicated module between the blocks (a norm, a position
                        table): untouched, but with sequence parallelism its parameters see
                        only this rank's positions, so their gradients are partial sums
                        that ``sync_sequence_parallel_grads`` adds up after backward;
                        ``split_input``: its input is the whole sequence (positions), cut
                        to this rank's share first

``gpt_plan(config)`` is the lab's GPT's plan -- the same for the GPT-2 and the Llama-style
variant and for any ``d_ff``: nothing in it special-cases the lab's block.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn as nn

from .. import comm, trace
from ..mesh import check_group
from ..validate import check_bool
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding, unshard,
                     vocab_parallel_cross_entropy)
from .mappings import split_sequence, tp_size


@dataclass(frozen=True)
class Colwise:
    parts: int | tuple = 1   # equal parts, or their sizes ([q | k | v] under GQA)
    overlap: bool = False    # the input-gradient collective beside the weight-gradient matmul
    overlap_chunks: int = 1  # SP's forward all-gather pipelined with the GEMM (Wang et al. §3)

    def __call__(self, module, group, sequence_parallel):
        return ColumnParallelLinear.from_linear(module, group, self.parts, sequence_parallel,
                                                self.overlap, self.overlap_chunks)


@dataclass(frozen=True)
class Rowwise:
    overlap_chunks: int = 1  # the GEMM pipelined with SP's forward reduce-scatter

    def __call__(self, module, group, sequence_parallel):
        return RowParallelLinear.from_linear(module, group, sequence_parallel,
                                             self.overlap_chunks)


@dataclass(frozen=True)
class VocabParallel:
    def __call__(self, module, group, sequence_parallel):
        return VocabParallelEmbedding.from_embedding(module, group, sequence_parallel)


@dataclass(frozen=True)
class SequenceParallel:
    split_input: bool = False

    def __call__(self, module, group, sequence_parallel):
        if sequence_parallel:
            for p in module.parameters():
                p.sequence_parallel = True
            if self.split_input:
                module.register_forward_pre_hook(
                    lambda m, args: (split_sequence(args[0], group, dim=0), *args[1:]))
        return module


def parallelize(model: nn.Module, plan: dict, group=None, sequence_parallel: bool = False):
    """Swap every submodule ``plan`` names for its tensor-parallel form over ``group``,
    in place; returns ``model``. A name that matches no submodule is a ValueError."""
    check_group(group)
    check_bool("sequence_parallel", sequence_parallel)
    names = [n for n, _ in model.named_modules() if n]
    for pattern, style in plan.items():
        hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)
                and n.count(".") == pattern.count(".")]
        if not hits:
            raise ValueError(f"plan entry {pattern!r} names no submodule of "
                             f"{type(model).__name__}")
        for name in hits:
            parent, _, child = name.rpartition(".")
            owner = model.get_submodule(parent)
            setattr(owner, child, style(getattr(owner, child), group, sequence_parallel))
    return model


def gpt_plan(config, overlap: bool = False, overlap_chunks: int = 1) -> dict:
    """The plan of the lab's GPT (``parlab.model``): whole heads per rank, Megatron's
    column-then-row pairs, vocabulary-parallel embedding and head. MoE blocks' experts
    stay whole (replicated over the group: Megatron's expert_tensor_parallel_size=1).
    ``overlap_chunks``: every column / row pair's SP collectives chunked and pipelined."""
    hd, kv, c = config.head_dim, config.n_kv_heads, overlap_chunks
    dense = [i for i in range(config.n_layers) if not config.is_moe_layer(i)]
    plan = {"wte": VocabParallel(),
            "blocks.*.ln1": SequenceParallel(), "blocks.*.ln2": SequenceParallel(),
            "blocks.*.attn.qkv": Colwise((config.n_heads * hd, kv * hd, kv * hd), overlap, c),
            "blocks.*.attn.proj": Rowwise(c),
            **{f"blocks.{i}.mlp.fc1": Colwise(2 if config.mlp == "swiglu" else 1, overlap, c)
               for i in dense},
            **{f"blocks.{i}.mlp.fc2": Rowwise(c) for i in dense},
            "ln_f": SequenceParallel(), "lm_head": Colwise(1, overlap, c)}
    if config.positions == "learned":
        plan["wpe"] = SequenceParallel(split_input=True)  # this rank's positions
    return plan


def parallelize_gpt(model, group=None, sequence_parallel: bool = False, overlap: bool = False,
                    overlap_chunks: int = 1):
    """The lab's GPT tensor-parallel over ``group``: its plan, and the vocabulary-parallel
    loss (the logits stay split: (B, T, V/t) per rank, never gathered)."""
    parallelize(model, gpt_plan(model.config, overlap, overlap_chunks), group, sequence_parallel)
    model.loss_fn = partial(vocab_parallel_cross_entropy, group=group)
    return model


def check_tp(config, tp: int, sequence_parallel: bool = False, seq_len: int | None = None):
    """ValueError unless ``tp`` can split ``config`` (whole heads, equal slices)."""
    for name in ("n_heads", "n_kv_heads", "d_ff", "vocab_size"):
        if getattr(config, name) % tp:
            raise ValueError(f"tp={tp} must divide {name}={getattr(config, name)}"
                             + (" (each rank holds whole KV heads; replicating them is not "
                                "implemented)" if name == "n_kv_heads" else ""))
    seq_len = config.seq_len if seq_len is None else seq_len
    if sequence_parallel and seq_len % tp:
        raise ValueError(f"tp={tp} must divide seq_len={seq_len}: sequence parallelism "
                         "gives each rank an equal run of positions")
    if sequence_parallel and config.n_experts and tp > 1:
        raise ValueError("sequence_parallel with MoE layers: the experts would see each "
                         "rank's positions only (not composed here)")


# --- after backward, and for the result ---------------------------------------------

def sequence_parallel_params(model: nn.Module) -> list:
    return [p for p in model.parameters() if getattr(p, "sequence_parallel", False)]


def sync_sequence_parallel_grads(model: nn.Module, group=None) -> None:
    """Sum, over the group, the gradients of parameters that saw only this rank's
    positions (norms, row-layer biases, the position table): one all-reduce of them all,
    flattened, once per step -- Megatron does the same after backward."""
    with trace.tagged(layer="all", direction="backward", operator="sp_param_grads"):
        comm.all_reduce_grads(sequence_parallel_params(model), group,
                              label="sequence-parallel grads")


@torch.no_grad()
def full_tensors(model: nn.Module, group=None, grads: bool = False, names=None) -> dict:
    """{name: full parameter (or gradient)}, reassembled from every rank's slice of it (a
    collective over the group, untraced: bookkeeping, not training), on the CPU.
    ``names``: {id(param): reference name} (default: the model's own names)."""
    import torch.distributed as dist
    t, out = tp_size(group), {}
    pairs = [(names[id(p)], p) for p in model.parameters() if id(p) in names] \
        if names is not None else list(model.named_parameters())
    for name, p in pairs:
        value = p.grad if grads else p
        if value is None:
            continue
        value = value.detach().contiguous()
        split = getattr(p, "tp_split", None)
        if split is None or t == 1:
            out[name] = value.cpu()
            continue
        shards = [torch.empty_like(value) for _ in range(t)]
        dist.all_gather(shards, value, group=group)
        out[name] = unshard([s.cpu() for s in shards], split)
    return out


class _RecomputedCore(torch.autograd.Function):
    """An attention core whose backward recomputes the scores and softmax from q, k, v:
    the 5 a s^2 b bytes of Korthikanti's layer are not kept (selective recomputation,
    Korthikanti et al. §5)."""

    @staticmethod
    def forward(ctx, core, q, k, v):
        ctx.core = core
        ctx.save_for_backward(q, k, v)
        with torch.no_grad():
            return core(q, k, v)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out = ctx.core(q, k, v)
        return (None, *torch.autograd.grad(out, (q, k, v), grad))


def recompute_attention(model: nn.Module) -> nn.Module:
    """Selective recomputation: every attention core of ``model`` (a module with a
    ``core``, as the lab's attention has) keeps only q, k and v for backward."""
    for m in model.modules():
        if callable(getattr(m, "core", None)):
            m.core = partial(_RecomputedCore.apply, m.core)
    return model

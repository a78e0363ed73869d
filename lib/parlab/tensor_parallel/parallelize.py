"""Tensor parallelism applied to a model by a plan: module name -> how to split it.

    swapped = apply_tensor_parallel(model, {"fc1": Colwise(), "fc2": Rowwise()}, group)

swaps each named submodule in place for its tensor-parallel form, built from the full
weights it already holds (torch's ``parallelize_module`` works the same way;
torchtitan keeps one such plan per model), and returns the names it swapped. Names may
use ``*`` for one component ("blocks.*.attn.qkv"). The styles (Shoeybi et al. 2019, §3;
Korthikanti et al. 2022, §4.2.2 for sequence parallelism):

  Colwise(parts)        nn.Linear or GPT-2's Conv1D -> ColumnParallelLinear: rank r keeps
                        a slice of the output features (of each part: q, k and v alike)
  Rowwise()             nn.Linear or Conv1D -> RowParallelLinear: a slice of the input
                        features, the partial outputs summed (g, or g-bar with sequence
                        parallelism)
  VocabParallel()       nn.Embedding -> VocabParallelEmbedding: a slice of the rows
  VocabParallelLoss()   a callable attribute (the lab's GPT's ``loss_fn``) -> the
                        vocabulary-parallel cross-entropy of a Colwise head's split logits
  SequenceParallel()    a replicated module between the blocks (a norm, a position
                        table): untouched, but with sequence parallelism its parameters see
                        only this rank's positions, so their gradients are partial sums
                        that ``sync_sequence_parallel_grads`` adds up after backward;
                        ``split_input``: its input is the whole sequence (positions), cut
                        to this rank's share first

A plan is checked whole before anything is swapped: an entry that names nothing, or a
style given a module it cannot split (a Colwise on a Conv2d, a VocabParallel on a
Linear...), is a ValueError naming the entry or the module's path and type. Nothing is
guessed: training a wrongly sliced weight runs, and is silently something else.

``gpt_plan(config)`` is the lab's GPT's plan -- the same for the GPT-2 and the Llama-style
variant and for any ``d_ff``: nothing in it special-cases the lab's block. Another
model's plan is written the same way (tests/parlab/any_model/test_hf_models.py has
GPT-2's MLPs and Llama's attention and MLP).
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
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                     check_embedding, linear_layout, unshard, vocab_parallel_cross_entropy)
from .mappings import split_sequence, tp_size


# Each style is called as style(module, group, sequence_parallel) -> its replacement;
# ``check(module)`` raises ValueError, before anything is swapped, if it cannot split it.

@dataclass(frozen=True)
class Colwise:
    parts: int | tuple = 1   # equal parts, or their sizes ([q | k | v] under GQA)
    overlap: bool = False    # the input-gradient collective beside the weight-gradient matmul
    overlap_chunks: int = 1  # SP's forward all-gather pipelined with the GEMM (Wang et al. §3)

    def check(self, module):
        linear_layout(module)

    def __call__(self, module, group, sequence_parallel):
        return ColumnParallelLinear.from_module(module, group, self.parts, sequence_parallel,
                                                self.overlap, self.overlap_chunks)


@dataclass(frozen=True)
class Rowwise:
    overlap_chunks: int = 1  # the GEMM pipelined with SP's forward reduce-scatter

    def check(self, module):
        linear_layout(module)

    def __call__(self, module, group, sequence_parallel):
        return RowParallelLinear.from_module(module, group, sequence_parallel,
                                             self.overlap_chunks)


@dataclass(frozen=True)
class VocabParallel:
    def check(self, module):
        check_embedding(module)

    def __call__(self, module, group, sequence_parallel):
        return VocabParallelEmbedding.from_embedding(module, group, sequence_parallel)


@dataclass(frozen=True)
class VocabParallelLoss:
    """For a callable attribute computing the mean next-token cross-entropy from
    (logits, targets): the same loss from this rank's (B, T, V/t) logit slice, never
    gathered (``vocab_parallel_cross_entropy``). The head must be Colwise."""

    def check(self, fn):
        if not callable(fn) or isinstance(fn, nn.Module):
            raise ValueError("VocabParallelLoss replaces a plain callable attribute "
                             "(logits, targets) -> loss, such as the lab's GPT's loss_fn")

    def __call__(self, fn, group, sequence_parallel):
        return partial(vocab_parallel_cross_entropy, group=group)


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


def apply_tensor_parallel(model: nn.Module, plan: dict, group=None,
                          sequence_parallel: bool = False) -> list[str]:
    """Swap, in place, everything ``plan`` names for its tensor-parallel form over
    ``group``; returns the dotted names swapped, in the model's order (callable
    attributes such as ``loss_fn`` last). The whole plan is checked first: ValueError
    for an entry that names nothing, a name two entries claim, or a module its style
    cannot split (naming its path and type) -- and then nothing has been swapped."""
    check_group(group)
    check_bool("sequence_parallel", sequence_parallel)
    targets = _resolve(model, plan)
    for name, style in targets:
        obj = _lookup(model, name)
        try:
            getattr(style, "check", lambda _: None)(obj)
        except ValueError as e:
            raise ValueError(f"{type(style).__name__} cannot take {name!r} of "
                             f"{type(model).__name__}, a {type(obj).__name__}: {e}") from None
    for name, style in targets:
        parent, _, child = name.rpartition(".")
        owner = model.get_submodule(parent)
        setattr(owner, child, style(getattr(owner, child), group, sequence_parallel))
    return [name for name, _ in targets]


def _resolve(model: nn.Module, plan: dict) -> list:
    """[(name, style)]: each entry's submodules (a name's dots must match the pattern's),
    or, if it names none, the callable attributes it names (``loss_fn``)."""
    order = [n for n, _ in model.named_modules() if n]
    chosen = {}
    attributes = []
    for pattern, style in plan.items():
        hits = [n for n in order if n.count(".") == pattern.count(".")
                and fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            hits = _callable_attributes(model, pattern)
            attributes += [(n, style) for n in hits]
        if not hits:
            raise ValueError(f"plan entry {pattern!r} names no submodule (nor callable "
                             f"attribute) of {type(model).__name__}")
        for n in hits:
            if n in chosen:
                raise ValueError(f"{n!r} is named by two plan entries")
            chosen[n] = style
    return [(n, chosen[n]) for n in order if n in chosen] + attributes


def _callable_attributes(model: nn.Module, pattern: str) -> list[str]:
    parents, _, attr = pattern.rpartition(".")
    owners = [""] if not parents else [n for n, _ in model.named_modules() if n and
                                       n.count(".") == parents.count(".") and
                                       fnmatch.fnmatchcase(n, parents)]
    return [f"{o}.{attr}" if o else attr for o in owners
            if callable(getattr(model.get_submodule(o), attr, None))]


def _lookup(model: nn.Module, name: str):
    parent, _, child = name.rpartition(".")
    return getattr(model.get_submodule(parent), child)


def gpt_plan(config, overlap: bool = False, overlap_chunks: int = 1) -> dict:
    """The plan of the lab's GPT (``parlab.model``): whole heads per rank, Megatron's
    column-then-row pairs, vocabulary-parallel embedding, head and loss (the logits
    stay split: (B, T, V/t) per rank, never gathered). MoE blocks' experts stay whole
    (replicated over the group: Megatron's expert_tensor_parallel_size=1).
    ``overlap_chunks``: every column / row pair's SP collectives chunked and pipelined.

        apply_tensor_parallel(gpt, gpt_plan(gpt.config), group, sequence_parallel)"""
    hd = config.head_dim
    kv = config.n_kv_heads
    c = overlap_chunks
    dense = [i for i in range(config.n_layers) if not config.is_moe_layer(i)]
    plan = {"wte": VocabParallel(),
            "blocks.*.ln1": SequenceParallel(), "blocks.*.ln2": SequenceParallel(),
            "blocks.*.attn.qkv": Colwise((config.n_heads * hd, kv * hd, kv * hd), overlap, c),
            "blocks.*.attn.proj": Rowwise(c),
            **{f"blocks.{i}.mlp.fc1": Colwise(2 if config.mlp == "swiglu" else 1, overlap, c)
               for i in dense},
            **{f"blocks.{i}.mlp.fc2": Rowwise(c) for i in dense},
            "ln_f": SequenceParallel(), "lm_head": Colwise(1, overlap, c),
            "loss_fn": VocabParallelLoss()}
    if config.positions == "learned":
        plan["wpe"] = SequenceParallel(split_input=True)  # this rank's positions
    return plan


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
    t = tp_size(group)
    out = {}
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


def recompute_attention(model: nn.Module) -> list[str]:
    """Selective recomputation: every attention core of ``model`` (a module with a
    ``core``, as the lab's attention has) keeps only q, k and v for backward. Returns the
    names of the modules whose core it wrapped; a ValueError when there is none."""
    done = []
    for name, m in model.named_modules():
        if callable(getattr(m, "core", None)):
            m.core = partial(_RecomputedCore.apply, m.core)
            done.append(name)
    if not done:
        raise ValueError(f"recompute_attention found no attention core in "
                         f"{type(model).__name__}: it wraps a submodule's callable `core` "
                         "(the lab's CausalSelfAttention has one)")
    return done

"""Megatron's tensor-parallel layers (Shoeybi et al. 2019, §3), built from full weights.

A linear layer Y = X A (torch's ``nn.Linear`` stores A transposed: ``weight`` is (out,
in); GPT-2's ``Conv1D`` in Hugging Face transformers stores A itself, (in, out), and
computes x @ W + b) can be split two ways over t ranks:

* by columns, A = [A_1 .. A_t]: rank r computes Y_r = X A_r, a slice of the output
  features, from the whole input.  ``ColumnParallelLinear``.
* by rows, A = [A_1; ..; A_t]: rank r computes X_r A_r from its slice of the input
  features; Y is the *sum* over ranks.  ``RowParallelLinear``.

Column then row needs no communication in between (each rank's output slice is
exactly the next layer's input slice, and GELU or per-head attention works slice by
slice), and one reduction after: g forward, f backward. Every layer here takes the
*full* initial weight and keeps its rank's slice, so any degree t starts from the
reference model's numbers. ``from_module`` knows exactly two layouts, ``nn.Linear``'s
and ``Conv1D``'s (``linear_layout``), and refuses any other module: slicing a weight
whose layout it guesses wrong would train something else without a word.

The vocabulary is split the same way: ``VocabParallelEmbedding`` (rows of the table)
and ``vocab_parallel_cross_entropy`` (columns of the logits), which computes the loss
from the ranks' logit slices without ever gathering the (batch, seq, vocab) logits.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import comm, trace
from . import mappings
from .collective_matmul import all_gather_matmul_forward, check_chunks, matmul_reduce_scatter
from .mappings import tp_size


def shard(full: torch.Tensor, dim: int, group, parts=1) -> torch.Tensor:
    """This rank's slice of ``full`` along ``dim``. ``parts``: ``full`` is blocks side by
    side -- a number of equal ones, or their sizes (qkv = [q | k | v], with fewer KV
    heads than query heads under GQA) -- and the rank takes its slice of each, so that it
    owns whole heads of q, k and v alike."""
    return slice_of(full, dim, parts, tp_size(group), dist.get_rank(group))


def slice_of(full: torch.Tensor, dim: int, parts, t: int, r: int) -> torch.Tensor:
    """``shard`` without a process group: slice ``r`` of ``t`` (no communication)."""
    blocks = full.chunk(parts, dim) if isinstance(parts, int) else full.split(list(parts), dim)
    for b in blocks:
        if b.size(dim) % t:
            raise ValueError(f"tp={t} must divide every part of the sharded dimension "
                             f"(sizes {[x.size(dim) for x in blocks]})")
    return torch.cat([b.chunk(t, dim)[r] for b in blocks], dim).clone()


def unshard(shards: list[torch.Tensor], split) -> torch.Tensor:
    """The reference tensor from every rank's slice (``shard`` undone)."""
    if split is None:
        return shards[0]
    dim, parts = split
    if isinstance(parts, int):
        pieces = [s.chunk(parts, dim) for s in shards]
    else:  # local sizes: each part's slice is its size / t
        pieces = [s.split([n // len(shards) for n in parts], dim) for s in shards]
    return torch.cat([torch.cat([p[j] for p in pieces], dim) for j in range(len(pieces[0]))], dim)


def is_conv1d(module: nn.Module) -> bool:
    """Hugging Face's ``transformers.pytorch_utils.Conv1D`` (GPT-2's linear layers), told
    by its name and shape, not imported (the library needs only torch): ``nf`` output
    features, weight (nx, nf), forward x @ weight + bias."""
    w = getattr(module, "weight", None)
    return (type(module).__name__ == "Conv1D" and isinstance(getattr(module, "nf", None), int)
            and isinstance(w, torch.Tensor) and w.dim() == 2 and w.size(1) == module.nf
            and getattr(module, "nx", w.size(0)) == w.size(0))


def linear_layout(module: nn.Module):
    """(weight, bias, transposed) of a layer computing x A + b: ``nn.Linear`` stores A^T
    (out, in), ``transposed=False``; ``Conv1D`` stores A (in, out), ``transposed=True``.
    Anything else is a ValueError: its weight's layout is unknown."""
    if isinstance(module, nn.Linear):
        return module.weight, module.bias, False
    if is_conv1d(module):
        return module.weight, module.bias, True
    raise ValueError(f"{type(module).__name__} is neither torch.nn.Linear nor transformers' "
                     "Conv1D: which dimension of its weight holds the output features is "
                     "unknown, so it cannot be split by columns or rows")


def check_embedding(module: nn.Module) -> None:
    """ValueError unless ``module`` is a plain ``nn.Embedding``: one row per token id,
    looked up and nothing more (the vocabulary-parallel lookup does only that)."""
    if not isinstance(module, nn.Embedding):
        raise ValueError(f"{type(module).__name__} is not a torch.nn.Embedding: its rows "
                         "are not known to be one per token id")
    if module.padding_idx is not None or module.max_norm is not None or \
            module.scale_grad_by_freq or module.sparse:
        raise ValueError("an nn.Embedding with padding_idx, max_norm, scale_grad_by_freq or "
                         "sparse: the vocabulary-parallel lookup does not reproduce them")


def _detached(t):
    return None if t is None else t.detach()


def _param(t: torch.Tensor | None, sequence_parallel: bool = False, split=None):
    """A parameter, labelled for what comes after backward and for reassembly:
    ``split`` = (dim, parts) if it is a slice of the reference tensor (see ``shard``),
    None if every rank holds all of it."""
    if t is None:
        return None
    p = nn.Parameter(t)
    # Replicated on every rank but fed only this rank's sequence shard: its gradient is
    # partial and must be summed over the group after backward (Korthikanti §4.2.2).
    p.sequence_parallel = sequence_parallel
    p.tp_split = split
    return p


# --- the column-parallel matmul with its communication fused in (Megatron-LM's
# LinearWithGradAccumulationAndAsyncCommunication, written small) ----------------------

class _ColumnParallelMatmul(torch.autograd.Function):
    """Y = X A_r + b_r, where X is either the whole input (f's job is done here: its
    backward all-reduce) or, with sequence parallelism, this rank's sequence shard,
    all-gathered first (Korthikanti's g).

    Two refinements over "f, then a plain linear":
    * with sequence parallelism only the *shard* of X is saved for backward, and it is
      all-gathered again there (Korthikanti §4.2.2): t times fewer bytes kept, one
      more all-gather per layer in backward;
    * with ``overlap``, the input-gradient collective is *started* before the
      weight-gradient matmul and waited for after it, so the two run together;
    * with ``chunks`` > 1 (sequence parallelism), the forward all-gather is pipelined
      with the GEMM chunk by chunk (``collective_matmul``; Wang et al. 2023, §3).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, group, sequence_parallel, overlap, chunks=1):
        ctx.group = group
        ctx.sp = sequence_parallel
        ctx.overlap = overlap
        ctx.has_bias = bias is not None
        trace.keep_tags(ctx)
        ctx.save_for_backward(x, weight)
        with trace.tagged(direction="forward", operator="sp_gather"):
            if sequence_parallel and chunks > 1:
                return all_gather_matmul_forward(x, weight, bias, group, chunks)
            total = mappings.gather_sequence(x, group) if sequence_parallel else x
        return F.linear(total, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        with trace.tagged_as(ctx, direction="backward", operator="sp_regather"):
            total = mappings.gather_sequence(x, ctx.group) if ctx.sp else x
        grad_input = grad.matmul(weight)                       # (B, T, in): partial over ranks
        with trace.tagged_as(ctx, direction="backward", operator="sp_gather" if ctx.sp else "f"):
            wait = _start_input_grad_reduction(grad_input, ctx.group, ctx.sp, ctx.overlap)
        grad_2d = grad.reshape(-1, grad.size(-1))
        grad_weight = grad_2d.t().matmul(total.reshape(-1, total.size(-1)))
        grad_bias = grad_2d.sum(0) if ctx.has_bias else None
        grad_input = wait()                                   # overlap: it ran beside the matmul
        return grad_input, grad_weight, grad_bias, None, None, None, None


def all_gather_matmul(x: torch.Tensor, weight: torch.Tensor, group=None, chunks: int = 1,
                      bias: torch.Tensor | None = None) -> torch.Tensor:
    """The column-parallel layer's forward under sequence parallelism: all-gather the
    sequence shards, then X A_r (+ b_r), in ``chunks`` pipelined pieces (Wang et al.
    2023, §3); backward unchunked. x: (B, T/t, in) -> (B, T, out/t)."""
    if tp_size(group) == 1:
        return F.linear(x, weight, bias)
    check_chunks(chunks, x.size(1))
    return _ColumnParallelMatmul.apply(x, weight, bias, group, True, False, chunks)


def _start_input_grad_reduction(grad_input, group, sequence_parallel, overlap):
    """Start summing the input gradient over the group (all-reduce; with sequence
    parallelism a reduce-scatter to this rank's positions). Returns wait() -> result.
    Without ``overlap`` the collective completes before this returns."""
    if not sequence_parallel:
        out = grad_input.contiguous()
        if not overlap:
            comm.all_reduce(out, group=group)
            return lambda: out
        waiter = comm.all_reduce_async(out, group=group)
        return lambda: (waiter(), out)[1]
    t = tp_size(group)
    B, T, h = grad_input.shape
    out = torch.empty(B * (T // t) * h, dtype=grad_input.dtype, device=grad_input.device)
    if not overlap:
        comm.reduce_scatter(out, mappings.rank_major(grad_input, t), group=group)
        return lambda: out.view(B, T // t, h)
    waiter = comm.reduce_scatter_async(out, mappings.rank_major(grad_input, t), group=group)
    return lambda: (waiter(), out.view(B, T // t, h))[1]


class ColumnParallelLinear(nn.Module):
    """Keeps rows ``r`` of the (out, in) weight -- A's columns -- and the matching bias
    slice. Input: the whole activation (or its sequence shard with ``sequence_parallel``);
    output: this rank's slice of the output features. ``parts``: see ``shard``.
    ``overlap_chunks``: the forward all-gather pipelined with the GEMM in that many
    chunks (sequence parallelism only; ``all_gather_matmul``). ``transposed``: the weight
    is stored (in, out), as ``Conv1D`` stores it, and stays so (same name, same layout:
    ``full_tensors`` gives back the original tensor); the slice is then of its columns."""

    def __init__(self, weight, bias, group=None, sequence_parallel=False, overlap=False,
                 parts=1, overlap_chunks=1, transposed=False):
        super().__init__()
        self.group = group
        self.sequence_parallel = sequence_parallel
        self.overlap = overlap
        self.overlap_chunks = check_chunks(overlap_chunks, None, sequence_parallel)
        self.transposed = transposed   # the output features' dim
        out = 1 if transposed else 0
        self.weight = _param(shard(weight, out, group, parts), split=(out, parts))
        self.bias = _param(None if bias is None else shard(bias, 0, group, parts), split=(0, parts))

    @classmethod
    @torch.no_grad()
    def from_module(cls, module: nn.Module, group=None, parts=1, sequence_parallel=False,
                    overlap=False, overlap_chunks=1) -> "ColumnParallelLinear":
        """This rank's column slice of a full ``nn.Linear`` or ``Conv1D`` (its weight is
        the reference); any other module is a ValueError (``linear_layout``)."""
        weight, bias, transposed = linear_layout(module)
        return cls(weight.detach(), _detached(bias), group, sequence_parallel, overlap, parts,
                   overlap_chunks, transposed)

    def forward(self, x):
        w = self.weight.t() if self.transposed else self.weight   # (out/t, in): a view
        if tp_size(self.group) == 1:
            return F.linear(x, w, self.bias)
        if not (self.sequence_parallel or self.overlap):   # the textbook form: f, then matmul
            return F.linear(mappings.f(x, self.group), w, self.bias)
        return _ColumnParallelMatmul.apply(x, w, self.bias, self.group, self.sequence_parallel,
                                           self.overlap, self.overlap_chunks)


class RowParallelLinear(nn.Module):
    """Keeps columns ``r`` of the (out, in) weight -- A's rows. Input: this rank's slice
    of the input features; output: the full output after g (or this rank's sequence
    shard of it after g-bar). The bias is added once, after the sum. ``overlap_chunks``:
    the GEMM and the reduce-scatter pipelined in that many chunks (sequence parallelism
    only; ``collective_matmul.matmul_reduce_scatter``). ``transposed``: as in
    ``ColumnParallelLinear`` (the slice is then of the (in, out) weight's rows)."""

    def __init__(self, weight, bias, group=None, sequence_parallel=False, overlap_chunks=1,
                 transposed=False):
        super().__init__()
        self.group = group
        self.sequence_parallel = sequence_parallel
        self.overlap_chunks = check_chunks(overlap_chunks, None, sequence_parallel)
        self.transposed = transposed   # the input features' dim
        inp = 0 if transposed else 1
        self.weight = _param(shard(weight, inp, group), split=(inp, 1))
        self.bias = _param(bias.clone() if bias is not None else None, sequence_parallel)

    @classmethod
    @torch.no_grad()
    def from_module(cls, module: nn.Module, group=None, sequence_parallel=False,
                    overlap_chunks=1) -> "RowParallelLinear":
        """This rank's row slice of a full ``nn.Linear`` or ``Conv1D``; any other module
        is a ValueError (``linear_layout``)."""
        weight, bias, transposed = linear_layout(module)
        return cls(weight.detach(), _detached(bias), group, sequence_parallel, overlap_chunks,
                   transposed)

    def forward(self, x):
        w = self.weight.t() if self.transposed else self.weight   # (out, in/t): a view
        if self.overlap_chunks > 1 and tp_size(self.group) > 1:
            y = matmul_reduce_scatter(x, w, self.group, self.overlap_chunks)
            return y if self.bias is None else y + self.bias
        partial = F.linear(x, w)                            # X_r A_r: one term of the sum
        reduce = mappings.sp_reduce_scatter if self.sequence_parallel else mappings.g
        y = reduce(partial, self.group)
        return y if self.bias is None else y + self.bias


class VocabParallelEmbedding(nn.Module):
    """Rows [r V/t, (r+1) V/t) of the token table. A rank looks up the ids it owns,
    writes zeros for the others, and g (or g-bar) sums the ranks' partial lookups."""

    def __init__(self, weight, group=None, sequence_parallel=False):
        super().__init__()
        self.group = group
        self.sequence_parallel = sequence_parallel
        self.weight = _param(shard(weight, 0, group), split=(0, 1))
        rows = self.weight.size(0)
        self.start = dist.get_rank(group) * rows
        self.end = self.start + rows

    @classmethod
    @torch.no_grad()
    def from_embedding(cls, embedding: nn.Embedding, group=None,
                       sequence_parallel=False) -> "VocabParallelEmbedding":
        """This rank's rows of a full ``nn.Embedding``; anything else is a ValueError
        (``check_embedding``)."""
        check_embedding(embedding)
        return cls(embedding.weight.detach(), group, sequence_parallel)

    def forward(self, idx):
        if tp_size(self.group) == 1:
            return F.embedding(idx, self.weight)
        outside = (idx < self.start) | (idx >= self.end)
        local = (idx - self.start).masked_fill(outside, 0)
        partial = F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0)
        reduce = mappings.sp_reduce_scatter if self.sequence_parallel else mappings.g
        return reduce(partial, self.group)


# --- cross-entropy over vocabulary slices --------------------------------------------

class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Mean over tokens of  log sum_v exp(z_v) - z_target,  where each rank holds the
    logits z of its vocabulary slice. Three all-reduces of one number per token (the max,
    for stability; the sum of exponentials; the target's logit, which lives on one rank)
    replace gathering V/t logits per token from every rank. Backward needs none: the
    gradient softmax(z) - onehot(target) is local to each slice."""

    @staticmethod
    def forward(ctx, logits, targets, group):
        z = logits.reshape(-1, logits.size(-1)).float()   # (N, V/t)
        y = targets.reshape(-1)
        start = dist.get_rank(group) * z.size(1)
        m = z.max(dim=1).values
        with trace.tagged(direction="forward", operator="ce_max"):
            comm.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
        exp = (z - m.unsqueeze(1)).exp()
        sum_exp = exp.sum(dim=1)
        with trace.tagged(direction="forward", operator="ce_sum_exp"):
            comm.all_reduce(sum_exp, group=group)
        mine = (y >= start) & (y < start + z.size(1))
        local_y = (y - start).masked_fill(~mine, 0)
        target = z.gather(1, local_y.unsqueeze(1)).squeeze(1).masked_fill(~mine, 0.0)
        with trace.tagged(direction="forward", operator="ce_target"):
            comm.all_reduce(target, group=group)
        loss = sum_exp.log() + m - target                   # per token
        softmax = exp.div_(sum_exp.unsqueeze(1))
        ctx.save_for_backward(softmax, local_y, mine)
        ctx.shape = logits.shape
        return loss.mean()

    @staticmethod
    def backward(ctx, grad):
        softmax, local_y, mine = ctx.saved_tensors
        g = softmax.clone()
        rows = torch.arange(g.size(0), device=g.device)
        g[rows[mine], local_y[mine]] -= 1.0
        g.mul_(grad / g.size(0))
        return g.view(ctx.shape), None, None


def vocab_parallel_cross_entropy(logits, targets, group=None):
    """Mean next-token cross-entropy from this rank's (B, T, V/t) logit slice."""
    if tp_size(group) == 1:
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    return _VocabParallelCrossEntropy.apply(logits, targets, group)

"""The peer of ``parlab.tensor_parallel``: PyTorch's own tensor parallelism (DTensor) on
the same model, written the way torchtitan parallelizes Llama
(``torchtitan/models/llama3/infra/parallelize.py``, ``apply_tp``):

    parallelize_module(model, mesh, {"wte": RowwiseParallel(...), "blocks.0.attn.q":
                       ColwiseParallel(), ..., "lm_head": ColwiseParallel(...)})

and the loss computed from vocabulary-sharded logits under ``loss_parallel()``.

Why a peer *module* and not the reference ``GPT`` itself: ``ColwiseParallel`` shards a
weight's rows in t contiguous blocks, so on the fused qkv (rows laid out [q | k | v])
rank 0 of 2 would get all of q and half of k. Megatron shards each of the three parts
(our ``ColumnParallelLinear(parts=3)``); torch's answer is separate q, k and v Linears,
each colwise, so ``PeerGPT`` keeps the reference's modules and names except that
``attn.qkv`` becomes ``attn.q``, ``attn.k``, ``attn.v``, filled from the reference's
qkv rows and glued back into ``attn.qkv`` by ``full_tensors``.

The plan (``tp_plan``), for t ranks:

* ``wte``: ``RowwiseParallel`` on the Embedding (vocabulary rows; a partial lookup,
  summed: all-reduce, or reduce-scatter to sequence shards with sequence parallelism).
* ``attn`` / ``mlp``: ``PrepareModuleInput`` turns the block's input into one
  replicated DTensor (with sequence parallelism: all-gathers the sequence shards), so
  q, k and v share one input-gradient all-reduce (or reduce-scatter) in backward, as
  Megatron's f does; q, k, v and fc1 ``ColwiseParallel``, proj and fc2
  ``RowwiseParallel`` (output ``Shard(1)`` with sequence parallelism). The attention
  runs on its n_heads / t local heads.
* ``ln1``, ``ln2``, ``ln_f`` and ``wpe``: untouched without sequence parallelism; with
  it, ``SequenceParallel``: parameters replicated, inputs sharded on the sequence, and
  their gradients (partial sums over the shards) all-reduced by DTensor. ``wpe`` takes
  this rank's positions.
* ``lm_head``: ``ColwiseParallel`` with ``Shard(-1)`` output kept as a DTensor (input
  ``Shard(1)`` with sequence parallelism), and ``F.cross_entropy`` under
  ``loss_parallel()`` (forward and backward) never gathers the logits.

On gloo (CPU) every piece works as it is on torch 2.13; nothing is replaced or
dropped. Two things to know, both measured here: ``loss_parallel()`` is not re-entrant
(leaving an inner one switches it off, and the backward then fails with "mixed
torch.Tensor and DTensor"), so one context holds forward and backward (``train_step``);
and DTensor leaves the gradients of the sequence-parallel replicated parameters
(LayerNorms, wpe, the row layers' biases) as ``Partial`` sums that AdamW's ops reduce
each time they read them -- 57 all-reduces inside ``optimizer.step()`` at 4 layers (19
such tensors, 3 reads each; ``CommDebugMode``), where ours does one flat all-reduce --
while the embedding's gradient comes back ``Replicate`` (the whole
V x d table on every rank). The numbers are right; the peer pays in time and memory.
``overlap`` has no counterpart (DTensor decides its own collectives) and is ignored;
``recompute="selective"`` checkpoints the attention core (``torch.utils.checkpoint``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import comm
from ..data import get_batch
from ..memory import held_bytes, optimizer_states
from ..model import MLP, GPTConfig, causal_attention, init_tensor, norm
from ..runs import Recipe, snapshot

PEERS = ("dtensor",)  # torch.distributed.tensor.parallel's parallelize_module


def device_mesh(group=None, device_type: str = "cpu"):
    """A 1-D DeviceMesh over ``group`` (default: the world), which may be a sub-group."""
    from torch.distributed.device_mesh import DeviceMesh
    return DeviceMesh.from_group(group if group is not None else dist.group.WORLD, device_type)


# --- the peer module: the reference GPT with q, k and v apart -----------------------

class PeerAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, bias: bool, recompute: str = "none"):
        super().__init__()
        self.head_dim = d_model // n_heads
        self.recompute = recompute
        self.q, self.k, self.v = (nn.Linear(d_model, d_model, bias=bias) for _ in range(3))
        self.proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x):
        B = x.shape[0]            # global sizes (x may be a DTensor)
        T = x.shape[1]
        # ColwiseParallel hands back local tensors: this rank's n_heads / t heads
        q, k, v = (lin(x).view(B, T, -1, self.head_dim).transpose(1, 2)
                   for lin in (self.q, self.k, self.v))
        if self.recompute == "selective":
            from torch.utils.checkpoint import checkpoint
            y = checkpoint(causal_attention, q, k, v, use_reentrant=False)
        else:
            y = causal_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, T, -1))


class PeerBlock(nn.Module):
    def __init__(self, c: GPTConfig, recompute: str):
        super().__init__()
        self.ln1 = norm(c)
        self.ln2 = norm(c)
        self.attn = PeerAttention(c.d_model, c.n_heads, c.bias, recompute)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class PeerGPT(nn.Module):
    """The reference GPT with ``attn.qkv`` split into ``attn.q/k/v``, same weights."""

    def __init__(self, config: GPTConfig, seed: int = 0, recompute: str = "none"):
        super().__init__()
        c = config
        self.config = config
        with torch.device("meta"):     # no default init: every value comes from init_tensor
            self.wte = nn.Embedding(c.vocab_size, c.d_model)
            self.wpe = nn.Embedding(c.seq_len, c.d_model)
            self.blocks = nn.ModuleList(PeerBlock(c, recompute) for _ in range(c.n_layers))
            self.ln_f = norm(c)
            self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.to_empty(device="cpu")
        with torch.no_grad():
            for name, p in self.named_parameters():
                part = next((x for x in "qkv" if f".attn.{x}." in name), None)
                if part is None:
                    p.copy_(init_tensor(name, p.shape, seed, c.n_layers))
                else:               # this part's rows of the reference's [q | k | v]
                    full = init_tensor(name.replace(f".{part}.", ".qkv."),
                                       (3 * p.shape[0], *p.shape[1:]), seed, c.n_layers)
                    p.copy_(full.chunk(3, 0)["qkv".index(part)])
        self.sequence_parallel = False   # set by parallelize
        self.shard = (0, 1)

    def forward(self, idx, targets):
        """The mean loss. Call it under ``loss_parallel()`` and run its backward there
        too (the context is not re-entrant: leaving an inner one switches it off)."""
        T = idx.size(1)
        start, stop = self.shard
        pos = torch.arange(T, device=idx.device)[start * T // stop:(start + 1) * T // stop]
        x = self.wte(idx) + self.wpe(pos.unsqueeze(0))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))      # DTensor (B, T, V), Shard(-1)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(0, 1))


def tp_plan(config: GPTConfig, sequence_parallel: bool) -> dict:
    """torchtitan's plan, for ``PeerGPT``: {module name: ParallelStyle}."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   RowwiseParallel, SequenceParallel)
    between = Shard(1) if sequence_parallel else Replicate()   # layout outside the blocks
    plan = {"wte": RowwiseParallel(input_layouts=Replicate(), output_layouts=between),
            "lm_head": ColwiseParallel(input_layouts=between, output_layouts=Shard(-1),
                                       use_local_output=False)}
    if sequence_parallel:
        plan.update({"wpe": SequenceParallel(use_local_output=True), "ln_f": SequenceParallel()})
    for i in range(config.n_layers):
        b = f"blocks.{i}"
        plan.update({
            f"{b}.attn": PrepareModuleInput(input_layouts=(between,),
                                            desired_input_layouts=(Replicate(),)),
            f"{b}.attn.q": ColwiseParallel(), f"{b}.attn.k": ColwiseParallel(),
            f"{b}.attn.v": ColwiseParallel(),
            f"{b}.attn.proj": RowwiseParallel(output_layouts=between),
            f"{b}.mlp": PrepareModuleInput(input_layouts=(between,),
                                           desired_input_layouts=(Replicate(),)),
            f"{b}.mlp.fc1": ColwiseParallel(),
            f"{b}.mlp.fc2": RowwiseParallel(output_layouts=between)})
        if sequence_parallel:
            plan.update({f"{b}.ln1": SequenceParallel(), f"{b}.ln2": SequenceParallel()})
    return plan


def parallelize(model: PeerGPT, group=None, sequence_parallel: bool = False) -> PeerGPT:
    """Shard ``model`` in place over ``group`` with ``tp_plan``; every rank holds the
    full weights already, so each keeps its slice without communication."""
    from torch.distributed.tensor.parallel import parallelize_module
    mesh = device_mesh(group, comm.device(group).type)
    parallelize_module(model, mesh, tp_plan(model.config, sequence_parallel),
                       src_data_rank=None)
    model.sequence_parallel = sequence_parallel
    if sequence_parallel:
        model.shard = (dist.get_rank(group), dist.get_world_size(group))
    return model


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


@torch.no_grad()
def full_tensors(model: PeerGPT, grads: bool = False) -> dict:
    """{reference name: full parameter (or gradient)}: DTensors gathered (a collective
    over the group), q, k and v glued back into qkv."""
    out = {n: _full((p.grad if grads else p).detach()) for n, p in model.named_parameters()}
    for name in [n for n in out if ".attn.q." in n]:
        parts = [out.pop(name.replace(".q.", f".{x}.")) for x in "qkv"]
        out[name.replace(".q.", ".qkv.")] = torch.cat(parts, 0)
    return out


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t


class TorchTPRecipe(Recipe):
    """One rank of the peer, trained by the lab's loop: PeerGPT parallelized by torch."""

    def __init__(self, run, group=None):
        super().__init__(run, group)
        self.replica = 0 if self.rank == 0 else None
        self.device = comm.device(group)
        model = PeerGPT(run.config, run.seed, run.recompute).to(self.device)
        self.model = parallelize(model, group, run.sequence_parallel)
        self.optimizer = self.make_optimizer(self.model.parameters())

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        x, y = get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)
        return x.to(self.device), y.to(self.device)

    def train_step(self, x, y):
        from torch.distributed.tensor.parallel import loss_parallel
        with loss_parallel():          # its backward must run under it too
            loss = self.model(x, y)
            loss.backward()
        return _local(loss).item()

    def memory(self) -> dict:
        params = list(self.model.parameters())
        return held_bytes(params=[_local(p) for p in params],
                          grads=[_local(p.grad) for p in params],
                          optimizer=[_local(v) for v in optimizer_states(self.optimizer)])

    def full_state(self):
        state = full_tensors(self.model)
        grads = full_tensors(self.model, grads=True)
        return snapshot(state, grads) if self.rank == 0 else (None, None)

    def report(self, events, windows) -> dict:  # DTensor's collectives are not ours to label
        return {"collectives": [], "activations": {"per_layer": [], "other": 0}}

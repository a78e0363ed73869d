"""Sharded state dicts that ``torch.distributed.checkpoint`` (DCP) can save and reshard.

DCP (PyTorch's documentation, "Distributed Checkpoint - torch.distributed.checkpoint")
saves a state dict in which every sharded tensor says where its local pieces sit in the
*global* tensor: a DTensor (its mesh and placements) or a ShardedTensor (a list of
boxes, offsets and sizes). Each rank writes its own pieces plus one ``.metadata`` file;
loading reads, for each piece the *loading* rank holds, whichever saved boxes overlap
it. So a checkpoint written by 4 ranks loads on 2, or into another layout, as long as
the keys (fully qualified names) and the global shapes agree: that is resharding.

torch's FSDP2 already gives such a state dict (``get_state_dict``: a DTensor per
parameter, sharded on dim 0, and the AdamW states keyed by parameter name). Our
``FullyShard`` (notebook 01, zero/fully_shard.py) keeps rank r's chunk r of each
parameter *flattened* (zero/flat.py), which is not a dim-0 shard: a flat chunk of a
(rows, cols) tensor may start and end inside a row. ``flat_boxes`` cuts that flat range
into at most three rectangular boxes per dimension level (a partial row, whole rows, a
partial row), each a view into the shard, and ``fully_shard_state`` wraps them as one
ShardedTensor per parameter: the same keys and global shapes as FSDP2's, so a
checkpoint saved from one loads into the other.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

ADAM_STATES = ("exp_avg", "exp_avg_sq")  # AdamW's per-parameter moments (Kingma & Ba, Alg. 1)


def flat_boxes(shape, start: int, stop: int) -> list[tuple[list[int], list[int], int]]:
    """The flat range [start, stop) of a row-major tensor of ``shape`` as rectangular
    boxes: (offsets, sizes, where the box starts in the range), in order. A contiguous
    range is a partial first row, then whole rows, then a partial last row, recursively
    within the rows."""
    shape = list(shape)
    if start >= stop:
        return []
    if len(shape) <= 1:
        return [([start], [stop - start], 0)]
    inner = math.prod(shape[1:])
    out = []
    pos = start

    def row_part(row, lo, hi):  # part of one row: recurse into it
        for offs, sizes, at in flat_boxes(shape[1:], lo, hi):
            out.append(([row] + offs, [1] + sizes, pos - start + at))

    first = start // inner
    last = (stop - 1) // inner
    if start % inner or first == last:  # a partial first row (or the range is in one row)
        hi = min(stop, (first + 1) * inner)
        row_part(first, start % inner, hi - first * inner)
        pos = hi
        first += 1
    whole = (stop - pos) // inner
    if whole:
        out.append(([first] + [0] * (len(shape) - 1), [whole] + shape[1:], pos - start))
        pos += whole * inner
    if pos < stop:
        row_part(pos // inner, 0, stop - (pos // inner) * inner)
    return out


def _sharded(flat_local: torch.Tensor, shape, parts: int, index: int, group):
    """One ShardedTensor of global ``shape`` whose rank-``index`` pieces are views into
    ``flat_local`` (this rank's flat chunk, maybe padded): chunk r covers the flat range
    [r c, min((r+1) c, numel)), c = ceil(numel / parts), as zero/flat.py cuts it."""
    from torch.distributed._shard.metadata import ShardMetadata
    from torch.distributed._shard.sharded_tensor import Shard, ShardedTensor
    from torch.distributed._shard.sharded_tensor.metadata import (ShardedTensorMetadata,
                                                                  TensorProperties)
    numel = math.prod(shape)
    c = -(-numel // parts)
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(parts))
    metas = []
    local = []
    for r in range(parts):  # every rank's boxes: DCP's global metadata, with no collective
        lo = r * c
        hi = min((r + 1) * c, numel)
        for offs, sizes, at in flat_boxes(shape, lo, hi):
            md = ShardMetadata(offs, sizes, f"rank:{ranks[r]}/cpu")
            metas.append(md)
            if r == index:
                local.append(Shard(flat_local[at:at + math.prod(sizes)].view(sizes), md))
    props = TensorProperties(dtype=flat_local.dtype, requires_grad=False)
    meta = ShardedTensorMetadata(metas, torch.Size(shape), props)
    return ShardedTensor._init_from_local_shards_and_global_metadata(local, meta, group)


def init_adam_state(optimizer: torch.optim.Optimizer) -> None:
    """Create AdamW's state for every parameter (zeros, step 0) as its first step would,
    so that a checkpoint can be loaded into it before any step ran."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p not in optimizer.state or not optimizer.state[p]:
                optimizer.state[p] = {"step": torch.tensor(0.0),
                                      **{k: torch.zeros_like(p) for k in ADAM_STATES}}


def _groups(optimizer, name_of) -> list[dict]:
    return [{**{k: v for k, v in g.items() if k != "params"},
             "params": [name_of[p] for p in g["params"]]} for g in optimizer.param_groups]


def fully_shard_state(fs, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """(model, optimizer) state dicts of a ``FullyShard`` and its AdamW over
    ``fs.parameters()``, in FSDP2's format: {name: ShardedTensor}, and {"state": {name:
    {"step", "exp_avg", "exp_avg_sq"}}, "param_groups": [... "params": [names]]}. The
    pieces are views: ``dcp.load`` into them writes the shards in place."""
    init_adam_state(optimizer)
    model = {}
    state = {}
    name_of = {}
    for u in fs.units:
        for i, (p, shard) in enumerate(zip(u.params, u.shards)):
            name = fs.names[p][0]
            name_of[shard] = name
            model[name] = _sharded(shard.data, p.shape, fs.dp, fs.rank, fs.group)
            s = optimizer.state[shard]
            state[name] = {"step": s["step"],
                           **{k: _sharded(s[k], p.shape, fs.dp, fs.rank, fs.group)
                              for k in ADAM_STATES}}
    return model, {"state": state, "param_groups": _groups(optimizer, name_of)}


def restore_param_groups(optimizer, saved: list[dict]) -> None:
    """Hyper-parameters from a loaded checkpoint (lr, betas...): the params stay."""
    for g, s in zip(optimizer.param_groups, saved):
        g.update({k: v for k, v in s.items() if k != "params"})


def torch_state(model, optimizer) -> tuple[dict, dict]:
    """(model, optimizer) state dicts of a torch-parallelized module (FSDP2, DTensor
    TP) from torch's own ``get_state_dict`` (DTensors, keyed by parameter name)."""
    from torch.distributed.checkpoint.state_dict import get_state_dict
    return get_state_dict(model, optimizer)


def set_torch_state(model, optimizer, model_sd: dict, optim_sd: dict) -> None:
    from torch.distributed.checkpoint.state_dict import set_state_dict
    set_state_dict(model, optimizer, model_state_dict=model_sd, optim_state_dict=optim_sd)


# --- the state of what a run trains, whatever its layout -------------------------------

def _uses_dtensors(module) -> bool:
    return any(hasattr(p, "placements") for p in module.parameters())


def whole_state(module, optimizer) -> tuple[dict, dict]:
    """(model, optimizer) state dicts of a module whose tensors are whole on every rank
    (one device, or data-parallel replicas), in the same format as the sharded ones."""
    init_adam_state(optimizer)
    name_of = {p: n for n, p in module.named_parameters()}
    return (dict(module.state_dict()),
            {"state": {name_of[p]: optimizer.state[p] for p in name_of if p in optimizer.state},
             "param_groups": _groups(optimizer, name_of)})


def training_state(model, optimizer) -> tuple[dict, dict]:
    """The DCP state dicts (model, optimizer), keyed by the reference names, of what a run
    trains: our ``FullyShard`` (flat shards as boxes), a module torch parallelized into
    DTensors (FSDP2, DTensor TP: torch's own state dicts), or a module whose tensors are
    whole (one device, data-parallel replicas). A data-parallel wrapper is looked through
    (its ``module``)."""
    from ..zero.fully_shard import FullyShard
    if isinstance(model, FullyShard):
        return fully_shard_state(model, optimizer)
    module = getattr(model, "module", model)
    if _uses_dtensors(module):
        return torch_state(module, optimizer)
    return whole_state(module, optimizer)


def restore_training_state(model, optimizer, state: dict) -> None:
    """After ``dcp.load`` filled ``state`` ({"model", "optim"?}): put what did not load in
    place into ``model`` and ``optimizer`` (FullyShard's boxes and whole tensors load in
    place; torch's DTensor state dicts go back through ``set_state_dict``), and the
    optimizer's hyper-parameters."""
    from ..zero.fully_shard import FullyShard
    module = getattr(model, "module", model)
    if not isinstance(model, FullyShard) and _uses_dtensors(module):
        set_torch_state(module, optimizer, state["model"],
                        state.get("optim", torch_state(module, optimizer)[1]))
    elif not isinstance(model, FullyShard):
        module.load_state_dict(state["model"])
    if "optim" in state:
        restore_param_groups(optimizer, state["optim"]["param_groups"])

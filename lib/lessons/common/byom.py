"""Bring your own model: the strategies' parts on models that are not the lab's GPT.

Ranks cannot import a notebook's classes, so the models live here, with the rank-side
workers that notebooks 01, 02 and 06 call to show a part equal to one device on them:

  TiedNet     what real models bring and the lab's GPT does not: an output layer tied to
              the embedding, a frozen layer, a branch no loss uses, blocks in a ModuleList
  MLPStack    residual MLP blocks in a plain list: what tensor and pipeline parallelism
              cut, with nothing of a transformer

Each ``*_worker`` runs on real ranks and returns small dicts; ``reference`` trains the
same model on one device, for ``max_difference``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from parlab.data import local_batch

VOCAB, SEQ, WIDTH = 16, 8, 12


class TiedNet(nn.Module):
    """A small next-token model. ``seed`` sets its initial weights (ranks may differ:
    data parallelism must make them agree)."""

    def __init__(self, seed: int = 0, vocab: int = VOCAB, width: int = WIDTH, blocks: int = 2):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(2 ** 31, (), generator=g)))
            self.embed = nn.Embedding(vocab, width)
            self.frozen = nn.Linear(width, width)           # a fixed random projection
            self.frozen.requires_grad_(False)
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, 2 * width), nn.Tanh(),
                                                      nn.Linear(2 * width, width))
                                        for _ in range(blocks))
            self.unused = nn.Linear(width, 3)               # a head no loss uses
            self.out = nn.Linear(width, vocab, bias=False)
        self.out.weight = self.embed.weight                 # tied, as GPT-2 ties them

    def forward(self, idx, targets):
        h = self.frozen(self.embed(idx))
        for block in self.blocks:
            h = h + block(h)
        logits = self.out(h)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class MLPStack(nn.Module):
    """``depth`` residual blocks (Linear, GELU, Linear) between an input and an output
    projection of a regression; ``layers()`` is the chain a pipeline cuts."""

    def __init__(self, seed: int = 0, width: int = 16, depth: int = 4):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.inp = nn.Linear(4, width)
            self.blocks = nn.ModuleList(_Residual(width) for _ in range(depth))
            self.out = nn.Linear(width, 1)

    def layers(self) -> list[nn.Module]:
        return [self.inp, *self.blocks, self.out]

    def forward(self, x, y):
        for m in self.layers():
            x = m(x)
        return F.mse_loss(x, y)


class _Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


def tokens(step: int, batch: int = 8, rank: int = 0, world: int = 1):
    """This rank's slice of step ``step``'s batch for TiedNet (the lab's Markov data)."""
    return local_batch(step, batch, SEQ, VOCAB, rank, world, seed=7)


def regression(step: int, batch: int = 8):
    """Step ``step``'s whole batch for MLPStack: x (batch, 4), y = a fixed smooth function."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(batch, 4, generator=g)
    return x, (x.sin().sum(1, keepdim=True) + 0.1 * x[:, :1] ** 2)


def reference(make, batch_fn, steps: int = 3, optimizer=None) -> dict:
    """One device: ``make()``'s model trained ``steps`` steps on ``batch_fn(step)``."""
    torch.set_num_threads(1)
    model = make()
    opt = (optimizer or _adamw)([p for p in model.parameters() if p.requires_grad])
    for step in range(steps):
        loss = model(*batch_fn(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {n: p.detach().clone() for n, p in model.state_dict().items()}


def _adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)


def max_difference(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in b)


# --- data parallelism and ZeRO on TiedNet ------------------------------------------------

def data_parallel_worker(kind: str, steps: int = 3, batch: int = 8) -> dict:
    """Rank side: TiedNet seeded by the rank (replicas start different), wrapped by the
    part ``kind`` ("naive", "bucketed", "zero1", "zero2", "fsdp"), trained ``steps``
    steps; returns the final state (full, by name) and what the part kept true."""
    from parlab.data_parallel import BucketedDP, NaiveDP
    from parlab.zero import FullyShard, ShardedOptimizer
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    net = TiedNet(seed=rank)
    if kind in ("naive", "bucketed"):
        cls = NaiveDP if kind == "naive" else BucketedDP
        model = cls(net, find_unused_parameters=True)
        opt = _adamw([p for p in net.parameters() if p.requires_grad])
    elif kind in ("zero1", "zero2"):
        model = net
        opt = ShardedOptimizer(net.named_parameters(remove_duplicate=False), torch.optim.AdamW,
                               stage=int(kind[-1]), lr=1e-2, weight_decay=0.1)
    elif kind == "fsdp":
        model = FullyShard(net)
        opt = _adamw(model.parameters())
    else:
        raise ValueError(f"kind={kind!r} must be naive, bucketed, zero1, zero2 or fsdp")
    for step in range(steps):
        loss = model(*tokens(step, batch, rank, world))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # every part finishes its gradient sync inside backward
        opt.step()
    state = model.full_state_dict() if kind == "fsdp" else \
        {n: p.detach().clone() for n, p in net.state_dict().items()}
    first = TiedNet(seed=0)  # what every replica starts from: the first rank's weights
    return {"state": state,
            "tied": torch.equal(state["out.weight"], state["embed.weight"]) and
            (kind == "fsdp" or net.out.weight is net.embed.weight),
            "frozen_kept": torch.equal(state["frozen.weight"], first.frozen.weight) and
            not any(p.requires_grad for p in net.frozen.parameters()),
            "unused_kept": torch.equal(state["unused.weight"], first.unused.weight)}


def data_parallel_demo(kinds=("naive", "bucketed", "zero1", "zero2", "fsdp"), world_size: int = 2,
                       steps: int = 3) -> list[dict]:
    """Per part: the largest |difference| from one device (AdamW, weight decay 0.1), and
    whether the tie, the frozen layer and the unused head came through as on one device."""
    from parlab.launch import launch
    ref = reference(TiedNet, lambda s: tokens(s), steps)
    rows = []
    for kind in kinds:
        out = launch(data_parallel_worker, world_size, kind, steps)
        rows.append({"part": kind, "max |diff|": max_difference(out[0]["state"], ref),
                     "replicas equal": all(max_difference(o["state"], out[0]["state"]) == 0
                                           for o in out),
                     "tie kept": all(o["tied"] for o in out),
                     "frozen kept": all(o["frozen_kept"] for o in out),
                     "unused kept": all(o["unused_kept"] for o in out)})
    return rows


# --- tensor parallelism on MLPStack -------------------------------------------------------

def tensor_parallel_worker(steps: int = 3) -> dict:
    """Rank side: MLPStack with every block's fc1 column-parallel and fc2 row-parallel
    over the world (``apply_tensor_parallel`` of a two-line plan); the reassembled final
    weights."""
    from parlab.tensor_parallel import Colwise, Rowwise, apply_tensor_parallel, full_tensors
    torch.set_num_threads(1)
    model = MLPStack()
    apply_tensor_parallel(model, {"blocks.*.fc1": Colwise(), "blocks.*.fc2": Rowwise()})
    opt = _adamw(model.parameters())
    for step in range(steps):
        loss = model(*regression(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    local = {n: tuple(p.shape) for n, p in model.named_parameters() if "blocks.0." in n}
    return {"state": full_tensors(model), "local_shapes": local}


def tensor_parallel_demo(tp: int = 2, steps: int = 3) -> dict:
    """TP on MLPStack: its largest |difference| from one device and rank 0's shapes."""
    from parlab.launch import launch
    out = launch(tensor_parallel_worker, tp, steps)
    ref = reference(MLPStack, regression, steps)
    return {"tp": tp, "max |diff|": max_difference(out[0]["state"], ref),
            "rank 0 holds": out[0]["local_shapes"],
            "full shapes": {n: tuple(t.shape) for n, t in ref.items() if "blocks.0." in n}}


# --- all three on MLPStack: TP inside pipeline stages, DP over replicas ---------------------

def composed_worker(dp: int, pp: int, tp: int, micro_batches: int = 4, steps: int = 3) -> dict:
    """Rank side: MLPStack on a Mesh(dp, pp, tp): parallelized over the TP group, cut into
    pipeline stages (1F1B over the PP group), its gradients averaged by BucketedDP over
    the DP group. Returns this rank's stage's reassembled weights (DP rank 0) by name."""
    from parlab import trace
    from parlab.data_parallel import BucketedDP
    from parlab.mesh import Mesh
    from parlab.pipeline_parallel import (PipelineExecutor, PipelineStage, RealCompute,
                                          make_schedule, placement_of, split_layers)
    from parlab.tensor_parallel import Colwise, Rowwise, apply_tensor_parallel, full_tensors
    torch.set_num_threads(1)
    mesh = Mesh(dp=dp, pp=pp, tp=tp).init()
    me, m = mesh.my_coords(), micro_batches
    model = MLPStack()
    apply_tensor_parallel(model, {"blocks.*.fc1": Colwise(), "blocks.*.fc2": Rowwise()},
                          mesh.group("tp"))
    names = {id(p): n for n, p in model.named_parameters()}
    layers = model.layers()
    cut = split_layers(len(layers), pp)[me["pp"]]
    last = me["pp"] == pp - 1
    stage = PipelineStage([layers[i] for i in cut], F.mse_loss if last else None)
    sync = BucketedDP(stage, mesh.group("dp"))
    opt = _adamw(stage.parameters())
    rows = 8 // (dp * m)
    pipe = PipelineExecutor(make_schedule("1f1b", pp, m), placement_of("1f1b", pp, 1, m),
                            RealCompute([stage], m, False), (rows, 16), mesh.group("pp"))
    for step in range(steps):
        x, y = regression(step)
        x, y = x.chunk(dp)[me["dp"]], y.chunk(dp)[me["dp"]]
        opt.zero_grad(set_to_none=True)
        with sync.no_sync(), trace.tagged(step=step):
            pipe.step(list(x.chunk(m)), list(y.chunk(m)))
        sync.finish_grad_sync()  # the pipeline's backwards ran under no_sync: send once
        opt.step()
    full = full_tensors(stage, mesh.group("tp"), names=names)
    return {"state": full if me["dp"] == 0 else {}}


def composed_demo(dp: int = 2, pp: int = 2, tp: int = 2, steps: int = 3) -> dict:
    """MLPStack under dp x pp x tp on real ranks, against one device."""
    from parlab.launch import launch
    out = launch(composed_worker, dp * pp * tp, dp, pp, tp, 4, steps, backend="gloo")
    state = {k: v for r in out for k, v in r["state"].items()}
    ref = reference(MLPStack, regression, steps)
    return {"layout": f"dp{dp}·pp{pp}·tp{tp}", "max |diff|": max_difference(state, ref),
            "parameters": len(state) == len(ref)}

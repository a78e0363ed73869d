"""Rank-side workers for tests/parlab/data_parallel/test_grad_sync.py (ranks import them by
name): every data-parallel part through the family's one interface."""
import torch
import torch.distributed as dist
import torch.nn as nn

from parlab.data_parallel import BucketedDP, CompressedDP, NaiveDP
from parlab.zero import FullyShard, HybridShard, ShardedOptimizer, hsdp_groups

PARTS = ("naive", "bucketed", "compressed", "zero1", "zero2", "fsdp", "hsdp")


class Net(nn.Module):
    """Two layers and a ModuleList block (a ZeRO-3 unit of its own); mean squared error."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.inp, self.out = nn.Linear(6, 16), nn.Linear(16, 3)
        self.blocks = nn.ModuleList([nn.Linear(16, 16), nn.Linear(16, 16)])

    def forward(self, x, y):
        h = torch.tanh(self.inp(x))
        for b in self.blocks:
            h = h + torch.tanh(b(h))
        return ((self.out(h) - y) ** 2).mean()


def batch(rank: int, micro: int = 0):
    g = torch.Generator().manual_seed(100 * rank + micro)
    return torch.randn(4, 6, generator=g), torch.randn(4, 3, generator=g)


def wrap(kind: str, model: nn.Module):
    """(module to call, the part that syncs, the optimizer) for ``kind``."""
    if kind in ("naive", "bucketed", "compressed"):
        part = {"naive": lambda: NaiveDP(model),
                "bucketed": lambda: BucketedDP(model, bucket_bytes=512),
                "compressed": lambda: CompressedDP(model, kind="fp16", error_feedback=False)}[kind]()
        return part, part, torch.optim.SGD(model.parameters(), lr=0.1)
    if kind in ("zero1", "zero2"):
        opt = ShardedOptimizer(model.named_parameters(), torch.optim.SGD, stage=int(kind[-1]),
                               bucket_bytes=512, lr=0.1)
        return model, opt, opt
    part = FullyShard(model) if kind == "fsdp" else HybridShard(model, *hsdp_groups(2))
    return part, part, torch.optim.SGD(part.parameters(), lr=0.1)


def one_round(kind: str, micro_batches: int = 1, planted: str | None = None) -> dict:
    """One step's gradient on this rank, reduced by ``kind``: ``micro_batches`` backwards,
    all but the last under ``no_sync`` and no call after the last backward (the round
    must finish inside it); then what ``finish_grad_sync()`` says is left. ``planted``:
    "no_callback" -- the part never queues its end-of-backward finish."""
    torch.set_num_threads(1)
    rank = dist.get_rank()
    model = Net()
    params = list(model.parameters())
    module, sync, _ = wrap(kind, model)
    if planted == "no_callback":
        sync.grad_ready = lambda: setattr(sync, "_pending", True)
    for i in range(micro_batches):
        x, y = batch(rank, i)
        if i < micro_batches - 1:
            with sync.no_sync():
                (module(x, y) / micro_batches).backward()
        else:
            (module(x, y) / micro_batches).backward()
    left = sync.finish_grad_sync() if planted is None else None
    grads = sync.full_tensors(grads=True)  # a collective: every rank calls it
    by_index = {i: grads[p] for i, p in enumerate(params) if p in grads}
    return {"grads": by_index, "left": left}


def held_then_finished(kind: str) -> dict:
    """Two backwards under ``no_sync``, nothing sent; then ``finish_grad_sync()`` sends
    what they held (a pipeline's flush)."""
    torch.set_num_threads(1)
    rank = dist.get_rank()
    model = Net()
    params = list(model.parameters())
    module, sync, _ = wrap(kind, model)
    with sync.no_sync():
        for i in range(2):
            x, y = batch(rank, i)
            (module(x, y) / 2).backward()
        inside = sync.finish_grad_sync()  # inside no_sync: nothing to do yet
    finished = sync.finish_grad_sync()
    again = sync.finish_grad_sync()
    grads = sync.full_tensors(grads=True)
    return {"grads": {i: grads[p] for i, p in enumerate(params) if p in grads},
            "inside": inside, "finished": finished, "again": again}


def reference(world: int, micro_batches: int = 1) -> dict:
    """One device: the mean over ranks and micro-batches of the losses' gradients."""
    model = Net()
    loss = sum(model(*batch(r, i)) for r in range(world) for i in range(micro_batches))
    (loss / (world * micro_batches)).backward()
    return {i: p.grad.clone() for i, p in enumerate(model.parameters())}

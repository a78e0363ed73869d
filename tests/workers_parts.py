"""Rank-side workers for test_parts.py (ranks import them by name)."""
import torch
import torch.distributed as dist
import torch.nn as nn

from lessons.common import byom
from parlab.data_parallel import BucketedDP, NaiveDP, ddp
from parlab.expert_parallel import EPMoE
from parlab.moe import MoE
from parlab.zero import FullyShard, ShardedOptimizer, sharded

OPTIMIZERS = {"sgd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
              "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0.01)}


def _train(model, opt, steps=3):
    rank, world = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        loss = model(*byom.tokens(step, 8, rank, world))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # every part's gradient sync finishes inside it
        opt.step()


def buggy_parts(bug):
    """TiedNet under a part with one classic mistake planted (restored after):
      "no_broadcast"  the replicas never agree on their starting weights;
      "untie"         the optimizer shards the tied weight once per name;
      "train_frozen"  the frozen layer is handed to the optimizer and trained."""
    torch.set_num_threads(1)
    net = byom.TiedNet(seed=dist.get_rank())
    saved = ddp.broadcast_state, sharded.named_trainable
    try:
        if bug == "no_broadcast":
            ddp.broadcast_state = lambda module, group=None: None
            model = BucketedDP(net, find_unused_parameters=True)
            opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-2,
                                    weight_decay=0.1)
            _train(model, opt)
        elif bug == "untie":
            def per_name(params):  # a layout from names: the alias becomes a second tensor
                out = []
                for n, p in params:
                    if p.requires_grad:
                        out.append((n, p if n != "out.weight" else nn.Parameter(p.detach().clone())))
                net.out.weight = out[-1][1] if out[-1][0] == "out.weight" else net.out.weight
                return out
            sharded.named_trainable = per_name
            opt = ShardedOptimizer(net.named_parameters(remove_duplicate=False), torch.optim.AdamW,
                                   lr=1e-2, weight_decay=0.1)
            _train(net, opt)
        elif bug == "train_frozen":
            net.frozen.requires_grad_(True)
            model = NaiveDP(net, find_unused_parameters=True)
            opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.1)
            _train(model, opt)
    finally:
        ddp.broadcast_state, sharded.named_trainable = saved
    return {"state": {n: p.detach().clone() for n, p in net.state_dict().items()}}


def unused_without_option(part):
    """One step of DP ``part`` on TiedNet without find_unused_parameters: must name "unused"."""
    torch.set_num_threads(1)
    net = byom.TiedNet()
    model = (NaiveDP if part == "naive" else BucketedDP)(net)
    opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad])
    _train(model, opt, 1)  # the sync at the end of backward names the unused one


def sharded_with(name):
    torch.set_num_threads(1)
    net = byom.TiedNet()
    if name == "sgd":
        opt = ShardedOptimizer(net.named_parameters(), torch.optim.SGD, stage=2, lr=0.05,
                               momentum=0.9, weight_decay=0.01)
    else:
        opt = ShardedOptimizer(net.named_parameters(), torch.optim.Adam, stage=1, lr=1e-2,
                               weight_decay=0.01)
    _train(net, opt)
    return {n: p.detach().clone() for n, p in net.state_dict().items()}


def fsdp_mixed(dtype):
    torch.set_num_threads(1)
    model = FullyShard(byom.TiedNet(), compute_dtype=getattr(torch, dtype))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    seen = []
    model.module.blocks[0][0].register_forward_pre_hook(
        lambda m, a: seen.append(str(m.weight.dtype)))
    _train(model, opt)
    return {"state": model.full_state_dict(), "master_dtype": str(next(model.parameters()).dtype),
            "gathered_dtype": seen[0]}


def mixed_reference(dtype, steps=3):
    """One device, the same casts: fp32 master weights, a 16-bit copy for forward and
    backward, its gradients cast back to fp32 for AdamW; the batch in two halves, each's
    16-bit gradient averaged in fp32 (what two ranks' reduce-scatter does, in order)."""
    torch.set_num_threads(1)
    master = byom.TiedNet()
    opt = torch.optim.AdamW([p for p in master.parameters() if p.requires_grad], lr=1e-2,
                            weight_decay=0.1)
    for step in range(steps):
        grads = {}
        for rank in range(2):
            work = byom.TiedNet()
            work.load_state_dict(master.state_dict())
            work.to(dtype)
            work(*byom.tokens(step, 8, rank, 2)).backward()
            for n, p in work.named_parameters():
                if p.grad is not None:
                    grads[n] = grads.get(n, 0) + p.grad.to(dtype)
        opt.zero_grad(set_to_none=True)
        for n, p in master.named_parameters():
            if n in grads:
                p.grad = (grads[n] / 2).float()
        opt.step()
    return {n: p.detach().clone() for n, p in master.state_dict().items()}


def fsdp_names():
    model = FullyShard(byom.TiedNet())
    return sorted(model.full_state_dict())


def _moe(seed=0):
    g = torch.Generator().manual_seed(seed)
    router = nn.Linear(6, 4, bias=False)
    experts = [nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 6)) for _ in range(4)]
    with torch.no_grad():
        for p in [router.weight, *[q for e in experts for q in e.parameters()]]:
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return MoE(router, experts, top_k=2, aux_loss_coef=0.0, z_loss_coef=0.0)


def _tokens():
    return torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(3))


def moe_by_hand():
    """The hand-built MoE layer, expert parallel over 2 ranks, each on its half of the
    tokens; its output and the router's gradient (summed over ranks)."""
    torch.set_num_threads(1)
    layer = EPMoE.from_moe(_moe())
    x = _tokens()[dist.get_rank()]
    y = layer(x)
    y.square().sum().backward()
    g = layer.router.weight.grad.clone()
    dist.all_reduce(g)
    return {"y": y.detach(), "experts": [int(e) for e in layer.experts],
            "router_grad": g.reshape(-1).tolist()}


def moe_by_hand_reference():
    layer = _moe()
    x = _tokens()
    y = torch.stack([layer(x[r]) for r in range(2)])
    y.square().sum().backward()
    return {"y": y.detach(), "router_grad": layer.router.weight.grad.reshape(-1).tolist()}

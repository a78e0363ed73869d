"""Rank-side workers for the expert-parallel tests (ranks import them by name)."""
import torch
import torch.distributed as dist

from parlab import mesh
from parlab.expert_parallel import dispatch, layers, runner, train_worker


def _descending(experts):
    return torch.sort(experts, descending=True, stable=True).indices


def _detached_combine(rows, out_splits, in_splits, group):
    with torch.no_grad():
        return dispatch.all_to_all(rows, out_splits, in_splits, group)


def buggy_worker(run, bug):
    """train_worker with one classic expert-parallel mistake planted (restored after:
    the ranks are reused by later tests):
      "split_order"   rows sent in descending expert order while the splits list the
                      ranks in ascending order: rows reach the wrong rank and expert;
      "no_combine_grad"  the combine all-to-all outside autograd: no gradient reaches
                      the experts (nor the router through them)."""
    saved = dispatch.sort_by_expert, dispatch.combine
    if bug == "split_order":
        dispatch.sort_by_expert = _descending
    elif bug == "no_combine_grad":
        dispatch.combine = _detached_combine
    else:
        raise ValueError(f"bug={bug!r}")
    try:
        return train_worker(run)
    finally:
        dispatch.sort_by_expert, dispatch.combine = saved


def ep_on_subgroups(runs):
    """Cut the world into groups of 2; group i trains ``runs[i]`` over its own group."""
    group, index = mesh.split(2)
    runs[index].check(dist.get_world_size(group))
    return dict(train_worker(runs[index], group), world_rank=dist.get_rank(), group=index)


def balanced_bytes(tokens, d_model, top_k, n_experts):
    """One MoE layer's dispatch + combine, forward and backward, with a hand-made
    balanced routing (assignment j of token t to expert (t k + j) mod E): the payload
    bytes this rank sent, by pass."""
    from parlab import trace
    from parlab.model import GPTConfig, moe_layer
    torch.set_num_threads(1)
    cfg = GPTConfig(vocab_size=8, seq_len=8, d_model=d_model, n_heads=1, n_layers=1,
                    n_experts=n_experts, top_k=top_k, aux_loss_coef=0.0, z_loss_coef=0.0)
    layer = layers.EPMoE.from_moe(moe_layer(cfg, 0))
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.1, generator=torch.Generator().manual_seed(0))
    x = torch.randn(tokens, d_model, requires_grad=True)
    idx = (torch.arange(tokens * top_k) % n_experts).view(tokens, top_k)
    keep = torch.ones_like(idx, dtype=torch.bool)
    trace.start()
    y = layer.run_experts(x, idx, keep)
    y.sum().backward()
    sent = {"forward": 0, "backward": 0}
    for e in trace.stop():
        if e["meta"].get("operator") in ("dispatch", "combine"):
            sent[e["meta"]["direction"]] += e["meta"]["payload_sent"]
    return sent

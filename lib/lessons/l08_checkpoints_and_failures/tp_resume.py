"""DCP with torch's own DTensor tensor parallelism: save at dp2·tp2, resume at tp4 or dp4.

The model is ``byom.MLPStack`` (not the lab's GPT), each residual block's fc1 column-wise
and fc2 row-wise (``ColwiseParallel`` / ``RowwiseParallel``, Megatron's split) over the
mesh's "tp" dimension; the DP replicas all-reduce their gradients over "dp". The split
parameters and their AdamW states are DTensors, so ``get_state_dict`` hands DCP a state that names each
tensor's global shape and this rank's piece of it, and ``dcp.load`` fills the pieces of
*another* mesh from the same files: the resharding is DCP's, nothing here moves data.

``run(dp, tp, steps, save_at, resume_from)`` is one rank's side (``parlab.launch`` it on
dp x tp ranks): batch s is ``_batch(s)`` whatever the layout, rows split over dp.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from parlab.checkpoint import dcp as checkpoint

WIDTH, DEPTH, BATCH = 16, 3, 8


def _batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)  # the data position is the step
    x = torch.randn(BATCH, 4, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def _build(dp: int, tp: int):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    from lessons.common.byom import MLPStack
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    model = MLPStack(seed=0, width=WIDTH, depth=DEPTH)
    plan = {f"blocks.{i}.fc1": ColwiseParallel() for i in range(DEPTH)}
    plan |= {f"blocks.{i}.fc2": RowwiseParallel() for i in range(DEPTH)}
    # inp and out stay plain tensors, the same on every rank: DCP writes one copy of
    # them and loads it into every layout
    parallelize_module(model, mesh["tp"], plan)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    return mesh, model, opt


def _sync_dp(model, mesh) -> None:
    """Average the local gradient pieces over the DP replicas (same piece, other rows)."""
    group = mesh.get_group("dp")
    n = dist.get_world_size(group)
    if n > 1:
        for p in model.parameters():
            g = p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad
            dist.all_reduce(g, group=group)
            g.div_(n)


def run(dp: int, tp: int, steps: int, save_at: tuple = (), directory: str | None = None,
        resume_from: str | None = None, planted: str | None = None) -> dict:
    """Train steps start .. steps-1; {"losses": {step: loss}, "params": full parameters}.
    ``planted="no_optimizer"`` resumes the model but not AdamW's states (a test's bug)."""
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    if planted not in (None, "no_optimizer"):  # a typo would resume correctly, silently
        raise ValueError(f"planted={planted!r} must be one of (None, 'no_optimizer')")
    torch.set_num_threads(1)
    mesh, model, opt = _build(dp, tp)
    start = 0
    if resume_from:
        # AdamW's states exist only after a step: make them (zeros) so DCP can fill them
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "train": checkpoint.train_state(0)}
        checkpoint.load(state, resume_from)
        if planted == "no_optimizer":
            state["optim"] = get_state_dict(model, torch.optim.AdamW(model.parameters(), lr=3e-3))[1]
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        if planted == "no_optimizer":
            opt.state.clear()
        start = int(state["train"]["step"])
    rows = slice(mesh.get_local_rank("dp") * (BATCH // dp), (mesh.get_local_rank("dp") + 1) * (BATCH // dp))
    losses = {}
    for step in range(start, steps):
        x, y = _batch(step)
        loss = model(x[rows], y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        _sync_dp(model, mesh)
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, group=mesh.get_group("dp"))
        losses[step] = float(mean) / dp
        if step + 1 in save_at:
            msd, osd = get_state_dict(model, opt)
            checkpoint.save({"model": msd, "optim": osd, "train": checkpoint.train_state(step + 1)},
                            f"{directory}/step_{step + 1}")
    full = {n: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()
            for n, p in model.named_parameters()}
    return {"losses": losses, "params": full if dist.get_rank() == 0 else None}

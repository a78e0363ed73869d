"""Rank-side workers for the mesh and 3D tests (ranks import them by name)."""
import torch.distributed as dist

from parlab.mesh import AXES, Mesh


def mesh_groups(shape):
    """This rank's group along every axis, as world ranks: ours (Mesh.init) beside
    torch's (init_device_mesh with the same shape and names)."""
    from torch.distributed.device_mesh import init_device_mesh
    m = Mesh(**shape).init()
    ours = {a: dist.get_process_group_ranks(m.group(a)) for a in AXES}
    dims = tuple(shape.get(a, 1) for a in AXES)
    dm = init_device_mesh("cpu", dims, mesh_dim_names=AXES)
    theirs = {a: dist.get_process_group_ranks(dm.get_group(a)) for a in AXES}
    return {"rank": dist.get_rank(), "ours": ours, "theirs": theirs,
            "coords": m.my_coords(), "torch_coords": dict(zip(AXES, dm.get_coordinate()))}


class _CrossedMesh(Mesh):
    """A mesh whose PP groups pair TP rank j of an even stage with TP rank t-1-j of the
    next: activations reach the wrong TP rank of the next stage."""

    def groups(self, axis):
        if axis != "pp":
            return super().groups(axis)
        d, p, t = self.shape["dp"], self.shape["pp"], self.shape["tp"]
        return [[self.rank(dp=i, pp=s, tp=j if s % 2 == 0 else t - 1 - j) for s in range(p)]
                for i in range(d) for j in range(t)]


def buggy_3d_worker(run, bug):
    """parallel_nd's train_worker with one mistake planted (restored after: the ranks are
    reused by later tests):
      "no_dp_sync"     the gradients are never averaged over the DP group;
      "wrong_tp_peer"  stage s+1 receives its activation from another TP rank of stage s."""
    from parlab.parallel_nd import dp_sync, runner
    saved = dp_sync.DataParallel.finish_grad_sync, runner.Mesh
    if bug == "no_dp_sync":
        dp_sync.DataParallel.finish_grad_sync = lambda self: None
    elif bug == "wrong_tp_peer":
        runner.Mesh = _CrossedMesh
    else:
        raise ValueError(f"bug={bug!r}")
    try:
        return runner.train_worker(run)
    finally:
        dp_sync.DataParallel.finish_grad_sync, runner.Mesh = saved


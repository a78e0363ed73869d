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

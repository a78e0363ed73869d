"""Named process-group axes: ``Mesh(dp=, pp=, cp=, tp=, ep=)``, and the older ``split``.

Every strategy's rank-side code takes its process group and never assumes the world
group or the global rank, so that several strategies can share one launch: a
tensor-parallel group inside a pipeline stage inside a data-parallel replica. A
``Mesh`` names those groups.

Layout. Axes are ordered ("dp", "pp", "cp", "tp"), outermost first, so

    rank = ((dp_i * pp + pp_i) * cp + cp_i) * tp + tp_i

-- row-major over that shape, which is exactly what
``torch.distributed.device_mesh.init_device_mesh(device, (dp, pp, cp, tp),
mesh_dim_names=("dp", "pp", "cp", "tp"))`` builds (tests/parlab/core/test_mesh.py checks it).
TP is innermost because its all-reduces run inside every layer: its ranks should be
the closest ones, on one node's NVLink (Narayanan et al. 2021, "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", SC21, §3.2 and takeaway
#1: tensor parallelism up to the GPUs of a server, pipeline parallelism across
servers). Megatron-LM itself orders "tp-cp-ep-dp-pp" (pipeline outermost); either
keeps TP on a node.

Expert parallelism is folded over dp x cp, as in Megatron-LM: the ranks holding the
same layers (same pp and tp coordinates) form the "dp_cp" group -- where dense
gradients are averaged -- and it is cut into runs of ``ep`` consecutive ranks ("ep":
they share the experts out), the ranks at the same place in each run holding the same
experts ("edp", expert data parallelism: where expert gradients are averaged).

``split`` is the smallest layout: the world cut into equal, contiguous groups.
"""

from __future__ import annotations

import itertools

import torch.distributed as dist

from .validate import check_int

AXES = ("dp", "pp", "cp", "tp")  # outermost first; tp varies fastest
FOLDED = ("dp_cp", "ep", "edp")  # groups within dp x cp (see the module docstring)


def split(size: int):
    """Cut the world into groups of ``size`` consecutive ranks and return (the group
    this rank is in, that group's index). Every rank must call it, in the same order:
    ``new_group`` is itself a collective over the world."""
    world = dist.get_world_size()
    check_int("size", size)
    if world % size:
        raise ValueError(f"size={size} must divide the world size {world}")
    mine = None
    for index in range(world // size):
        ranks = list(range(index * size, (index + 1) * size))
        group = dist.new_group(ranks)  # collective: created on every rank
        if dist.get_rank() in ranks:
            mine = (group, index)
    return mine


def check_group(group, name: str = "group"):
    """``group`` if it is None (the world) or a process group, else a ValueError naming it:
    what every part does with the group it is given, before using it."""
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ValueError(f"{name}={group!r} must be a torch.distributed ProcessGroup (or "
                         "None for the world)")
    return group


def global_rank(group, local: int) -> int:
    """The world rank of the ``local``-th member of ``group``: what point-to-point
    calls on the world communicator take as peer."""
    return dist.get_global_rank(group, local) if group is not None else local


def _some(items, limit: int) -> list:
    """``items``, or past ``limit`` of them the first and last ``limit // 2`` with None
    where the rest were left out."""
    items = list(items)
    if len(items) <= limit:
        return items
    k = limit // 2
    return items[:k] + [None] + items[-k:]


def _show(items, limit: int, fmt: str, left: str = "", right: str = "",
          what: str = "more") -> str:
    """``items`` formatted and joined, summarised past ``limit`` as ``_some`` does."""
    parts = [f"... {len(items) - 2 * (limit // 2)} {what} ..." if x is None else fmt.format(x)
             for x in _some(items, limit)]
    return left + (", " if left else " ").join(parts) + right


class Mesh:
    """A world of ``dp * pp * cp * tp`` ranks seen as a 4-D grid, with expert parallelism
    folded over dp x cp (see the module docstring). The layout part is pure arithmetic
    and works anywhere; ``init()`` -- on every rank of a launch, collectively -- creates
    one process group per axis and per slice, once, and then ``group(axis)`` is this
    rank's.

        m = Mesh(dp=2, pp=2, tp=2)      # 8 ranks
        m.coords(5)                      # {"dp": 1, "pp": 0, "cp": 0, "tp": 1}
        m.groups("tp")                   # [[0, 1], [2, 3], [4, 5], [6, 7]]
        m.init(); m.group("pp")          # this rank's pipeline group
    """

    def __init__(self, dp: int = 1, pp: int = 1, cp: int = 1, tp: int = 1, ep: int = 1):
        for name, value in (("dp", dp), ("pp", pp), ("cp", cp), ("tp", tp), ("ep", ep)):
            check_int(name, value)
        if (dp * cp) % ep:
            raise ValueError(f"ep={ep} must divide dp*cp = {dp}*{cp} = {dp * cp}: expert "
                             "parallelism is folded over the data- and context-parallel ranks")
        self.shape = {"dp": dp, "pp": pp, "cp": cp, "tp": tp}
        self.ep = ep
        self.size = dp * pp * cp * tp
        self._groups: dict | None = None  # axis -> this rank's group, after init()

    def __repr__(self):
        return "Mesh(" + ", ".join(f"{a}={n}" for a, n in self.shape.items()) + \
            (f", ep={self.ep}" if self.ep > 1 else "") + ")"

    # --- rank <-> coordinates: pure arithmetic ---------------------------------------
    def rank(self, dp: int = 0, pp: int = 0, cp: int = 0, tp: int = 0) -> int:
        """The world rank at these coordinates."""
        coords = {"dp": dp, "pp": pp, "cp": cp, "tp": tp}
        r = 0
        for axis in AXES:
            check_int(axis, coords[axis], 0, self.shape[axis] - 1)
            r = r * self.shape[axis] + coords[axis]
        return r

    def coords(self, rank: int) -> dict:
        """{axis: index} of a world rank (the inverse of ``rank``)."""
        check_int("rank", rank, 0, self.size - 1)
        out = {}
        for axis in reversed(AXES):
            rank, out[axis] = divmod(rank, self.shape[axis])
        return {a: out[a] for a in AXES}

    def folded(self, rank: int) -> dict:
        """Where a rank sits in its dp x cp plane: "dp_cp" (its index there, dp-major),
        "ep" (its place in its run of ep ranks) and "edp" (which run)."""
        c = self.coords(rank)
        i = c["dp"] * self.shape["cp"] + c["cp"]
        return {"dp_cp": i, "ep": i % self.ep, "edp": i // self.ep}

    def groups(self, axis: str) -> list[list[int]]:
        """Every group along ``axis`` (one of AXES or FOLDED): the ranks that differ only
        in that coordinate, in order of their other coordinates (torch's DeviceMesh
        order too)."""
        if axis in FOLDED:
            return self._folded_groups(axis)
        if axis not in AXES:
            raise ValueError(f"axis={axis!r} must be one of {AXES + FOLDED}")
        # row-major: a group starts at the rank of its other coordinates and steps by the
        # axis's stride (the product of the axes inside it); arithmetic rather than a
        # checked rank() per member, so that 16,384 ranks take milliseconds
        others = [a for a in AXES if a != axis]
        stride = {a: 1 for a in AXES}
        for inner, outer in zip(AXES[::-1], AXES[-2::-1]):
            stride[outer] = stride[inner] * self.shape[inner]
        step = stride[axis]
        n = self.shape[axis]
        out = []
        for fixed in itertools.product(*(range(self.shape[a]) for a in others)):
            start = sum(i * stride[a] for a, i in zip(others, fixed))
            out.append(list(range(start, start + n * step, step)))
        return out

    def _folded_groups(self, axis: str) -> list[list[int]]:
        out = []
        for pp_i, tp_i in itertools.product(range(self.shape["pp"]), range(self.shape["tp"])):
            plane = [self.rank(dp=d, pp=pp_i, cp=c, tp=tp_i)
                     for d in range(self.shape["dp"]) for c in range(self.shape["cp"])]
            if axis == "dp_cp":
                out.append(plane)
            elif axis == "ep":
                out += [plane[i:i + self.ep] for i in range(0, len(plane), self.ep)]
            else:
                out += [plane[j::self.ep] for j in range(self.ep)]
        return out

    def layout(self) -> list[dict]:
        """The picture as data: one row per rank with its coordinates and the ranks it
        shares each group with (figures draw from this; ``describe`` prints it). Linear in
        the number of ranks: each group is built once and shared by the rows of its
        members (the rows hold the same list, not copies: printing every row's groups is
        still ranks x group size)."""
        member = {}
        for axis in AXES:
            for g in self.groups(axis):
                for r in g:
                    member[axis, r] = g
        return [{"rank": r, **self.coords(r), **{f"{a}_group": member[a, r] for a in AXES}}
                for r in range(self.size)]

    def describe(self, limit: int = 16) -> str:
        """A text picture: per DP replica, a grid of pipeline stages (rows) by TP rank
        (columns) holding world ranks; then every group. Past ``limit`` replicas, stages,
        TP ranks, groups or members of a group, the first and last ``limit // 2`` are
        shown and a note says how many were left out: a 16,384-rank mesh in a few dozen
        lines rather than a megabyte."""
        limit = check_int("limit", limit, 2)
        lines = [f"{self!r}: {self.size} ranks, rank = "
                 "((dp_i * pp + pp_i) * cp + cp_i) * tp + tp_i"]
        dp = self.shape["dp"]
        pp = self.shape["pp"]
        tp = self.shape["tp"]
        for d in _some(range(dp), limit):
            if d is None:
                lines.append(f"... {dp - 2 * (limit // 2)} DP replicas left out ...")
                continue
            lines.append(f"DP replica {d}:" + ("" if self.shape["cp"] == 1 else " (cp 0 shown)"))
            for s in _some(range(pp), limit):
                if s is None:
                    lines.append(f"  ... {pp - 2 * (limit // 2)} stages left out ...")
                    continue
                ranks = [self.rank(dp=d, pp=s, tp=t) for t in range(tp)]
                lines.append(f"  stage {s}: " + _show(ranks, limit, "{:>3}")
                             + "   <- one TP group")
        for axis, what in (("tp", "TP groups (same layers, sliced)"),
                           ("cp", "CP groups (sequence shards)"),
                           ("pp", "PP groups (stage to stage, same TP rank)"),
                           ("dp", "DP groups (same shard, gradients averaged)"),
                           ("ep", "EP groups (experts shared out)"),
                           ("edp", "expert-DP groups (same experts, gradients averaged)")):
            if (axis != "cp" or self.shape["cp"] > 1) and (axis not in FOLDED or self.ep > 1):
                groups = self.groups(axis)
                shown = [_show(g, limit, "{}", "[", "]") for g in groups]
                lines.append(f"{what}: " + _show(shown, limit, "{}", what="groups left out"))
        return "\n".join(lines)

    # --- process groups: collective, once ----------------------------------------------
    def init(self) -> "Mesh":
        """Create every axis's groups (every rank creates every group, in the same
        order: ``new_group`` is a collective over the world) and keep this rank's.
        Call it on every rank of a world of exactly ``size`` ranks; a second call is a
        no-op."""
        if self._groups is not None:
            return self
        if dist.get_world_size() != self.size:
            raise ValueError(f"{self!r} needs {self.size} ranks, the world has "
                             f"{dist.get_world_size()}")
        me = dist.get_rank()
        mine = {}
        for axis in AXES + FOLDED:
            for ranks in self.groups(axis):
                group = dist.new_group(ranks)
                if me in ranks:
                    mine[axis] = group
        self._groups = mine
        return self

    def group(self, axis: str):
        """This rank's process group along ``axis`` (after ``init``)."""
        if self._groups is None:
            raise RuntimeError("call Mesh.init() on every rank before asking for groups")
        if axis not in AXES + FOLDED:
            raise ValueError(f"axis={axis!r} must be one of {AXES + FOLDED}")
        return self._groups[axis]

    def my_coords(self) -> dict:
        """This rank's coordinates (needs a process group, not ``init``)."""
        return self.coords(dist.get_rank())

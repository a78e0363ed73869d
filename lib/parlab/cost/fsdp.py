"""FSDP beside ZeRO-3: what resharding, prefetching and hybrid sharding cost, and the
ZeRO++ / ZeRO-Offload traffic figures (notebook 01 §6, "FSDP vs ZeRO-3"); unit by unit, what
each gather costs and what hides it, DeepSpeed's ZeRO-3 of 2021 against FSDP2, and gradient
accumulation with or without resharding (the planner's ZeRO-3).

Domains: ``n_params`` a whole number >= 0; ``dp``, ``shard``, ``replicate`` integers >= 1;
bytes per element finite and >= 0; ``reshard_after_forward`` and ``prefetch`` bools;
``unit_bytes`` a non-empty list of finite numbers >= 0, ``root_bytes`` finite and >= 0.
"""

from __future__ import annotations

from ..validate import check_bool, check_choice, check_float, check_int, check_whole


def _bytes(name, value):
    return check_float(name, value, 0.0, strict=False)


def fsdp_comm_volume(n_params: float, dp: int, reshard_after_forward: bool = True,
                     param_bytes: float = 2, grad_bytes: float | None = None) -> dict:
    """Bytes each rank sends per step under ZeRO-3 / FSDP, ring algorithms, by collective.

    With ``reshard_after_forward`` (ZeRO-3, Rajbhandari et al. SC 2020 §7.2.2; FSDP's
    FULL_SHARD, Zhao et al. VLDB 2023 §3.2.1) every unit's parameters are all-gathered
    for its forward and again for its backward, and its gradients reduce-scattered:
    AG 2 Psi + RS Psi = 3 Psi. Without it (FSDP2's ``reshard_after_forward=False``,
    FSDP1's SHARD_GRAD_OP) the forward's gathered parameters stay until the backward:
    AG Psi + RS Psi = 2 Psi, plain DP's volume. Psi = n_params x bytes (``grad_bytes``
    defaults to ``param_bytes``), each times (dp - 1) / dp. Returns {"all_gather",
    "reduce_scatter", "total"}."""
    n_params = check_whole("n_params", n_params)
    dp = check_int("dp", dp)
    reshard = check_bool("reshard_after_forward", reshard_after_forward)
    param_bytes = _bytes("param_bytes", param_bytes)
    grad_bytes = param_bytes if grad_bytes is None else _bytes("grad_bytes", grad_bytes)
    scale = (dp - 1) / dp
    out = {"all_gather": (2 if reshard else 1) * n_params * param_bytes * scale,
           "reduce_scatter": n_params * grad_bytes * scale}
    out["total"] = out["all_gather"] + out["reduce_scatter"]
    return out


def fsdp_gathered_peak(unit_bytes, root_bytes: float = 0.0, reshard_after_forward: bool = True,
                       prefetch: bool = False) -> float:
    """Peak bytes of gathered (full) parameters on a rank during one step.

    ``unit_bytes``: each unit's full parameter bytes, in forward order (a transformer's
    blocks); ``root_bytes``: the root unit's (embeddings, final norm, head), gathered
    for the whole pass. Resharding after forward, one unit is full at a time: root +
    max(unit). Prefetching (Zhao et al. §3.3.2-3.3.3: the next unit's all-gather issued
    before this unit computes) holds two neighbours: root + max(u_i + u_(i+1)). Without
    resharding every unit stays full from its forward to its backward: root + sum."""
    units = list(unit_bytes) if isinstance(unit_bytes, (list, tuple)) else None
    if not units:
        raise ValueError(f"unit_bytes={unit_bytes!r} must be a non-empty list of bytes")
    units = [_bytes("unit_bytes", u) for u in units]
    root = _bytes("root_bytes", root_bytes)
    reshard = check_bool("reshard_after_forward", reshard_after_forward)
    prefetch = check_bool("prefetch", prefetch)
    if not reshard:
        return root + sum(units)
    if prefetch and len(units) > 1:
        return root + max(a + b for a, b in zip(units, units[1:]))
    return root + max(units)


def hsdp_comm_volume(n_params: float, shard: int, replicate: int,
                     reshard_after_forward: bool = True, param_bytes: float = 2,
                     grad_bytes: float | None = None) -> dict:
    """Hybrid sharding (HSDP; Zhao et al. §3.2.2): ZeRO-3 inside each group of ``shard``
    ranks (a node), plain replication across the ``replicate`` groups. Per rank and step:
    the shard group's all-gathers and reduce-scatter, ``fsdp_comm_volume(shard)``, stay
    on the node's links; only the all-reduce of the gradient *shard* (Psi / shard bytes)
    crosses nodes: 2 (Psi / shard)(R - 1)/R. Returns {"intra_node", "inter_node", "total"}."""
    shard = check_int("shard", shard)
    replicate = check_int("replicate", replicate)
    intra = fsdp_comm_volume(n_params, shard, reshard_after_forward, param_bytes, grad_bytes)
    grad_bytes = param_bytes if grad_bytes is None else grad_bytes
    inter = 2 * n_params * grad_bytes / shard * (replicate - 1) / replicate
    return {"intra_node": intra["total"], "inter_node": inter, "total": intra["total"] + inter}


def zeropp_comm_volume(n_params: float, param_bytes: float = 2, weight_bits: float = 8,
                       grad_bits: float = 4) -> dict:
    """Cross-node bytes per step, in units of fp16 bytes, for ZeRO-3 and ZeRO++ (Wang et
    al., "ZeRO++", 2023, §3), large-dp limit. ZeRO-3: forward AG M + backward AG M +
    gradient RS M = 3M (M = n_params x ``param_bytes``). ZeRO++: qwZ (§3.1) all-gathers
    the forward's weights block-quantised to ``weight_bits`` (INT8: 0.5M); hpZ (§3.2)
    keeps a secondary copy of the weights sharded within the node, so the backward's
    all-gather stays on the node (0 across); qgZ (§3.3) reduces the gradients by a
    hierarchical all-to-all of ``grad_bits`` values (INT4: 0.25M). 0.75M in all, the
    paper's 4x. Returns {"zero3": {...}, "zeropp": {...}} each {"forward_ag",
    "backward_ag", "grad_reduce", "total"}."""
    n_params = check_whole("n_params", n_params)
    m = n_params * _bytes("param_bytes", param_bytes)
    wb = check_float("weight_bits", weight_bits, 0.0)
    gb = check_float("grad_bits", grad_bits, 0.0)
    zero3 = {"forward_ag": m, "backward_ag": m, "grad_reduce": m}
    zeropp = {"forward_ag": m * wb / 16, "backward_ag": 0.0, "grad_reduce": m * gb / 16}
    for d in (zero3, zeropp):
        d["total"] = d["forward_ag"] + d["backward_ag"] + d["grad_reduce"]
    return {"zero3": zero3, "zeropp": zeropp}


def zero_offload_traffic(n_params: float, param_bytes: float = 2,
                         optimizer_bytes: float = 12) -> dict:
    """ZeRO-Offload (Ren et al., USENIX ATC 2021, §3-4): the GPU keeps the fp16 weights
    (and runs forward and backward); the fp32 master weights, Adam's moments and the
    update live on the CPU. Per step the PCIe link moves the fp16 gradients down and the
    updated fp16 weights up: 2 + 2 bytes per parameter ("4M", M parameters), the minimum
    the paper shows for an offload that keeps forward and backward on the GPU. Returns {"gpu_bytes",
    "cpu_bytes" (master weights, moments and the gradients' landing buffer),
    "pcie_bytes_per_step"} for one GPU, no DP."""
    n_params = check_whole("n_params", n_params)
    pb = _bytes("param_bytes", param_bytes)
    ob = _bytes("optimizer_bytes", optimizer_bytes)
    return {"gpu_bytes": n_params * pb, "cpu_bytes": n_params * (ob + pb),
            "pcie_bytes_per_step": 2 * n_params * pb}


# --- ZeRO-3 / FSDP unit by unit: what each gather costs and what hides it -------------------
# Two implementations, as documented choices (``planner.Layout.fsdp_impl``):
#   "deepspeed2021"  DeepSpeed's ZeRO-3 as Narayanan et al. 2021 ran it (Table 2): each
#       parameter tensor is gathered by its own all-gather when its module is about to run
#       (partition_parameters.py, _allgather_param: one dist.all_gather per parameter; biases
#       and norms below param_persistence_threshold stay whole), so a layer pays one
#       collective's latency per weight matrix, and the compute waits for it. The gradients'
#       reduce-scatter is issued on a side stream (overlap_comm), but nothing overlaps it:
#       at v0.3.13 (2021-03) _allgather_param calls torch.cuda.synchronize() before each
#       parameter's gather, and stage3.py's _synchronize_communication synchronizes the
#       device again after each module's fetch, so the next module's gather starts only once
#       the reduce-scatter queued before it has finished.
#   "fsdp2"  PyTorch FSDP2 (2024; Zhao et al. VLDB 2023 §3.3 for the prefetching): one flat
#       all-gather per unit (a transformer block), the next unit's issued while this one
#       computes (forward and backward prefetch), the reduce-scatter beside the backward.
FSDP_IMPLS = ("fsdp2", "deepspeed2021")


def fsdp_unit_messages(impl: str, matrices: int) -> int:
    """Collectives per unit per gather: one flat message (``fsdp2``), or one per weight
    matrix of the unit (``deepspeed2021``; a GPT block: QKV, projection, two MLP matrices)."""
    check_choice("impl", impl, FSDP_IMPLS)
    matrices = check_int("matrices", matrices)
    return 1 if impl == "fsdp2" else matrices


def fsdp_unit_exposed(gather_s: float, reduce_s: float, forward_s: float, backward_s: float,
                      impl: str = "fsdp2", backward_gather: bool = True,
                      reduce: bool = True) -> dict:
    """Exposed seconds of one unit's ZeRO-3 traffic in one micro-batch, {"forward",
    "backward"}: ``gather_s`` its all-gather(s), ``reduce_s`` its gradients' reduce-scatter,
    ``forward_s`` / ``backward_s`` its compute (the backward with any recomputation).
    ``backward_gather=False``: the parameters stayed gathered since the forward (no reshard);
    ``reduce=False``: gradients accumulate unsharded, reduced after a later micro-batch.
    fsdp2 (prefetch): forward max(0, G - F), backward max(0, G + R - B) -- the gather of the
    next unit and the reduce-scatter of the last share the links while this unit computes.
    deepspeed2021 (on demand, the device synchronized at every gather): forward G,
    backward G + R."""
    check_choice("impl", impl, FSDP_IMPLS)
    g = check_float("gather_s", gather_s, 0.0, strict=False)
    r = check_float("reduce_s", reduce_s, 0.0, strict=False)
    r = r if check_bool("reduce", reduce) else 0.0
    f = check_float("forward_s", forward_s, 0.0, strict=False)
    b = check_float("backward_s", backward_s, 0.0, strict=False)
    gb = g if check_bool("backward_gather", backward_gather) else 0.0
    if impl == "fsdp2":
        return {"forward": max(0.0, g - f), "backward": max(0.0, gb + r - b)}
    return {"forward": g, "backward": gb + r}


def fsdp_accumulation(unit_bytes: float, layers: int, micro_batches: int,
                      keep_unsharded: bool, param_bytes: float = 2,
                      grad_bytes: float = 2) -> dict:
    """Gradient accumulation over ``micro_batches`` meets resharding. Reshard after each
    micro-batch (FSDP's default without a pipeline): every unit is gathered forward and
    backward and reduce-scattered once per micro-batch -- m x (2 AG + RS) per step -- and at
    most a unit or two is ever whole. Keep unsharded (FSDP2's reshard_after_forward=False
    with set_requires_gradient_sync(False); torchtitan's default with a pipeline): gather
    once, reduce once per step -- 1 AG + 1 RS -- but the stage's parameters and its
    unsharded gradients stay whole: + layers x unit x (param_bytes + grad_bytes) / param_bytes
    bytes per GPU. Returns {"gathers", "reduces" (per unit per step), "extra_bytes"}."""
    u = check_float("unit_bytes", unit_bytes, 0.0, strict=False)
    L = check_int("layers", layers)
    m = check_int("micro_batches", micro_batches)
    pb = check_float("param_bytes", param_bytes, 0.0)
    gb = check_float("grad_bytes", grad_bytes, 0.0, strict=False)
    if check_bool("keep_unsharded", keep_unsharded):
        return {"gathers": 1, "reduces": 1, "extra_bytes": L * u * (pb + gb) / pb}
    return {"gathers": 2 * m, "reduces": m, "extra_bytes": 0.0}


def fsdp_step_exposed(gather_s: float, reduce_s: float, forward_s: float, backward_s: float,
                      layers: int, micro_batches: int, impl: str = "fsdp2",
                      keep_unsharded: bool = False) -> float:
    """Exposed seconds of ZeRO-3 / FSDP in one step of ``micro_batches`` over ``layers``
    units, each unit's gather, reduce-scatter and compute as in ``fsdp_unit_exposed``.
    Resharding after each micro-batch pays it m times; keeping the stage unsharded
    (``fsdp_accumulation``) gathers before the first micro-batch's forward and
    reduce-scatters after the last one's backward, once per step."""
    L = check_int("layers", layers)
    m = check_int("micro_batches", micro_batches)
    if not check_bool("keep_unsharded", keep_unsharded):
        e = fsdp_unit_exposed(gather_s, reduce_s, forward_s, backward_s, impl)
        return m * L * (e["forward"] + e["backward"])
    first = fsdp_unit_exposed(gather_s, reduce_s, forward_s, backward_s, impl,
                              backward_gather=False, reduce=m == 1)
    last = fsdp_unit_exposed(0.0, reduce_s, forward_s, backward_s, impl, backward_gather=False)
    return L * (first["forward"] + (first["backward"] if m == 1 else last["backward"]))

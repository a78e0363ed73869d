"""Collectives on a real cluster: which link a process group's traffic crosses, and how
much of it a node's network cards carry.

A group of ``size`` ranks ``stride`` apart in the rank order (Megatron's: tp fastest, then
cp, dp, pp -- so a TP group has stride 1, a DP group stride tp x cp) fits in one NVLink
domain (a DGX's 8 GPUs; 72 in a GB200 NVL72 rack) when size x stride <= the domain; then
it runs over NVLink. Otherwise k = min(size, domain // stride) of its members share each
domain, and the rest is over the network:

  rings (all-reduce, all-gather, reduce-scatter, broadcast): NCCL runs one ring per
      network card ("rail") and each ring crosses a node boundary once, so the k members of
      a domain drive k x (cards per GPU) cards at once. The bus bandwidth is
      min(NVLink, k x cards per GPU x one card): a DGX A100's 8 HDR cards gave 192 GB/s
      (nccl#812, a maintainer's measurement), not one port's 25 GB/s; a DP group with one
      member per node gets its GPU's own card.
  all-to-all: every rank sends (size - k) / size of its buffer to other domains over its
      own share of the cards, and the kernel cannot spread one GPU's traffic over the
      others' cards: "Alltoall cannot aggregate the bandwidth of multiple NICs"
      (nccl-tests#267, maintainer); its bus bandwidth -> one card per GPU (nccl-tests#130).
  point-to-point (pipeline): one GPU's share of the cards, or NVLink inside a domain.

Bandwidths here are what the links achieve (bytes/s per direction). Rings across domains
are timed as NCCL's tuner times them (``collectives.nccl_collective_time``): the alphas are
hop latencies, one per ring step, an NVLink hop for a step inside a domain and a network hop
for a step between domains, so a ring's latency grows with its ranks; an all-reduce over
many domains may go to NCCL's tree instead; and the bus bandwidth falls as the ring spans
more nodes, as measured (``network_scaling``). Inside one domain a ring pays one alpha per
step (``collective_time``).

Domains: sizes, strides and domains integers >= 1; bandwidths > 0; alphas >= 0;
``nics_per_gpu`` > 0 (4 cards for 8 GPUs is 0.5); ``nbytes`` >= 0.
"""

from __future__ import annotations

from ..validate import check_bool, check_choice, check_float, check_int
import math

from .collectives import (COLLECTIVES, NCCL_HOP_US, collective_steps, collective_time,
                          nccl_collective_time)

# Bus bandwidth of a large all-reduce as the ring spans more nodes, against its 2-node figure
# (the presets' ``achieved``: 192 of 200 GB/s on 2 DGX A100, nccl#812): about 350 of 400 GB/s
# on 248 nodes of 8 H200 with 8 NDR cards, "occasionally dropping below 300" (nccl-tests#283,
# all_reduce_perf at 512 MB, 1,984 GPUs): 350 / 400 / 0.96 = 0.91. Interpolated in log2 of
# the nodes between the two, held beyond.
NET_SCALING = ((2, 1.0), (248, 350 / 400 / 0.96))


def network_scaling(nodes: int) -> float:
    """Share of its 2-node bus bandwidth a ring over ``nodes`` nodes keeps (``NET_SCALING``)."""
    nodes = check_int("nodes", nodes)
    (n0, f0), (n1, f1) = NET_SCALING
    if nodes <= n0:
        return f0
    if nodes >= n1:
        return f1
    return f0 + (f1 - f0) * (nodes - n0) / (n1 - n0)


def members_per_domain(size: int, stride: int, domain: int) -> int:
    """How many of a group's ``size`` members (``stride`` ranks apart) share one NVLink
    domain of ``domain`` GPUs: all of them if size x stride <= domain."""
    size, stride, domain = check_int("size", size), check_int("stride", stride), \
        check_int("domain", domain)
    if size * stride <= domain:
        return size
    return max(1, min(size, domain // stride))


def group_bandwidth(op: str, size: int, stride: int, domain: int, intra_bandwidth: float,
                    nic_bandwidth: float, nics_per_gpu: float = 1.0) -> float:
    """Bytes/s per GPU that ``op`` on this group reaches (the bus bandwidth of a ring, the
    per-GPU link of point-to-point): NVLink inside a domain; across domains min(NVLink, k
    x nics_per_gpu x nic_bandwidth) for rings, nics_per_gpu x nic_bandwidth for p2p. (For
    all-to-all use ``group_collective_time``: it mixes the two.)"""
    op = check_choice("op", op, COLLECTIVES)
    intra = check_float("intra_bandwidth", intra_bandwidth, 0.0)
    nic = check_float("nic_bandwidth", nic_bandwidth, 0.0)
    share = check_float("nics_per_gpu", nics_per_gpu, 0.0)
    k = members_per_domain(size, stride, domain)
    if k == size:
        return intra
    if op in ("p2p", "all_to_all"):
        return min(intra, share * nic)
    return min(intra, k * share * nic)


def group_collective_time(op: str, nbytes: float, size: int, stride: int, domain: int,
                          intra_bandwidth: float, intra_alpha: float, nic_bandwidth: float,
                          nic_alpha: float, nics_per_gpu: float = 1.0) -> float:
    """Seconds of one ``op`` of ``nbytes`` (nccl-tests' size convention) on this group.
    p2p, and rings inside one domain: ``collective_time`` at ``group_bandwidth`` with the
    slowest link's alpha per step. Rings across domains: ``nccl_collective_time`` at
    ``group_bandwidth`` x ``network_scaling(nodes)``, hops of ``intra_alpha`` (at least NCCL's
    NVLink hop, 3.4 us) inside a domain and ``nic_alpha`` between domains (k members a
    domain, size / k domains).
    all-to-all across domains: the off-domain share (size - k)/size of the buffer over the
    GPU's cards and the on-domain share (k - 1)/size over NVLink, at the same time -- the
    slower of the two -- plus (size - 1) alphas."""
    size = check_int("size", size)
    nbytes = check_float("nbytes", nbytes, 0.0, strict=False)
    ia = check_float("intra_alpha", intra_alpha, 0.0, strict=False)
    na = check_float("nic_alpha", nic_alpha, 0.0, strict=False)
    if size == 1:
        return 0.0
    k = members_per_domain(size, stride, domain)
    alpha = ia if k == size else max(ia, na)
    if op == "all_to_all" and k < size:
        off = nbytes * (size - k) / size / (check_float("nics_per_gpu", nics_per_gpu, 0.0)
                                             * check_float("nic_bandwidth", nic_bandwidth, 0.0))
        on = nbytes * (k - 1) / size / check_float("intra_bandwidth", intra_bandwidth, 0.0)
        return collective_steps("all_to_all", size) * alpha + max(off, on)
    bw = group_bandwidth(op, size, stride, domain, intra_bandwidth, nic_bandwidth, nics_per_gpu)
    if op == "p2p":
        return collective_time(op, nbytes, 2, alpha, bw)
    if k == size:  # inside one domain: one alpha per ring step, as the in-sample rows had it
        return collective_time(op, nbytes, size, ia, bw)
    # across domains, as NCCL times it: NVLink hops inside a domain, network hops between
    # them, its base latency, the tree for small all-reduces; the bus bandwidth as measured
    # for rings of that many nodes
    # (its intra-node hops at least NCCL's NVLink one: 3.4 us)
    nodes = size // k if size % k == 0 else size
    hop = max(ia, NCCL_HOP_US["ring"]["nvlink"] * 1e-6)
    return nccl_collective_time(op, nbytes, size, nodes, bw * network_scaling(nodes), hop,
                                max(hop, na))[0]


def moe_dispatch_time(tokens: float, d_model: int, n_experts: int, top_k: int, ep: int,
                      domain: int, intra_bandwidth: float, intra_alpha: float,
                      nic_bandwidth: float, nic_alpha: float, nics_per_gpu: float = 1.0,
                      dedup: bool = False, bytes_per_value: float = 2) -> float:
    """Seconds of one MoE dispatch (or combine) on each of ``ep`` consecutive GPUs, each
    with ``tokens`` tokens of ``d_model`` values: the copies leaving the NVLink domain
    (``expert_parallel.moe_remote_copies``) over the GPU's share of the network cards, and
    the ones staying inside it over NVLink, at the same time -- the slower of the two --
    plus (ep - 1) alphas.

    Plain all-to-all sends a copy per assignment: top_k (m - 1) / ep of a token's copies stay
    in its own domain of m GPUs. A deduplicating dispatcher (DeepEP: its dispatch layout
    marks whether a token goes to a rank, ``is_token_in_rank``) sends a token to each rank
    holding any of its experts once: (m - 1) x p copies in its own domain, p = 1 - C(E -
    E/ep, k) / C(E, k) the chance a rank holds one of them; across domains one copy a domain
    over the network, then one over NVLink to each other rank hit there, (D - 1)(m - 1) p in
    all -- D (m - 1) p over NVLink."""
    from .expert_parallel import moe_remote_copies
    T = check_float("tokens", tokens, 0.0, strict=False)
    h = check_int("d_model", d_model)
    k = check_int("top_k", top_k)
    ep = check_int("ep", ep)
    dedup = check_bool("dedup", dedup)
    row = h * check_float("bytes_per_value", bytes_per_value, 0.0)
    m = members_per_domain(ep, 1, domain)
    # p: the chance another rank holds any of a token's experts (moe_remote_copies over
    # domains of one rank counts those ranks, ep - 1 of them at most)
    p = moe_remote_copies(n_experts, k, ep, 1, True) / (ep - 1) if ep > 1 else 0.0
    if m == ep:
        # an all-to-all whose buffer holds, per token, a copy per rank it reaches (of which
        # (ep - 1) / ep leave the GPU): top_k copies, or with dedup one per rank hit
        per_token = p * ep if dedup else k
        return group_collective_time("all_to_all", T * per_token * row, ep, 1, domain,
                                     intra_bandwidth, intra_alpha, nic_bandwidth, nic_alpha,
                                     nics_per_gpu)
    remote = moe_remote_copies(n_experts, k, ep, m, dedup)
    off = T * remote * row / (check_float("nics_per_gpu", nics_per_gpu, 0.0)
                              * check_float("nic_bandwidth", nic_bandwidth, 0.0))
    inside = (ep // m) * (m - 1) * p if dedup else k * (m - 1) / ep
    on = T * inside * row / check_float("intra_bandwidth", intra_bandwidth, 0.0)
    alpha = max(check_float("intra_alpha", intra_alpha, 0.0, strict=False),
                check_float("nic_alpha", nic_alpha, 0.0, strict=False))
    return (ep - 1) * alpha + max(off, on)

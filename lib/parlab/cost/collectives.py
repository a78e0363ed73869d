"""Communication costs: the alpha-beta model of collectives, bus bandwidth, and the fit.

Sending one message of ``S`` bytes between two ranks costs ``alpha + S / B``: a
fixed latency ``alpha`` (software, synchronisation, wire) plus the bytes over the
link bandwidth ``B`` (Hockney, "The communication challenge for MPP", Parallel
Computing 20, 1994). A collective algorithm is a sequence of such steps, so its
cost is (number of steps) x alpha + (bytes a rank must send, serialised) / B.
The per-algorithm costs below are those of Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH" (IJHPCA 2005),
without their reduction-compute term; the ring all-reduce is the
bandwidth-optimal algorithm of Patarasuk & Yuan, "Bandwidth optimal all-reduce
algorithms for clusters of workstations" (JPDC 2009).

Sizes follow nccl-tests (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md): ``S``
is the all-reduce / broadcast buffer, the *output* of an all-gather, the *input*
of a reduce-scatter, and the buffer each rank holds in an all-to-all.

Algorithms:
  ``ring``  ranks in a ring; the data is cut into ``n`` chunks and each step every
            rank sends one chunk to its right neighbour. Bandwidth-optimal, but
            the number of steps grows linearly with ``n``.
  ``tree``  binary trees, pipelined; NCCL uses two complementary trees so every
            rank sends about as much as in a ring (Sanders, Speck & Traeff,
            "Two-tree algorithms for full bandwidth broadcast, reduction and scan",
            Parallel Computing 2009). Steps grow like log2(n).
  ``naive`` everything goes through rank 0 (gather, reduce, send back): the root's
            link carries (n-1) full copies each way.

Domains: ``n`` an integer >= 1 (exactly 2 for p2p), ``rank`` in [0, n), byte counts
finite and >= 0, ``alpha`` and ``gamma`` finite and >= 0, ``bandwidth`` and
``seconds`` finite and > 0; anything else is a ValueError naming the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..validate import check_choice, check_float, check_int

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "p2p")
ALGORITHMS = ("ring", "tree", "naive")

# Which algorithms each collective has a model for here.
_SUPPORTED = {
    "all_reduce": ("ring", "tree", "naive"),
    "all_gather": ("ring", "naive"),
    "reduce_scatter": ("ring", "naive"),
    "all_to_all": ("ring",),  # "ring" = pairwise exchange, n-1 steps
    "broadcast": ("ring", "tree", "naive"),
    "p2p": ("ring",),
}


def _check(op: str, n: int, algorithm: str, nbytes: float = 0.0) -> tuple[int, float]:
    """(n, nbytes) as int and float once op, algorithm, n and nbytes are in the model's domain."""
    check_choice("op", op, COLLECTIVES)
    check_choice("algorithm", algorithm, ALGORITHMS)
    if algorithm not in _SUPPORTED[op]:
        raise ValueError(f"algorithm={algorithm!r} is not modelled for {op}; "
                         f"choose one of {_SUPPORTED[op]}")
    n = check_int("n", n)
    if op == "p2p" and n != 2:
        raise ValueError(f"p2p is between n=2 ranks, got n={n}")
    return n, check_float("nbytes", nbytes, 0.0, strict=False)


def _log2(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def collective_steps(op: str, n: int, algorithm: str = "ring") -> int:
    """Sequential message steps on the critical path (each costs one alpha)."""
    n, _ = _check(op, n, algorithm)
    if n == 1:
        return 0
    if op == "p2p":
        return 1
    if algorithm == "ring":
        return 2 * (n - 1) if op == "all_reduce" else n - 1
    if algorithm == "tree":
        return 2 * _log2(n) if op == "all_reduce" else _log2(n)
    # naive: the root handles its n-1 peers one after another, in each phase
    return {"all_reduce": 2 * (n - 1), "all_gather": 2 * (n - 1),
            "reduce_scatter": 2 * (n - 1), "broadcast": n - 1}[op]


def collective_bytes(op: str, nbytes: float, n: int, algorithm: str = "ring",
                     rank: int = 0) -> float:
    """Bytes ``rank`` sends in one collective.

    Ring and tree are symmetric (every rank sends what it receives). ``naive``
    is not: rank 0, the root, exchanges (n-1) copies with its peers, the others
    one each.

    Ring all-reduce: 2 (n-1)/n * S per rank -- reduce-scatter then all-gather,
    each moving n-1 chunks of S/n. This tends to 2S: it stays (nearly) constant as
    n grows, which is the precise sense of the "O(1)" claim; the step count does not.
    """
    n, S = _check(op, n, algorithm, nbytes)
    rank = check_int("rank", rank, 0)
    if rank >= n:
        raise ValueError(f"rank={rank} must be in [0, n={n})")
    if n == 1:
        return 0.0
    if op == "p2p":
        return S
    if algorithm == "ring":
        if op == "all_reduce":
            return 2 * (n - 1) / n * S
        if op == "broadcast":  # pipelined: every rank but the last forwards all of it
            return S
        return (n - 1) / n * S
    if algorithm == "tree":
        # Two-tree all-reduce: each rank is interior in one tree and a leaf in the
        # other, each tree carrying S/2 up and down: 2S sent per rank. With n = 2 the
        # trees are a single edge each and a rank sends S, like the ring.
        return (2 * S if n > 2 else S) if op == "all_reduce" else S
    root = rank == 0
    if op == "all_reduce":  # root: receive n-1 buffers, send n-1 results
        return (n - 1) * S if root else S
    if op == "all_gather":  # peers send their S/n shard; root sends S to each
        return (n - 1) * S if root else S / n
    if op == "reduce_scatter":  # peers send all S; root sends each its S/n shard
        return (n - 1) * S / n if root else S
    return (n - 1) * S if root else 0.0  # broadcast


def reduced_bytes(op: str, nbytes: float, n: int, algorithm: str = "ring") -> float:
    """Bytes the busiest rank must add up locally (the gamma term of Thakur et al.)."""
    n, S = _check(op, n, algorithm, nbytes)
    if n == 1 or op not in ("all_reduce", "reduce_scatter"):
        return 0.0
    if algorithm == "naive":
        return (n - 1) * S  # the root adds every peer's full buffer
    if algorithm == "tree":
        return S  # two children's halves into each of two trees
    return (n - 1) / n * S  # ring: one chunk per reduce-scatter step


def collective_time(op: str, nbytes: float, n: int, alpha: float, bandwidth: float,
                    algorithm: str = "ring", gamma: float = 0.0) -> float:
    """Predicted seconds: steps * alpha + serialised bytes / bandwidth [+ reduced bytes * gamma].

    The bandwidth term uses the bytes of the busiest link; for ``naive`` that is
    the root's, which receives and then sends (n-1) copies in sequence. ``gamma``
    (seconds per byte added up locally) is Thakur et al.'s computation term; 0 by
    default, since on GPUs the additions hide behind the transfers.
    """
    n, S = _check(op, n, algorithm, nbytes)
    alpha = check_float("alpha", alpha, 0.0, strict=False)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    gamma = check_float("gamma", gamma, 0.0, strict=False)
    steps = collective_steps(op, n, algorithm)
    sent = collective_bytes(op, S, n, algorithm)
    compute = gamma * reduced_bytes(op, S, n, algorithm)
    if algorithm == "naive" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        # The root's gather phase is received, not sent, but serialises on the same link.
        recv = {"all_reduce": (n - 1) * S, "all_gather": (n - 1) * S / n,
                "reduce_scatter": (n - 1) * S}[op]
        return steps * alpha + (sent + recv) / bandwidth + compute
    return steps * alpha + sent / bandwidth + compute


def p2p_time(nbytes: float, alpha: float, bandwidth: float) -> float:
    """One message of ``nbytes`` between two ranks: alpha + S / B (Hockney 1994)."""
    return collective_time("p2p", nbytes, 2, alpha, bandwidth)


def ring_tree_crossover(n: int, alpha: float, bandwidth: float) -> float:
    """All-reduce size (bytes) below which the tree beats the ring in this model.

    Equate 2(n-1) a + 2 (n-1)/n S/B (ring) with 2 log2(n) a + 2 S/B (tree):
    S* = n (n - 1 - log2 n) a B. Small messages are latency-bound and prefer the
    tree's log2(n) steps; large ones are bandwidth-bound and prefer the ring's
    (n-1)/n factor. NCCL makes this choice per call from its own tuned model.
    """
    n = check_int("n", n)
    alpha = check_float("alpha", alpha, 0.0, strict=False)
    bandwidth = check_float("bandwidth", bandwidth, 0.0)
    if n < 2:
        return 0.0
    return n * max(n - 1 - _log2(n), 0) * alpha * bandwidth


# --- measuring bandwidth like nccl-tests ------------------------------------------

def bus_bandwidth_factor(op: str, n: int) -> float:
    """busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md).

    algbw = S / time. The factor turns it into the bandwidth each link actually
    carried in a ring, so numbers are comparable across n and against the link's
    peak: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;
    broadcast and p2p 1.
    """
    n, _ = _check(op, n, "ring")
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def bus_bandwidth(op: str, nbytes: float, n: int, seconds: float) -> float:
    """Bus bandwidth in bytes/s of one measured collective (nccl-tests' busbw)."""
    n, S = _check(op, n, "ring", nbytes)
    seconds = check_float("seconds", seconds, 0.0)
    return S / seconds * bus_bandwidth_factor(op, n)


# --- fitting alpha and beta to a measured sweep -------------------------------------

@dataclass
class AlphaBetaFit:
    alpha: float  # seconds per message (>= 0 from fit_alpha_beta)
    beta: float  # seconds per byte
    r2: float  # coefficient of determination of the fit, on relative errors (<= 1)

    def __post_init__(self):
        self.alpha = check_float("alpha", self.alpha, None)
        self.beta = check_float("beta", self.beta, None)
        self.r2 = check_float("r2", self.r2, None, high=1.0)

    @property
    def bandwidth(self) -> float:
        return 1.0 / self.beta if self.beta > 0 else float("inf")

    def predict(self, nbytes: float) -> float:
        return self.alpha + self.beta * check_float("nbytes", nbytes, 0.0, strict=False)


def fit_alpha_beta(sizes, times) -> AlphaBetaFit:
    """Least-squares fit of time = alpha + beta * size, weighted by 1/time^2.

    Sizes of a sweep span many orders of magnitude; unweighted least squares
    would let the largest messages decide everything and leave alpha noise (often
    negative). Weighting by 1/time^2 minimises *relative* error, so the small
    messages pin alpha and the large ones pin beta.

    The model's parameters are physical: alpha >= 0 (a noisy fit that would make it
    negative is refitted through the origin) and beta > 0 (times that do not grow with
    size are a ValueError: there is no bandwidth to fit).

    ``sizes``: bytes, finite and >= 0, at least two distinct; ``times``: seconds,
    finite and > 0, one per size.
    """
    try:
        sizes = list(sizes)
        times = list(times)
    except TypeError:
        raise ValueError(f"sizes={sizes!r} and times={times!r} must be sequences of numbers") from None
    xs = [check_float(f"sizes[{i}]", s, 0.0, strict=False) for i, s in enumerate(sizes)]
    ys = [check_float(f"times[{i}]", t, 0.0) for i, t in enumerate(times)]
    if len(xs) != len(ys):
        raise ValueError(f"sizes and times must have one time per size, got {len(xs)} sizes "
                         f"and {len(ys)} times")
    if len(set(xs)) < 2:
        raise ValueError(f"sizes={xs} must hold at least two distinct sizes, with one time each")
    # 1/time^2, scaled by the smallest time^2 (the fit is unchanged) so that it cannot overflow
    y0 = min(ys)
    w = [(y0 / y) ** 2 for y in ys]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    sxy = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys))
    if not (sxx > 0 and math.isfinite(sxx)):
        raise ValueError(f"sizes={xs} are too close together (or too far apart) to fit a slope")
    beta = sxy / sxx
    alpha = my - beta * mx
    if alpha < 0:  # a latency cannot be negative: the best fit with alpha = 0 (through the origin)
        alpha = 0.0
        beta = sum(wi * x * y for wi, x, y in zip(w, xs, ys)) / sum(wi * x * x for wi, x in zip(w, xs))
    if not beta > 0:
        raise ValueError(f"times={ys} do not grow with sizes={xs}: no bandwidth to fit "
                         "(measure sizes large enough for the transfer to dominate)")
    ss_res = sum(wi * (y - alpha - beta * x) ** 2 for wi, x, y in zip(w, xs, ys))
    ss_tot = sum(wi * (y - my) ** 2 for wi, y in zip(w, ys))
    return AlphaBetaFit(alpha, beta, 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0)


def hierarchical_all_reduce_bytes(nbytes: float, nodes: int, per_node: int) -> dict:
    """Bytes one rank sends in a two-level all-reduce of ``nbytes`` over ``nodes`` nodes of
    ``per_node`` GPUs (``collectives.hierarchical``): reduce-scatter and all-gather inside
    the node, (g-1)/g S each; an all-reduce of its 1/g piece across the nodes, 2 (m-1)/m
    S/g. Beside it the flat ring over all n = m g ranks: 2 (n-1)/n S per rank, and the
    boundary rank of each node (whose right neighbour is on the next node) sends all of
    it over the network, where in the two-level form every rank sends only its piece,
    each on its own rail. Returns "intra", "inter" (this rank, per level), "flat" (per
    rank) and "flat_inter" (a boundary rank's network bytes: one card of the node carries
    them, where the two-level form spreads g x "inter" over g cards)."""
    S = check_float("nbytes", nbytes, 0.0, strict=False)
    m = check_int("nodes", nodes)
    g = check_int("per_node", per_node)
    n = m * g
    intra = 2 * (g - 1) / g * S
    inter = 2 * (m - 1) / m * S / g
    flat = 2 * (n - 1) / n * S
    return {"intra": intra, "inter": inter, "flat": flat, "flat_inter": flat if m > 1 else 0.0}


def in_network_all_reduce_bytes(nbytes: float, n: int) -> dict:
    """Bytes per rank when the switch does the adding (in-network reduction: InfiniBand
    SHARP, Graham et al. 2016; NVLink SHARP, "NVLS", on NVSwitch): each rank sends its S
    once and receives the sum once, against a ring's 2 (n-1)/n S each way. About half the
    bytes, and one round trip instead of 2 (n-1) steps. Returns "sent" and "ring"."""
    S = check_float("nbytes", nbytes, 0.0, strict=False)
    n = check_int("n", n)
    return {"sent": S if n > 1 else 0.0, "ring": 2 * (n - 1) / n * S}


# --- what NCCL does across nodes: its latency model and its choice of algorithm -----------
# NCCL's own cost model, src/graph/tuning.cc (NVIDIA/nccl at 01afd20, the 2.8 series of
# 2020-21, the NCCL of the runs it is checked against), Simple protocol, in microseconds: a
# ring pays a base latency and one hop latency per step, NVLink (or PCIe) hops for the steps
# inside a node and network hops for the steps between nodes; a tree pays two trips up and
# down: the ranks of a node, then log2(nodes) network levels. Its tree bandwidth is capped
# (80 GB/s of bus bandwidth beyond 2 nodes) and its multi-node ring all-reduce latency is
# multiplied by 1.9 for large messages ("plateau effect of ring"). NCCL times every algorithm
# this way per call and runs the fastest; all-gather and reduce-scatter have only the ring.
NCCL_BASE_US = {"ring": 8.4, "tree": 0.0}
NCCL_HOP_US = {"ring": {"nvlink": 3.4, "pcie": 5.7, "net": 9.6},
               "tree": {"nvlink": 28.0, "pcie": 28.0, "net": 50.0}}
NCCL_TREE_BUSBW_CAP = 80e9
NCCL_RING_PLATEAU = 1.9


def nccl_latency(op: str, n: int, nodes: int, algorithm: str, hop_intra: float,
                 hop_inter: float) -> float:
    """Seconds of latency of ``op`` over ``n`` ranks on ``nodes`` nodes (n / nodes each),
    hops of ``hop_intra`` inside a node and ``hop_inter`` between nodes. Ring: (steps -
    inter-node steps) x hop_intra + inter-node steps x hop_inter, the inter-node steps
    counted like the steps over ``nodes`` ranks: 2 (n - 1) steps for an all-reduce of which
    2 (nodes - 1) cross, n - 1 of which nodes - 1 cross for an all-gather; it grows linearly
    with the ranks. Tree (all-reduce): 2 ((n/nodes - 1) hop_intra + log2(nodes) hop_inter)."""
    n, _ = _check(op, n, algorithm)
    nodes = check_int("nodes", nodes)
    if n % nodes:
        raise ValueError(f"nodes={nodes} must divide n={n} (the same ranks on every node)")
    a = check_float("hop_intra", hop_intra, 0.0, strict=False)
    b = check_float("hop_inter", hop_inter, 0.0, strict=False)
    if algorithm == "tree":
        return 2 * ((n // nodes - 1) * a + _log2(nodes) * b) if op == "all_reduce" else \
            collective_steps(op, n, "tree") * b
    steps = collective_steps(op, n, algorithm)
    inter = collective_steps(op, nodes, algorithm) if nodes > 1 else 0
    return (steps - inter) * a + inter * b


def nccl_collective_time(op: str, nbytes: float, n: int, nodes: int, bus_bw: float,
                         hop_intra: float = NCCL_HOP_US["ring"]["nvlink"] * 1e-6,
                         hop_inter: float = NCCL_HOP_US["ring"]["net"] * 1e-6,
                         algorithm: str | None = None) -> tuple[float, str]:
    """(seconds, algorithm) of ``op`` of ``nbytes`` (nccl-tests' size) over ``n`` ranks on
    ``nodes`` nodes at bus bandwidth ``bus_bw`` (bytes/s, what a ring's links carry), the way
    NCCL's tuner times it; ``algorithm=None`` takes the fastest, as NCCL does. Ring: base +
    latency (x 1.9 for a multi-node all-reduce of at least n/16 x 64 KiB) + the ring's bytes
    per rank / bus_bw. Tree (all-reduce only): its latency (tree hops: 28 us NVLink, 50 us
    network) + 2 S / min(0.9 bus_bw, 80 GB/s beyond 2 nodes). Small all-reduces over many
    nodes go to the tree (log2 nodes network hops), large ones to the ring (the bandwidth)."""
    n, S = _check(op, n, algorithm or "ring", nbytes)
    nodes = check_int("nodes", nodes)
    bw = check_float("bus_bw", bus_bw, 0.0)
    hop_intra = check_float("hop_intra", hop_intra, 0.0, strict=False)
    hop_inter = check_float("hop_inter", hop_inter, 0.0, strict=False)
    if n % nodes:
        raise ValueError(f"nodes={nodes} must divide n={n} (the same ranks on every node)")
    if n == 1:
        return 0.0, algorithm or "ring"
    scale = hop_inter / (NCCL_HOP_US["ring"]["net"] * 1e-6)
    out = {}
    if algorithm in (None, "ring"):
        lat = NCCL_BASE_US["ring"] * 1e-6 + nccl_latency(op, n, nodes, "ring", hop_intra, hop_inter)
        if op == "all_reduce" and nodes > 1 and S >= n / 16 * 65536:
            lat *= NCCL_RING_PLATEAU
        out["ring"] = lat + collective_bytes(op, S, n, "ring") / bw
    if algorithm in (None, "tree") and op == "all_reduce":
        # the tree's hops are NCCL's, scaled like the ring's if the caller's network is slower
        lat = nccl_latency(op, n, nodes, "tree", NCCL_HOP_US["tree"]["nvlink"] * 1e-6,
                           NCCL_HOP_US["tree"]["net"] * 1e-6 * scale)
        cap = min(0.9 * bw, NCCL_TREE_BUSBW_CAP) if nodes > 2 else 0.9 * bw
        out["tree"] = lat + 2 * S / cap
    if not out:
        raise ValueError(f"algorithm={algorithm!r} is not modelled for {op} in NCCL's tuner "
                         "(only all_reduce has a tree)")
    best = min(out, key=out.get)
    return out[best], best

"""Mixture of Experts and expert parallelism: capacity, all-to-all traffic, FLOPs and
parameters (total vs active).

Domains: token counts, widths, expert counts, layer counts and degrees are integers
>= 1 (``tokens`` may be 0 where said); ``top_k`` between 1 and ``n_experts``;
``capacity_factor`` a finite number > 0 (or None: no capacity limit, where accepted);
``bytes_per_value`` > 0; fractions in [0, 1].
"""

from __future__ import annotations

import math

from ..validate import check_bool, check_float, check_int


def _check_k(top_k, n_experts) -> int:
    n_experts = check_int("n_experts", n_experts)
    return check_int("top_k", top_k, 1, n_experts)


def expert_capacity(tokens: int, n_experts: int, capacity_factor: float, top_k: int = 1) -> int:
    """Most assignments one expert takes in a step: floor(tokens * top_k / n_experts *
    capacity_factor).

    Switch Transformers (Fedus et al. 2021, §2.2, eq. 3): expert capacity = (tokens per
    batch / number of experts) x capacity factor; the paper writes the product
    unrounded, its Mesh-TensorFlow implementation truncates it to an integer, as here
    (we leave out that code's minimum capacity). GShard (Lepikhin et al. 2020, §2.2)
    counts top-2 assignments: 2N/E, hence the ``top_k`` factor. The assignments beyond
    it are dropped: the token goes on through the residual connection."""
    tokens = check_int("tokens", tokens, 0)
    top_k = _check_k(top_k, n_experts)
    capacity_factor = check_float("capacity_factor", capacity_factor, 0.0)
    # tokens * top_k * cf / E, rounded down; the small epsilon keeps 1.25 * 32 = 40
    # from becoming 39.999... in binary floating point.
    return int(math.floor(tokens * top_k * capacity_factor / n_experts + 1e-9))


def moe_all_to_all_bytes(tokens: int, d_model: int, top_k: int = 1, ep: int = 2,
                         bytes_per_value: float = 4, remote_fraction: float | None = None
                         ) -> dict:
    """Bytes one rank sends in one MoE layer's all-to-alls in one training step.

    ``tokens``: the rank's tokens; each makes ``top_k`` assignments of ``d_model``
    values. Forward: the dispatch all-to-all sends every assignment whose expert lives
    on another rank, the combine all-to-all sends the same number of rows back
    (GShard, Lepikhin et al. 2020, §3.2: dispatch and combine); backward runs both in
    reverse with the gradients, the same bytes. ``remote_fraction``: the share of
    assignments going to other ranks; None = (ep - 1) / ep, balanced routing with
    nothing dropped (the rows for this rank's own experts never leave it). Returns
    {"dispatch", "combine", "forward", "backward", "total"} in bytes."""
    tokens = check_int("tokens", tokens, 0)
    d_model = check_int("d_model", d_model)
    ep = check_int("ep", ep)
    top_k = check_int("top_k", top_k)
    bytes_per_value = check_float("bytes_per_value", bytes_per_value, 0.0)
    if remote_fraction is None:
        remote_fraction = (ep - 1) / ep
    remote_fraction = check_float("remote_fraction", remote_fraction, 0.0, strict=False,
                                  high=1.0)
    one = tokens * top_k * remote_fraction * d_model * bytes_per_value
    return {"dispatch": one, "combine": one, "forward": 2 * one, "backward": 2 * one,
            "total": 4 * one}


def moe_flops_per_token(d_model: int, d_ff: int, n_experts: int, top_k: int = 1,
                        capacity_factor: float | None = None, training: bool = True,
                        gated: bool = False) -> float:
    """Matmul FLOPs per token of one MoE layer (router + experts): 2 d E for the router,
    plus per chosen expert 2 x (2 or 3 with a gated MLP) d d_ff. A token costs
    ``top_k`` experts, not ``n_experts``: the sparsity is the point (Switch §2;
    Mixtral §2.1: 13B active of 47B). ``capacity_factor``: experts computed on
    capacity-sized buffers, as on accelerators (Switch §2.2: the padding is computed),
    cost capacity_factor x top_k experts per token. ``training``: x3 (forward +
    backward, as ``cost.flops_per_token``). One layer's MLP block, router and padding
    included; a whole model's FLOPs per token, MoE or dense, is ``cost.flops_per_token``
    (its active parameters; the router and padding left out, as Megatron-LM does)."""
    d_model = check_int("d_model", d_model)
    d_ff = check_int("d_ff", d_ff)
    top_k = _check_k(top_k, n_experts)
    training = check_bool("training", training)
    gated = check_bool("gated", gated)
    slots = float(top_k)
    if capacity_factor is not None:
        slots = top_k * check_float("capacity_factor", capacity_factor, 0.0)
    per = 2 * d_model * n_experts + slots * 2 * (3 if gated else 2) * d_model * d_ff
    return float(3 * per if training else per)


def moe_params(n_layers: int, d_model: int, d_ff: int, n_experts: int, top_k: int = 1,
               n_heads: int = 1, n_kv_heads: int | None = None, vocab_size: int = 0,
               gated: bool = False, tied_embeddings: bool = False, norms: int = 2) -> dict:
    """Parameters of a decoder-only MoE transformer (every layer MoE), total and active
    per token: {"total", "active", "experts", "attention", "router", "embeddings"}.

    Per layer: attention 2 d^2 + 2 d d_kv (q, o; k, v with grouped-query attention,
    d_kv = d n_kv_heads / n_heads), router d E, E experts of (3 if ``gated`` (SwiGLU)
    else 2) d d_ff, ``norms`` d (RMSNorm weights); embeddings V d (x2 if untied) + a
    final norm d. Active: the same with ``top_k`` experts instead of E. Mixtral 8x7B
    (Jiang et al. 2024, Table 1): 32 layers, d 4096, d_ff 14336, 8 experts top-2, 32
    heads / 8 KV heads, V 32000, SwiGLU, untied: 46.7B total, 12.9B active."""
    L = check_int("n_layers", n_layers)
    d = check_int("d_model", d_model)
    d_ff = check_int("d_ff", d_ff)
    top_k = _check_k(top_k, n_experts)
    n_heads = check_int("n_heads", n_heads)
    n_kv_heads = n_heads if n_kv_heads is None else check_int("n_kv_heads", n_kv_heads)
    vocab_size = check_int("vocab_size", vocab_size, 0)
    norms = check_int("norms", norms, 0)
    gated = check_bool("gated", gated)
    tied = check_bool("tied_embeddings", tied_embeddings)
    if d % n_heads or n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d} and n_kv_heads="
                         f"{n_kv_heads} must divide n_heads")
    attention = 2 * d * d + 2 * d * (d // n_heads * n_kv_heads)
    expert = (3 if gated else 2) * d * d_ff
    router = d * n_experts
    embeddings = vocab_size * d * (1 if tied else 2) + d
    shared = L * (attention + router + norms * d) + embeddings
    return {"total": shared + L * n_experts * expert, "active": shared + L * top_k * expert,
            "experts": L * n_experts * expert, "attention": L * attention,
            "router": L * router, "embeddings": embeddings}


def moe_remote_copies(n_experts: int, top_k: int, ep: int, members_per_domain: int,
                      dedup: bool = False) -> float:
    """Copies of one token's hidden state that leave its NVLink domain in a MoE dispatch,
    with the E experts spread evenly over ``ep`` ranks, ``members_per_domain`` of them per
    domain, and routing uniform over the experts.

    Plain all-to-all sends every one of the top_k assignments to its expert's rank: top_k x
    (ep - m) / ep of them leave the domain. A deduplicating dispatcher (DeepEP, DeepSeek-AI
    2024, "DeepSeek-V3 Technical Report" §3.2.2: each token goes to a node once and is
    forwarded over NVLink there) sends one copy per other domain holding any of its
    experts: (D - 1) x (1 - C(E - E/D, k) / C(E, k)) for D = ep / m domains."""
    E = check_int("n_experts", n_experts)
    k = _check_k(top_k, n_experts)
    ep = check_int("ep", ep)
    m = check_int("members_per_domain", members_per_domain)
    if E % ep or ep % m:
        raise ValueError(f"ep={ep} must divide n_experts={E} and be a multiple of "
                         f"members_per_domain={m}")
    domains = ep // m
    if not check_bool("dedup", dedup):
        return k * (ep - m) / ep
    none_here = math.comb(E - E // domains, k) / math.comb(E, k)
    return (domains - 1) * (1 - none_here)


# --- variants: fine-grained + shared experts, expert choice, dropless -------------------

def fine_grained_experts(n_experts: int, top_k: int, d_ff: int, segments: int = 1,
                         n_shared: int = 0) -> dict:
    """DeepSeekMoE (Dai et al. 2024): fine-grained expert segmentation (§3.1) cuts each of
    N experts into ``segments`` = m of width d_ff/m and routes top-mK of the mN, keeping
    the FLOPs; shared expert isolation (§3.2) makes ``n_shared`` = K_s of the mK active
    ones always on, so the router picks mK - K_s. (We keep mN routed ones beside the
    shared, as DeepSeek-V3 does with 256 + 1 (§2.1.2's form, §4.2's numbers), where
    DeepSeekMoE takes K_s out of the mN.) Returns {"n_experts", "top_k", "d_ff",
    "n_shared", "combinations": C(mN,
    mK - K_s), the expert sets a token can get (§3.1: 120 for 16 top-2, 4,426,165,368 at
    m = 4), "active_width": (mK) d_ff/m = K d_ff, the FFN width each token computes,
    "rows_per_token": mK - K_s, rows each token sends in a dispatch}."""
    top_k = _check_k(top_k, n_experts)
    d_ff = check_int("d_ff", d_ff)
    m = check_int("segments", segments)
    n_shared = check_int("n_shared", n_shared, 0, m * top_k - 1)
    if d_ff % m:
        raise ValueError(f"segments={m} must divide d_ff={d_ff}")
    routed_k = m * top_k - n_shared
    return {"n_experts": m * n_experts, "top_k": routed_k, "d_ff": d_ff // m,
            "n_shared": n_shared, "combinations": math.comb(m * n_experts, routed_k),
            "active_width": m * top_k * (d_ff // m), "rows_per_token": routed_k}


def expert_choice_coverage(n_experts: int, capacity_factor: float, max_experts: int = 2
                           ) -> list[float]:
    """Expert choice routing (Zhou et al. 2022, §3.2, Eq. 1-2): each of E experts takes n c / E of
    the n tokens. If the experts chose independently at random, a token would be picked
    by each with probability p = c / E, so by j of them with the binomial probability
    C(E, j) p^j (1 - p)^(E - j): returns [P(0), P(1), ..., P(>= max_experts)]. P(0) =
    (1 - c/E)^E ~ e^-c is the share of tokens that get no expert (they pass through the
    residual only). Real routers are not independent (a token's softmax scores compete
    across experts), so a run measures its own shares; this is the baseline."""
    E = check_int("n_experts", n_experts)
    c = check_float("capacity_factor", capacity_factor, 0.0, high=float(E))
    j_max = check_int("max_experts", max_experts, 1, E)
    p = c / E
    probs = [math.comb(E, j) * p ** j * (1 - p) ** (E - j) for j in range(j_max)]
    return probs + [max(0.0, 1.0 - sum(probs))]


def grouped_gemm_rows(counts: list[int], capacity: int | None = None,
                      block: int | None = None) -> dict:
    """Rows the expert GEMMs compute for one step, given the assignments per expert
    ``counts`` (n_e), three ways (MegaBlocks, Gale et al. 2022, §3-5):
    "loop": one GEMM per expert on its own rows (a grouped GEMM), sum n_e, nothing padded;
    "padded": one batched GEMM over groups padded to the busiest expert, E max n_e
    (dropless, but pays for the padding); "block": MegaBlocks' block-sparse form, each
    group padded to a multiple of ``block`` rows (128: blocks in §5.1.2, padding in
    §5.2), sum ceil(n_e / b) b;
    with ``capacity`` C: "capacity": E C rows computed (Switch's buffers, padding
    included) and "dropped": sum max(0, n_e - C) assignments lost."""
    if not isinstance(counts, (list, tuple)) or not counts:
        raise ValueError(f"counts={counts!r} must be a non-empty list of assignments per expert")
    n = [check_int("counts", c, 0) for c in counts]
    out = {"loop": sum(n), "padded": len(n) * max(n)}
    if block is not None:
        b = check_int("block", block)
        out["block"] = sum(-(-x // b) * b for x in n)
    if capacity is not None:
        C = check_int("capacity", capacity, 0)
        out["capacity"], out["dropped"] = len(n) * C, sum(max(0, x - C) for x in n)
    return out


def grouped_gemm_flops(counts: list[int], d_model: int, d_ff: int, capacity: int | None = None,
                       block: int | None = None, gated: bool = False,
                       training: bool = True) -> dict:
    """``grouped_gemm_rows`` in FLOPs: each row costs 2 (2 or 3 gated) d d_ff in the
    forward, x3 in training (as ``moe_flops_per_token``); "dropped" stays a row count."""
    rows = grouped_gemm_rows(counts, capacity, block)
    d_model = check_int("d_model", d_model)
    d_ff = check_int("d_ff", d_ff)
    per = 2 * (3 if check_bool("gated", gated) else 2) * d_model * d_ff
    per *= 3 if check_bool("training", training) else 1
    return {k: (v if k == "dropped" else float(v * per)) for k, v in rows.items()}

"""Analytic cost models: every formula the notebooks compare measurements against.

Formulas live here once; notebooks and widgets call them, never retype them.
Units: bytes, seconds, bytes/second, FLOP, FLOP/s.

Communication: the alpha-beta model
-----------------------------------
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def _check(op: str, n: int, algorithm: str, nbytes: float = 0) -> None:
    if op not in _SUPPORTED:
        raise ValueError(f"op={op!r} must be one of {COLLECTIVES}")
    if algorithm not in _SUPPORTED[op]:
        raise ValueError(f"algorithm={algorithm!r} is not modelled for {op}; "
                         f"choose one of {_SUPPORTED[op]}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} ranks must be an int >= 1")
    if op == "p2p" and n != 2:
        raise ValueError(f"p2p is between n=2 ranks, got n={n}")
    if nbytes < 0:
        raise ValueError(f"nbytes={nbytes} must be >= 0")


def _log2(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def collective_steps(op: str, n: int, algorithm: str = "ring") -> int:
    """Sequential message steps on the critical path (each costs one alpha)."""
    _check(op, n, algorithm)
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
    _check(op, n, algorithm, nbytes)
    S = float(nbytes)
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
    _check(op, n, algorithm, nbytes)
    if n == 1 or op not in ("all_reduce", "reduce_scatter"):
        return 0.0
    if algorithm == "naive":
        return (n - 1) * float(nbytes)  # the root adds every peer's full buffer
    if algorithm == "tree":
        return float(nbytes)  # two children's halves into each of two trees
    return (n - 1) / n * nbytes  # ring: one chunk per reduce-scatter step


def collective_time(op: str, nbytes: float, n: int, alpha: float, bandwidth: float,
                    algorithm: str = "ring", gamma: float = 0.0) -> float:
    """Predicted seconds: steps * alpha + serialised bytes / bandwidth [+ reduced bytes * gamma].

    The bandwidth term uses the bytes of the busiest link; for ``naive`` that is
    the root's, which receives and then sends (n-1) copies in sequence. ``gamma``
    (seconds per byte added up locally) is Thakur et al.'s computation term; 0 by
    default, since on GPUs the additions hide behind the transfers.
    """
    if alpha < 0 or not bandwidth > 0 or gamma < 0:
        raise ValueError(f"need alpha >= 0, bandwidth > 0 and gamma >= 0, got alpha={alpha}, "
                         f"bandwidth={bandwidth}, gamma={gamma}")
    steps = collective_steps(op, n, algorithm)
    sent = collective_bytes(op, nbytes, n, algorithm)
    compute = gamma * reduced_bytes(op, nbytes, n, algorithm)
    if algorithm == "naive" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        # The root's gather phase is received, not sent, but serialises on the same link.
        recv = {"all_reduce": (n - 1) * nbytes, "all_gather": (n - 1) * nbytes / n,
                "reduce_scatter": (n - 1) * nbytes}[op]
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
    _check(op, n, "ring")
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def bus_bandwidth(op: str, nbytes: float, n: int, seconds: float) -> float:
    """Bus bandwidth in bytes/s of one measured collective (nccl-tests' busbw)."""
    if not seconds > 0:
        raise ValueError(f"seconds={seconds} must be > 0")
    return nbytes / seconds * bus_bandwidth_factor(op, n)


@dataclass
class AlphaBetaFit:
    alpha: float  # seconds per message
    beta: float  # seconds per byte
    r2: float  # coefficient of determination of the fit, on relative errors

    @property
    def bandwidth(self) -> float:
        return 1.0 / self.beta if self.beta > 0 else float("inf")

    def predict(self, nbytes: float) -> float:
        return self.alpha + self.beta * nbytes


def fit_alpha_beta(sizes, times) -> AlphaBetaFit:
    """Least-squares fit of time = alpha + beta * size, weighted by 1/time^2.

    Sizes of a sweep span many orders of magnitude; unweighted least squares
    would let the largest messages decide everything and leave alpha noise (often
    negative). Weighting by 1/time^2 minimises *relative* error, so the small
    messages pin alpha and the large ones pin beta.
    """
    xs, ys = [float(s) for s in sizes], [float(t) for t in times]
    if len(xs) != len(ys) or len(xs) < 2 or len(set(xs)) < 2:
        raise ValueError("need at least two distinct sizes, with one time each")
    if min(ys) <= 0 or min(xs) < 0:
        raise ValueError("times must be > 0 and sizes >= 0")
    w = [1.0 / y ** 2 for y in ys]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    sxy = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys))
    beta = sxy / sxx
    alpha = my - beta * mx
    ss_res = sum(wi * (y - alpha - beta * x) ** 2 for wi, x, y in zip(w, xs, ys))
    ss_tot = sum(wi * (y - my) ** 2 for wi, y in zip(w, ys))
    return AlphaBetaFit(alpha, beta, 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0)


# --- compute: FLOPs per token and model FLOPs utilisation --------------------------

def transformer_params(n_layers: int, d_model: int, d_ff: int | None = None) -> int:
    """Non-embedding parameters of a GPT-style stack: L (4 d^2 + 2 d d_ff) weights
    (attention qkv + proj, MLP in + out), i.e. 12 L d^2 for d_ff = 4d (Kaplan et
    al., "Scaling Laws for Neural Language Models", 2020, Table 1). Biases and
    LayerNorms are ignored, as there."""
    d_ff = 4 * d_model if d_ff is None else d_ff
    return n_layers * (4 * d_model * d_model + 2 * d_model * d_ff)


def flops_per_token(n_params: int, n_layers: int, seq_len: int, d_model: int,
                    training: bool = True) -> float:
    """Matmul FLOPs per token: 6 N + 12 L T d for training (forward + backward).

    6N: each weight does one multiply-add (2 FLOPs) per token forward and two in
    backward (gradients w.r.t. input and weight). 12 L T d: the attention scores
    QK^T and their product with V, 2 x 2 T d per layer forward, times 3. This is
    PaLM's accounting (Chowdhery et al. 2022, Appendix B); Kaplan et al. 2020 count
    one of the two attention matmuls (6 N + 6 L T d). ``training=False``: forward
    only, one third. ``n_params``: non-embedding parameters (``transformer_params``
    or ``GPT.num_params(include_embeddings=False)``).
    """
    total = 6 * n_params + 12 * n_layers * seq_len * d_model
    return float(total if training else total / 3)


def mfu(tokens_per_second: float, flops_per_token_: float, peak_flops: float) -> float:
    """Model FLOPs utilisation: useful FLOP/s over the hardware's peak (PaLM, §4.1).

    Recomputation (activation checkpointing) does not count as useful, so MFU is
    at most the hardware FLOPs utilisation (HFU)."""
    if not peak_flops > 0:
        raise ValueError(f"peak_flops={peak_flops} must be > 0")
    return tokens_per_second * flops_per_token_ / peak_flops


# --- pipeline parallelism: the bubble -------------------------------------------------

PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")


def check_int(name: str, value, low: int = 1) -> int:
    """``value`` if it is an integer >= ``low`` (not a bool), else a ValueError naming it.
    The lab's one argument check for counts (ranks, steps, micro-batches, ...)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    return value


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """Idle share of a pipeline step's total time, equal stages, no communication.

    Each of the ``p`` ranks is busy for ``m`` micro-batches x (t_f + t_b) of work;
    the step lasts ``(m + (p-1)/v) (t_f + t_b)``: the pipeline takes ``p-1`` stage
    slots to fill and ``p-1`` to drain, and with ``v`` model chunks per rank
    (interleaved 1F1B) each slot is ``v`` times shorter. So

        idle / total = ((p-1)/v) / (m + (p-1)/v) = (p-1) / (v m + p - 1).

    GPipe (Huang et al. 2019, §2.2) and 1F1B / PipeDream-Flush (Narayanan et al.
    2021, "Efficient Large-Scale Language Model Training on GPU Clusters using
    Megatron-LM", §2.2.1) have the *same* bubble: 1F1B changes how many
    micro-batches' activations are held (p instead of m), not the idle time.
    Narayanan et al. quote the bubble relative to the ideal time instead,
    ``(p-1)/(v m)`` (see ``bubble_ratio``); it exceeds 1 when m < p - 1.
    """
    p, m, v = check_int("p", p), check_int("m", m), check_int("v", v)
    return (p - 1) / (v * m + p - 1)


def bubble_ratio(p: int, m: int, v: int = 1) -> float:
    """Bubble time over ideal (bubble-free) time: (p-1) / (v m) -- the normalisation
    of Narayanan et al. 2021, §2.2.1. Relation: ratio = fraction / (1 - fraction)."""
    p, m, v = check_int("p", p), check_int("m", m), check_int("v", v)
    return (p - 1) / (v * m)


def pipeline_peak_activations(schedule: str, p: int, m: int, stage: int = 0) -> int:
    """Micro-batches whose activations stage ``stage`` (0 = first) holds at its peak.

    GPipe runs all m forwards before any backward: m. 1F1B (PipeDream-Flush) lets
    stage s run at most p - s forwards ahead of its backwards: min(m, p - s)
    (Narayanan et al. 2021, §2.2.1). Interleaved and zero-bubble schedules depend
    on the exact schedule; simulate them (``pipeline_parallel.simulate``)."""
    p, m = check_int("p", p), check_int("m", m)
    if not 0 <= stage < p:
        raise ValueError(f"stage={stage} must be in [0, p={p})")
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(m, p - stage)
    raise ValueError(f"schedule={schedule!r}: closed form only for 'gpipe' and '1f1b'")


# --- data parallelism and ZeRO: memory and traffic --------------------------------------

ZERO_STAGES = (0, 1, 2, 3)


def zero_memory(n_params: float, dp: int, stage: int, param_bytes: float = 2,
                grad_bytes: float = 2, optimizer_bytes: float = 12) -> dict:
    """Per-GPU bytes of model states under ZeRO (Rajbhandari et al., "ZeRO: Memory
    Optimizations Toward Training Trillion Parameter Models", SC 2020, §5, Fig. 1).

    Defaults are mixed-precision Adam as in the paper: fp16 parameters (2 B) and
    gradients (2 B), and K = 12 B of optimizer state per parameter (fp32 master
    copy, momentum and variance). ``stage`` 0 is plain data parallelism (everything
    replicated), 1 shards the optimizer states over ``dp`` ranks (P_os), 2 also the
    gradients (P_os+g), 3 also the parameters (P_os+g+p). Activations, buffers and
    fragmentation are not included (see ``activation_memory``).
    Returns {"params", "grads", "optimizer", "total"} in bytes.
    """
    dp = check_int("dp", dp)
    if stage not in ZERO_STAGES:
        raise ValueError(f"stage={stage!r} must be one of {ZERO_STAGES} (0 = plain DP)")
    if n_params < 0:
        raise ValueError(f"n_params={n_params} must be >= 0")
    for name, b in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes),
                    ("optimizer_bytes", optimizer_bytes)):
        if b < 0:
            raise ValueError(f"{name}={b} must be >= 0")
    out = {
        "params": n_params * param_bytes / (dp if stage >= 3 else 1),
        "grads": n_params * grad_bytes / (dp if stage >= 2 else 1),
        "optimizer": n_params * optimizer_bytes / (dp if stage >= 1 else 1),
    }
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out


def zero_comm_volume(n_params: float, dp: int, stage: int, grad_bytes: float = 2,
                     param_bytes: float | None = None) -> float:
    """Bytes each rank sends per training step for the model states, ring algorithms.

    Plain DP and ZeRO-1/2 move 2 Psi: one all-reduce of the gradients, or a
    reduce-scatter of gradients plus an all-gather of updated parameters, each
    Psi (dp-1)/dp. ZeRO-3 moves 3 Psi: parameters are all-gathered again in the
    forward and in the backward pass, plus the gradient reduce-scatter (ZeRO
    paper, §7.2-7.3). Psi = n_params x bytes per element; returns the exact
    (dp-1)/dp-scaled figure (-> 2 Psi or 3 Psi for large dp).
    """
    dp = check_int("dp", dp)
    if stage not in ZERO_STAGES:
        raise ValueError(f"stage={stage!r} must be one of {ZERO_STAGES} (0 = plain DP)")
    param_bytes = grad_bytes if param_bytes is None else param_bytes
    scale = (dp - 1) / dp
    grads = n_params * grad_bytes * scale                 # all-reduce = RS + AG of grads
    if stage == 0:
        return 2 * grads
    if stage in (1, 2):
        return grads + n_params * param_bytes * scale     # RS grads + AG params
    return grads + 2 * n_params * param_bytes * scale     # RS grads + AG params twice


def activation_memory(seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                      n_layers: int, recompute: str = "none", tp: int = 1,
                      sequence_parallel: bool = False, bytes_per_value: int = 2) -> float:
    """Activation bytes a GPT layer stack keeps for backward, per GPU.

    Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
    Models" (MLSys 2023), §4, Eq. (1)-(4), 16-bit activations, 1-byte dropout
    masks: per layer ``s b h (34 + 5 a s / h)`` bytes, with s = seq_len,
    b = micro_batch, h = d_model, a = n_heads. Tensor parallelism divides the
    parts inside attention and MLP: ``s b h (10 + 24/t + 5 a s / (h t))``;
    with sequence parallelism everything is divided: ``s b h (34 + 5 a s / h) / t``.

    ``recompute``: "none"; "selective" (recompute only softmax/dropout inside
    attention; the 5 a s / h term disappears, §5); "full" (store only each
    layer's input, 2 s b h bytes, and re-run the forward in backward).
    ``bytes_per_value`` rescales from the paper's 16-bit numbers (4 for fp32).
    Embeddings and the output layer are left out, as in the paper's per-layer count.
    """
    for name, val in (("seq_len", seq_len), ("micro_batch", micro_batch), ("d_model", d_model),
                      ("n_heads", n_heads), ("n_layers", n_layers), ("tp", tp)):
        check_int(name, val)
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute={recompute!r} must be 'none', 'selective' or 'full'")
    s, b, h, a, t = seq_len, micro_batch, d_model, n_heads, tp
    attn_scores = 0.0 if recompute == "selective" else 5 * a * s / h
    if recompute == "full":
        per_layer = 2 * s * b * h / (t if sequence_parallel else 1)
    elif sequence_parallel:
        per_layer = s * b * h * (34 + attn_scores) / t
    else:
        per_layer = s * b * h * (10 + 24 / t + attn_scores / t)
    return per_layer * n_layers * bytes_per_value / 2


# --- "does it fit?": model presets and a per-GPU memory plan ----------------------------

@dataclass(frozen=True)
class ModelPreset:
    name: str
    n_params: int  # all parameters, embeddings included
    n_layers: int
    d_model: int
    n_heads: int
    seq_len: int  # the context length the model was trained with
    source: str


# n_params: exact counts of the released LLaMA checkpoints, which follow from the shapes
# (tests/test_cost.py recomputes them): per layer 4 d^2 attention (2 d^2 + 2 d d_kv with
# grouped-query attention, 70B) + 3 d d_ff SwiGLU MLP + 2 d RMSNorm; plus untied input and
# output embeddings 2 V d (V = 32000) and a final norm. GPT-3 XL: 12 L d^2 + V d (tied) +
# T d positions, biases and LayerNorms left out (the paper quotes "1.3B").
# Activation memory uses Korthikanti et al.'s GPT layer (4d MLP, dropout) for all of
# them: an approximation for LLaMA's SwiGLU MLP without dropout.
MODEL_PRESETS = {p.name: p for p in [
    ModelPreset("1.3B", 1_315_080_192, 24, 2048, 16, 2048,
                "GPT-3 XL: Brown et al., 'Language Models are Few-Shot Learners', 2020, Table 2.1"),
    ModelPreset("7B", 6_738_415_616, 32, 4096, 32, 2048,
                "LLaMA-7B: Touvron et al., 'LLaMA: Open and Efficient Foundation Language "
                "Models', 2023, Table 2 (d_ff 11008)"),
    ModelPreset("13B", 13_015_864_320, 40, 5120, 40, 2048,
                "LLaMA-13B: Touvron et al. 2023, Table 2 (d_ff 13824)"),
    ModelPreset("70B", 68_976_648_192, 80, 8192, 64, 4096,
                "Llama 2 70B: Touvron et al., 'Llama 2: Open Foundation and Fine-Tuned Chat "
                "Models', 2023, Table 1 (grouped-query attention, 8 KV heads; d_ff 28672)"),
]}

_STAGE_NAMES = {0: "plain DP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}


def memory_plan(model="7B", n_gpus: int = 4, gpu_memory_gb: float = 80.0, stage: int = 0,
                recompute: str = "none", micro_batch: int = 1, seq_len: int | None = None,
                param_bytes: float = 2, grad_bytes: float = 2, optimizer_bytes: float = 12) -> dict:
    """Per-GPU memory of data-parallel training over ``n_gpus`` GPUs with ZeRO ``stage``:
    model states (``zero_memory``, mixed-precision Adam by default) plus activations
    (``activation_memory``, 16-bit, ``recompute`` "none" / "selective" / "full"), against
    ``gpu_memory_gb`` (decimal GB, as GPUs are marketed).

    ``model``: a key of MODEL_PRESETS or a ModelPreset. Left out, so "fits" is optimistic:
    temporary buffers (communication buckets; under ZeRO-3 the gathered parameters of
    the layer running), the allocator's fragmentation, the CUDA context (~1 GB), and the
    logits (b x s x vocab). Returns bytes under "params", "grads", "optimizer",
    "activations", "total" and "gpu", with "fits" (bool) and a one-line "verdict".
    """
    if isinstance(model, str):
        if model not in MODEL_PRESETS:
            raise ValueError(f"model={model!r} must be one of {sorted(MODEL_PRESETS)} or a ModelPreset")
        model = MODEL_PRESETS[model]
    if not gpu_memory_gb > 0:
        raise ValueError(f"gpu_memory_gb={gpu_memory_gb} must be > 0")
    seq_len = model.seq_len if seq_len is None else seq_len
    states = zero_memory(model.n_params, n_gpus, stage, param_bytes, grad_bytes, optimizer_bytes)
    act = activation_memory(seq_len, micro_batch, model.d_model, model.n_heads, model.n_layers,
                            recompute)
    plan = {"model": model.name, "n_gpus": n_gpus, "stage": stage, "recompute": recompute,
            "micro_batch": micro_batch, "seq_len": seq_len, "params": states["params"],
            "grads": states["grads"], "optimizer": states["optimizer"], "activations": act,
            "gpu": gpu_memory_gb * 1e9}
    plan["total"] = states["total"] + act
    plan["fits"] = plan["total"] <= plan["gpu"]
    gb = lambda b: f"{b / 1e9:.1f} GB"  # noqa: E731
    margin = (f"fits, {gb(plan['gpu'] - plan['total'])} spare" if plan["fits"]
              else f"does NOT fit, {gb(plan['total'] - plan['gpu'])} short")
    plan["verdict"] = (f"{model.name}, {_STAGE_NAMES[stage]} on {n_gpus} GPUs, micro-batch "
                       f"{micro_batch} x {seq_len} tokens, recompute={recompute}: "
                       f"{gb(states['total'])} model states + {gb(act)} activations = "
                       f"{gb(plan['total'])} of {gb(plan['gpu'])} per GPU: {margin}")
    return plan


def max_micro_batch(model="7B", n_gpus: int = 4, gpu_memory_gb: float = 80.0, stage: int = 0,
                    recompute: str = "none", seq_len: int | None = None, **bytes_kw) -> int:
    """Largest micro-batch per GPU for which ``memory_plan`` fits (0: not even one
    sequence). Activations grow linearly with the micro-batch; model states do not."""
    one = memory_plan(model, n_gpus, gpu_memory_gb, stage, recompute, 1, seq_len, **bytes_kw)
    spare = one["gpu"] - (one["total"] - one["activations"])
    return max(0, math.floor(spare / one["activations"]))


# --- data parallelism: step time and scaling --------------------------------------------

def dp_step_time(forward_s: float, backward_s: float, comm_s: float,
                 overlap: bool = True) -> float:
    """One data-parallel step: forward, backward, and the gradient all-reduce (``comm_s``,
    e.g. from ``collective_time``). Without overlap the all-reduce follows backward:
    t_f + t_b + t_c. With DDP's bucketing (Li et al., "PyTorch Distributed: Experiences
    on Accelerating Data Parallel Training", VLDB 2020, §3.2.3) it runs during backward,
    so at best only the part that does not fit behind backward shows: t_f + max(t_b, t_c).
    That is a bound: the last bucket is launched when backward ends, so some
    communication is always exposed."""
    if min(forward_s, backward_s, comm_s) < 0:
        raise ValueError(f"times must be >= 0, got forward_s={forward_s}, "
                         f"backward_s={backward_s}, comm_s={comm_s}")
    return forward_s + (max(backward_s, comm_s) if overlap else backward_s + comm_s)


def dp_speedup(n: int, forward_s: float, backward_s: float, comm_s: float,
               overlap: bool = True) -> float:
    """Throughput of ``n`` data-parallel ranks over one rank, each with the same per-rank
    batch (weak scaling): n (t_f + t_b) / dp_step_time(...), with ``comm_s`` the
    all-reduce time on n ranks. Equals n when communication is free or fully hidden."""
    n = check_int("n", n)
    return n * (forward_s + backward_s) / dp_step_time(forward_s, backward_s, comm_s, overlap)

"""What the planner plans: a model (``ModelSpec``), a cluster (``Cluster``) and a layout of
the model on it (``Layout``), each a frozen dataclass checked when made -- a bad value is a
``ValueError`` naming the field, before anything is estimated.

A layout splits n_gpus = tp x cp x pp x dp in Megatron's rank order, tp fastest (then cp,
dp, pp): a TP group is tp neighbouring GPUs, a CP group cp GPUs tp apart, a DP group dp
GPUs tp x cp apart, a pipeline's stages tp x cp x dp apart (Megatron-LM's
``parallel_state``; Narayanan et al. 2021, §3, compose the groups but give no order).
Expert parallelism folds over the same ranks (the MoE layers' ep consecutive GPUs
exchange tokens; Liu et al. 2025, "MoE Parallel Folding", §3):
ep divides n_experts and tp x cp x dp.

Two kinds of error, both ``ValueError``: a bad value (a degree of 0, a flag of 1, a GPU
that is not a GPUSpec) is refused where it is given; a layout that is well formed but
cannot run this model on these GPUs (tp not dividing the heads, pp x v more than the
layers, a batch dp does not divide) is a ``LayoutError``, raised by ``Layout.check`` --
the only error ``plan`` catches, to list the layout as infeasible with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cost
from ..hardware import GPUSpec, LinkSpec, default_dtype
from ..validate import check_bool, check_choice, check_float, check_int
from .stacks import DEFAULT_STACK, STACK_NAMES, STACKS

CP_KINDS = ("ring", "ulysses", "allgather")
DTYPES = tuple(cost.TRAINING_DTYPES)  # bf16, fp16, fp8, mxfp8, nvfp4 (cost.precision)
EP_DISPATCH = ("alltoall", "dedup")


class LayoutError(ValueError):
    """A well-formed layout that cannot run this model on these GPUs (``Layout.check``):
    the message names the constraint and the values. A ValueError, so that callers of
    ``predict`` and ``estimate`` see it as bad input; ``plan`` catches only this kind, so
    that a bad argument of its own is raised, never filed as an infeasible layout."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    n_layers: int
    seq_len: int
    vocab_size: int
    shape: cost.LayerShape
    tied_embeddings: bool = True    # GPT shares the input and output tables; Llama does not
    learned_positions: bool = True  # GPT's position table (0 with RoPE)
    source: str = "given shape"

    def __post_init__(self):
        for f in ("name", "source"):
            if not isinstance(getattr(self, f), str):
                raise ValueError(f"{f}={getattr(self, f)!r} must be a string")
        for f in ("n_layers", "seq_len", "vocab_size"):
            check_int(f, getattr(self, f))
        # d_model % n_heads (unless head_dim is given) and n_heads % n_kv_heads are the
        # LayerShape's own checks, made when it was built
        if not isinstance(self.shape, cost.LayerShape):
            raise ValueError(f"shape={self.shape!r} must be a cost.LayerShape")
        check_bool("tied_embeddings", self.tied_embeddings)
        check_bool("learned_positions", self.learned_positions)

    def __getitem__(self, key):  # the dict the planner used to return: model["n_layers"]
        if key not in ("name", "n_layers", "seq_len", "vocab_size", "source", "d_model",
                       "n_heads"):
            raise KeyError(key)
        return getattr(self, key)

    @property
    def d_model(self) -> int:
        return self.shape.d_model

    @property
    def n_heads(self) -> int:
        return self.shape.n_heads

    def embedding_params(self) -> int:
        return cost.embedding_params(self.vocab_size, self.d_model,
                                     self.seq_len if self.learned_positions else 0,
                                     self.tied_embeddings)

    def flops_per_token(self, causal: bool = False) -> float:
        """Model FLOPs per token, Megatron-LM's count (``cost.flops_per_token``)."""
        return cost.flops_per_token(self.shape, self.n_layers, self.seq_len,
                                    vocab_size=self.vocab_size, count="megatron", causal=causal)


@dataclass(frozen=True)
class Cluster:
    """GPUs of one kind, ``gpus_per_node`` to a node with ``nics_per_node`` network cards
    of ``inter_link``, ``nvlink_domain`` GPUs on one NVLink fabric."""
    gpu: GPUSpec
    intra_link: LinkSpec
    inter_link: LinkSpec
    gpus_per_node: int
    nics_per_node: int
    nvlink_domain: int

    def __post_init__(self):
        if not isinstance(self.gpu, GPUSpec):
            raise ValueError(f"gpu={self.gpu!r} must be a hardware.GPUSpec (planner.resolve_gpu "
                             "makes one from a preset name)")
        for f in ("intra_link", "inter_link"):
            if not isinstance(getattr(self, f), LinkSpec):
                raise ValueError(f"{f}={getattr(self, f)!r} must be a hardware.LinkSpec")
        for f in ("gpus_per_node", "nics_per_node", "nvlink_domain"):
            check_int(f, getattr(self, f))
        if self.nvlink_domain % self.gpus_per_node and self.gpus_per_node % self.nvlink_domain:
            raise ValueError(f"nvlink_domain={self.nvlink_domain} must be a multiple or a "
                             f"divisor of gpus_per_node={self.gpus_per_node}")
        object.__setattr__(self, "_memo", {})  # plan() asks for the same collectives often

    @property
    def nics_per_gpu(self) -> float:
        return self.nics_per_node / self.gpus_per_node

    def link(self, which: str) -> tuple[float, float]:
        """(achieved bytes/s per direction, alpha in s) of "intra" (NVLink) or "inter" (a card)."""
        spec = self.intra_link if which == "intra" else self.inter_link
        return spec.gb_per_s_per_direction * 1e9 * spec.achieved, spec.latency_us * 1e-6

    def hops(self) -> tuple:
        """((bytes/s, hop s) inside a node, (bytes/s, hop s) between nodes) for rings: the
        links' bandwidths; between nodes NCCL's own network hop latency (``cost.NCCL_HOP_US``,
        ring, Simple protocol: 9.6 us) or the card's if slower. A ring inside one node keeps
        the link's preset latency (1 us) per step: NCCL's NVLink hop (3.4 us) would add 42
        us to each TP all-reduce of 8 ranks and move Narayanan's Table 1 39B row from -4.8%
        to -5.3%, out of the 5% the in-sample rows are held to (docs/measurements.md,
        2026-12-04); a ring across nodes takes NCCL's hop for its intra-node steps
        (``cost.group_collective_time``)."""
        (ib, ia), (nb, na) = self.link("intra"), self.link("inter")
        return (ib, ia), (nb, max(na, cost.NCCL_HOP_US["ring"]["net"] * 1e-6))

    def dispatch(self, tokens: float, shape: cost.LayerShape, ep: int, dedup: bool) -> float:
        """Seconds of one MoE dispatch of ``tokens`` per GPU over ep consecutive GPUs."""
        key = ("dispatch", tokens, shape, ep, dedup)
        if key not in self._memo:
            (ib, ia), (nb, na) = self.link("intra"), self.link("inter")
            self._memo[key] = cost.moe_dispatch_time(
                tokens, shape.d_model, shape.n_experts, shape.top_k, ep, self.nvlink_domain,
                ib, ia, nb, na, self.nics_per_gpu, dedup)
        return self._memo[key]

    def collective(self, op: str, nbytes: float, size: int, stride: int) -> float:
        """Seconds of ``op`` on a group of ``size`` GPUs ``stride`` apart (cost.network)."""
        key = (op, nbytes, size, stride)
        if key not in self._memo:
            (ib, ia), (nb, na) = self.hops()
            self._memo[key] = cost.group_collective_time(op, nbytes, size, stride,
                                                         self.nvlink_domain, ib, ia, nb, na,
                                                         self.nics_per_gpu)
        return self._memo[key]

    def crosses(self, size: int, stride: int) -> bool:
        return cost.members_per_domain(size, stride, self.nvlink_domain) < size


def split_error(n_layers: int, pp: int, v: int, uneven_stages: bool,
                ends_as_layers: bool) -> str | None:
    """Why ``n_layers`` cannot be split over pp x v model chunks, or None. Even stages: pp x v
    divides the layers; ``ends_as_layers``: it divides the layers and the two ends (the
    embedding and the loss a layer each), as Megatron-Core asserts; ``uneven_stages``: any
    split, as long as each chunk holds a layer, the embedding or the loss."""
    L = n_layers
    what = f"pp={pp}" if v == 1 else f"pp*v={pp * v}"
    if ends_as_layers and pp > 1:
        if (L + 2) % (pp * v):
            return (f"{what} must divide n_layers + 2 = {L + 2} with ends_as_layers=True (the "
                    "embedding and the loss a layer each, every model chunk alike)")
    elif L % (pp * v) and not uneven_stages:
        return (f"{what} must divide n_layers={L} (equal stages; uneven_stages=True times the "
                "slowest one)")
    if pp * v > L + 2:
        return (f"pp*v={pp * v} must be <= n_layers + 2 = {L + 2} (each of the pp x v model "
                "chunks holds a layer, the embedding or the loss)")
    return None


@dataclass(frozen=True)
class Layout:
    """How one step runs: the degrees (dp is what the others leave of n_gpus), micro-batch
    and interleaving, memory savers, overlaps, and the numerics."""
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    v: int = 1                      # model chunks per pipeline rank (interleaved 1F1B)
    micro_batch: int = 1
    zero_stage: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False  # with tp = 1 there is nothing to shard: no effect
    cp_kind: str = "ring"
    # "fused": a FlashAttention-style kernel, no s x s scores kept, in time and in memory;
    # cost.memory_plan (notebook 01's calculator) counts them ("materialized")
    attention: str = "fused"
    # the cross-entropy's implementation (cost.LOSS_KERNELS): "triton" one fused kernel each
    # way (Transformer Engine's, flash-attn's, torch.compile's), "megatron-jit" Megatron-Core's
    # native fusion, "megatron" its op-by-op fp32 default before --cross-entropy-loss-fusion,
    # "torch" eager F.cross_entropy on fp32 logits; None: the stack's own (``loss``)
    loss_kernel: str | None = None
    dtype: str | None = None        # None: the GPU's 16-bit type (bf16, or fp16 on V100/T4)
    stack: str = DEFAULT_STACK      # the software stack's efficiencies (stacks.STACKS)
    tp_comm_overlap: bool = False   # TP collectives overlapped with their GEMMs (TE userbuffers)
    dp_overlap: bool = True         # gradient reduce / parameter gather behind backward / forward
    uneven_stages: bool = False     # allow pp x v not dividing the layers (slowest stage timed)
    # the pipeline split counts the embedding and the loss as a layer each, so the first and
    # the last rank build one layer fewer (Megatron-Core's account_for_embedding_in_pipeline_
    # split and account_for_loss_in_pipeline_split; Llama 3 405B, Dubey et al. 2024 §3.3.2)
    ends_as_layers: bool = False
    capacity_factor: float | None = None  # MoE: experts computed on capacity-padded buffers
    ep_dispatch: str = "alltoall"   # "dedup": a token goes to a node, and a rank, once (DeepEP)
    # ZeRO-3 only (cost.fsdp): "fsdp2" -- one flat gather per block, the next prefetched,
    # the reduce-scatter beside the backward; "deepspeed2021" -- DeepSpeed's ZeRO-3 of
    # Narayanan et al. 2021: a gather per weight matrix, waited for, the reduce-scatter too
    fsdp_impl: str = "fsdp2"
    # ZeRO-3 with several micro-batches: keep the gathered parameters and unsharded gradients
    # across them (gather and reduce once per step, the stage whole in memory) or reshard
    # after each; None: keep with a pipeline (torchtitan's default), reshard without
    fsdp_keep_unsharded: bool | None = None
    # activation offloading (Megatron-Core's cpu_offloading_num_layers): the first k layers'
    # saved activations wait in host memory between their forward and backward, copied over
    # the GPU's host link behind the other layers' compute; pp = 1 and no recomputation only
    offload_layers: int = 0

    def __post_init__(self):
        for f in ("tp", "pp", "cp", "ep", "v", "micro_batch"):
            check_int(f, getattr(self, f))
        check_int("offload_layers", self.offload_layers, 0)
        check_choice("zero_stage", self.zero_stage, cost.ZERO_STAGES)
        check_choice("recompute", self.recompute, cost.RECOMPUTE_KINDS)
        check_choice("cp_kind", self.cp_kind, CP_KINDS)
        check_choice("attention", self.attention, cost.ATTENTION)
        if self.loss_kernel is not None:
            check_choice("loss_kernel", self.loss_kernel, tuple(cost.LOSS_KERNELS))
        check_choice("ep_dispatch", self.ep_dispatch, EP_DISPATCH)
        check_choice("fsdp_impl", self.fsdp_impl, cost.FSDP_IMPLS)
        if self.fsdp_keep_unsharded is not None:
            check_bool("fsdp_keep_unsharded", self.fsdp_keep_unsharded)
        if self.dtype is not None:
            check_choice("dtype", self.dtype, DTYPES)
        check_choice("stack", self.stack, STACK_NAMES)
        for f in ("sequence_parallel", "tp_comm_overlap", "dp_overlap", "uneven_stages",
                  "ends_as_layers"):
            check_bool(f, getattr(self, f))
        if self.capacity_factor is not None:
            check_float("capacity_factor", self.capacity_factor, 0.0)

    @property
    def loss(self) -> str:
        """The loss's implementation: ``loss_kernel``, or (None) the stack's (``Stack.loss_kernel``:
        eager PyTorch's on "pytorch-eager", one fused kernel on the others)."""
        return STACKS[self.stack].loss_kernel if self.loss_kernel is None else self.loss_kernel

    @property
    def keeps_unsharded(self) -> bool:
        """ZeRO-3 across micro-batches: ``fsdp_keep_unsharded``, or (None) with a pipeline."""
        return self.pp > 1 if self.fsdp_keep_unsharded is None else self.fsdp_keep_unsharded

    def dtype_on(self, gpu: GPUSpec) -> str:
        """The numerics on ``gpu``; a dtype it has no peak for is a ValueError."""
        d = default_dtype(gpu) if self.dtype is None else self.dtype
        if d not in gpu.peak_tflops:
            has = sorted(k for k in gpu.peak_tflops if k in DTYPES)
            if d in gpu.unknown_peaks:
                raise ValueError(f"dtype={d!r}: {gpu.name} runs {d}, but its preset has no {d} "
                                 f"peak ({gpu.unknown_peaks[d]}); it has {has}")
            raise ValueError(f"dtype={d!r}: {gpu.name} has no {d} tensor cores; it has {has}")
        return d

    def check(self, model: ModelSpec, n_gpus: int, global_batch: int) -> int:
        """dp, once the layout fits the model and the cluster; else a ``LayoutError``
        naming the constraint and the values (a ValueError naming the argument if
        ``model``, ``n_gpus`` or ``global_batch`` is itself malformed)."""
        if not isinstance(model, ModelSpec):
            raise ValueError(f"model={model!r} must be a planner.ModelSpec")
        n_gpus = check_int("n_gpus", n_gpus)
        global_batch = check_int("global_batch", global_batch)
        s = model.shape
        L = model.n_layers
        tp = self.tp
        pp = self.pp
        cp = self.cp
        ep = self.ep
        v = self.v
        if s.n_heads % tp:
            raise LayoutError(f"tp={tp} must divide n_heads={s.n_heads} (each rank holds "
                              "whole heads)")
        if s.n_kv_heads % tp and tp % s.n_kv_heads:
            raise LayoutError(f"tp={tp} must divide n_kv_heads={s.n_kv_heads} or be a "
                              "multiple of it")
        if model.seq_len % (2 * cp if cp > 1 else 1):
            raise LayoutError(f"cp={cp}: 2 x cp must divide seq_len={model.seq_len} "
                              "(zig-zag chunks, two per rank)")
        if cp > 1 and self.cp_kind == "ulysses" and (s.n_heads // tp) % cp:
            raise LayoutError(f"cp={cp} must divide n_heads/tp = {s.n_heads // tp} (Ulysses "
                              "gives each rank whole heads)")
        if ep > 1 and not s.moe:
            raise LayoutError(f"ep={ep}: expert parallelism needs a mixture-of-experts model "
                              "(n_experts > 0); this one is dense")
        if self.capacity_factor is not None and not s.moe:
            raise LayoutError(f"capacity_factor={self.capacity_factor}: only a mixture-of-"
                              "experts model pads expert buffers; this one is dense")
        if s.moe and s.n_experts % ep:
            raise LayoutError(f"ep={ep} must divide n_experts={s.n_experts}")
        if n_gpus % (tp * pp * cp):
            raise LayoutError(f"n_gpus={n_gpus} must be divisible by tp*pp*cp = "
                              f"{tp * pp * cp} (tp={tp}, pp={pp}, cp={cp})")
        dp = n_gpus // (tp * pp * cp)
        if (tp * cp * dp) % ep:
            raise LayoutError(f"ep={ep} must divide tp*cp*dp = {tp * cp * dp} (expert "
                              "parallelism folds over the data-, context- and tensor-"
                              "parallel ranks)")
        if pp > L:
            raise LayoutError(f"pp={pp} must be <= n_layers={L} (a stage needs a layer)")
        if v > 1 and pp == 1:
            raise LayoutError(f"v={v}: interleaving needs pp > 1")
        why = split_error(L, pp, v, self.uneven_stages, self.ends_as_layers)
        if why:
            raise LayoutError(why)
        if pp > 1 and self.zero_stage == 2:
            raise LayoutError(f"zero_stage={self.zero_stage} with pp={pp}: ZeRO-2 shards the "
                              "gradients every micro-batch of a pipeline adds to; use "
                              "zero_stage 1, or 3 (FSDP with a pipeline, as torchtitan runs "
                              "it: parameters and gradients kept whole across the "
                              "micro-batches, fsdp_keep_unsharded)")
        if pp > 1 and self.zero_stage == 3 and self.fsdp_impl == "deepspeed2021":
            raise LayoutError(f"fsdp_impl='deepspeed2021' with pp={pp}: DeepSpeed's pipeline "
                              "engine runs ZeRO-1 only; FSDP with a pipeline is fsdp_impl="
                              "'fsdp2'")
        k = self.offload_layers
        unmet = [why for bad, why in ((pp > 1, f"pp=1 (got {pp})"),
                                      (self.recompute != "none",
                                       f"recompute='none' (got {self.recompute!r})"),
                                      (k >= L, f"fewer layers than n_layers={L}")) if bad]
        if k and unmet:  # (its later per-module offloading beside a pipeline is not modelled)
            raise LayoutError(f"offload_layers={k} needs {' and '.join(unmet)}, as "
                              "Megatron-Core's whole-layer activation offloading does")
        if global_batch % dp:
            raise LayoutError(f"global_batch={global_batch} must be divisible by dp={dp}")
        per = global_batch // dp
        if per % self.micro_batch:
            raise LayoutError(f"micro_batch={self.micro_batch} must divide global_batch/dp = "
                              f"{global_batch}/{dp}")
        if v > 1 and (per // self.micro_batch) % pp:
            raise LayoutError(f"v={v}: interleaving needs m = global_batch/(dp*micro_batch) "
                              f"= {per // self.micro_batch} to be a multiple of pp={pp}")
        return dp

"""Notebook 05's experiments: pure functions over ``context_parallel.run``, rank-side probes
of one attention call and ``parlab.cost``, returning plain data for ``figures``/``widgets``.
Counted on real ranks, next to their formulas: attention work per rank (traced blocks) vs
``cost.causal_work_per_rank``, bytes per layer vs ``cost.cp_comm_per_layer``, one call's
allocations (``LiveBytes``) vs ``cost.attention_memory_per_rank``. Timings only illustrate.
The notebook's exercises and their checkers are in ``lessons.l05_context_parallel.exercises``."""

from __future__ import annotations

import dataclasses
import statistics
import time
import weakref

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from parlab import cost, hardware, trace
from parlab.launch import launch
from parlab.model import GPTConfig, causal_attention
from parlab.context_parallel.apply import ATTENTIONS
from parlab.context_parallel.layout import LAYOUTS, rank_chunks, shard_sequence
from parlab.context_parallel.ring import ring_attention
from parlab.context_parallel.runner import LAYER, CPRun, run
from parlab.context_parallel.ulysses import ulysses_attention
from parlab.validate import check_choice

SMALL = GPTConfig(vocab_size=64, seq_len=32, d_model=64, n_heads=4, n_layers=2)
BATCH = 4
FP32 = 4  # bytes per value: our ranks compute in fp32
PROBE = dict(micro_batch=1, n_heads=4, head_dim=16)  # one attention call, no model around it
# Long context at GPU scale: LLaMA-2-7B's width (Touvron et al. 2023, Table 1) at 128k tokens
LONG = dict(seq_len=131072, d_model=4096, n_heads=32, head_dim=128, micro_batch=1, n_layers=32)
# its layer, for the activation count: no dropout, a SwiGLU MLP of width 11008 (Llama 2,
# Touvron et al. 2023), not the GPT layer Korthikanti et al.'s 34 + 5as/h describes
LONG_LAYER = cost.LayerShape(LONG["d_model"], LONG["n_heads"], head_dim=LONG["head_dim"],
                             d_ff=11008, mlp="swiglu", biases=False, dropout=False, rope=True)


# --- 1. who holds what ------------------------------------------------------------------

def work_grid(cp: int = 4, layout: str = "zigzag") -> list[list]:
    """The causal attention matrix in 2cp x 2cp chunks of s/(2cp) (query chunk i, key chunk
    j): the rank that computes the cell (the queries' owner), None above the diagonal."""
    check_choice("layout", layout, LAYOUTS)
    owner = {c: r for r in range(cp) for c in ([2 * r, 2 * r + 1] if layout == "contiguous"
                                               else rank_chunks(cp, r, layout))}
    return [[None if j > i else owner[i] for j in range(2 * cp)] for i in range(2 * cp)]


# --- 2. runs: correct first ------------------------------------------------------------------

def _run(cp, attention="ring", layout="zigzag", config=SMALL, batch_size=BATCH, **kw):
    return run(CPRun(config=config, batch_size=batch_size, layout=layout,
                     attention=attention, **kw), cp)


CASES = tuple((cp, a, lay) for cp in (2, 4) for a, lay in
              (("ring", "contiguous"), ("ring", "zigzag"), ("ulysses", "zigzag")))


def sweep(cases=CASES, config: GPTConfig = SMALL, steps: int = 3, batch_size: int = BATCH) -> dict:
    """{(cp, attention, layout): RunResult} for each case, every one traced."""
    return {c: _run(*c, config=config, batch_size=batch_size, steps=steps, trace=True)
            for c in cases}


# --- 3. balance: causal work per rank, counted vs formula ------------------------------

def balance_rows(results: dict, config: GPTConfig = SMALL) -> list[dict]:
    """Per ring run: each rank's forward attention scores (counted in its traced blocks) in
    blocks of (s/cp)^2 scores per head, next to ``cost.causal_work_per_rank``."""
    rows = []
    for (cp, attention, layout), r in results.items():
        if attention != "ring":
            continue
        block = config.n_heads * (config.seq_len // cp) ** 2
        counted = [x["attention_work"]["forward"] / block for x in r.ranks]
        f = cost.causal_work_per_rank(cp, layout)
        rows.append(dict(cp=cp, layout=layout, counted=counted, formula=f["blocks"],
                         imbalance=max(counted) / statistics.mean(counted),
                         predicted=f["imbalance"], match=counted == f["blocks"]))
    return rows


def timing_worker(seq_len: int, layouts, repeats: int, n_heads: int = 4, head_dim: int = 16,
                  group=None) -> dict:
    """Rank worker: ``repeats`` rounds of one causal ring-attention call (forward + backward)
    per layout, interleaved, after one uncounted warm-up round; per layout the least CPU
    seconds of the call over the rounds (``thread_time``: waiting for a core or a message is
    not counted, and what noise is left -- caches refilled after a switch of core -- only
    adds, so the least round is the call's own work), its median wall seconds, and the last
    forward's traced events."""
    torch.set_num_threads(1)
    rank, cp = dist.get_rank(group), dist.get_world_size(group)
    out, last = {lay: {"compute": [], "call": []} for lay in layouts}, {}
    for round_ in range(repeats + 1):
        for lay in layouts:
            q, k, v = _shards(seq_len, 1, n_heads, head_dim, cp, rank, lay)
            dist.barrier(group)
            trace.start()
            t0, c0 = trace.now(), time.thread_time()
            ring_attention(q, k, v, True, group, lay).sum().backward()
            c1, t1, events = time.thread_time(), trace.now(), trace.stop()
            if round_ == 0:  # a warm-up round, not counted: first calls allocate and fill caches
                continue
            out[lay]["compute"].append(c1 - c0)
            out[lay]["call"].append(t1 - t0)
            last[lay] = [dict(e, rank=rank) for e in events if e["meta"].get("direction") == "forward"]
    return {lay: dict(compute=min(d["compute"]), call=statistics.median(d["call"]),
                      events=last[lay]) for lay, d in out.items()}


def balance_timing(cp: int = 4, seq_len: int = 512, repeats: int = 3) -> list[dict]:
    """Per layout: seconds each rank computed blocks in one causal ring-attention call
    (its least CPU time of the rounds), their max/mean, the call's time (slowest rank's
    median), this machine's load."""
    layouts = ("contiguous", "zigzag")
    ranks = launch(timing_worker, cp, seq_len, layouts, repeats, backend="gloo")
    return [dict(cp=cp, layout=lay, seq_len=seq_len, compute_s=[r[lay]["compute"] for r in ranks],
                 imbalance=max(r[lay]["compute"] for r in ranks)
                 / statistics.mean(r[lay]["compute"] for r in ranks),
                 predicted=cost.causal_work_per_rank(cp, lay)["imbalance"],
                 call_s=max(r[lay]["call"] for r in ranks), load=hardware.load(),
                 events=[e for r in ranks for e in r[lay]["events"]]) for lay in layouts]


# --- 4. the ring on a timeline -------------------------------------------------------------

def ring_events(result, direction: str = "forward", step: int = 1, layer: str = LAYER) -> list[dict]:
    """Every rank's traced computations and transfers of one attention call (``layer``,
    ``direction``, training ``step``): ring blocks and K/V hops, or Ulysses' all-to-alls."""
    out = []
    for rank in sorted({e["rank"] for e in result.events}):
        mine = [e for e in result.events if e["rank"] == rank]
        window = [e for e in mine if e["name"] == direction and e["meta"].get("step") == step]
        out += [e for e in mine if window and e["meta"].get("layer") == layer
                and e["meta"].get("direction") == direction
                and window[0]["start"] <= e["start"] <= window[0]["end"]]
    return out


def overlap_rows(events: list[dict]) -> list[dict]:
    """Per rank and ring step of a forward call: was the transfer of the next block posted
    before this block's computation began, and completed only after it ended (the order,
    which the algorithm fixes), and how long each took (which this machine decides)."""
    blocks = {(b["rank"], b["meta"]["ring_step"]): b for b in events if b["name"] == "ring block"}
    return [dict(rank=e["rank"], step=e["meta"]["ring_step"], posted_before=e["start"] <= b["start"],
                 waited_after=e["end"] >= b["end"], transfer_s=e["end"] - e["start"],
                 compute_s=b["end"] - b["start"])
            for e in events if e["name"] == "ring kv"
            for b in [blocks.get((e["rank"], e["meta"]["ring_step"]))] if b]


# --- 5. bytes per rank per layer: ring, Ulysses, Megatron SP ------------------------------

def bytes_rows(results: dict, config: GPTConfig = SMALL, batch_size: int = BATCH,
               megatron: dict | None = None) -> list[dict]:
    """Bytes rank 0 sent for one layer in one training step, counted in its trace, beside
    ``cost.cp_comm_per_layer`` (fp32). ``megatron``: {t: ``tensor_parallel`` comm_table row}."""
    c, rows = config, []
    for (cp, attention, layout), r in results.items():
        if layout != "zigzag":
            continue
        got = r.ranks[0]["layer_comm"]
        f = cost.cp_comm_per_layer(batch_size, c.seq_len, c.d_model, cp, attention, FP32, c.n_heads)
        rows.append(dict(cp=cp, method=attention, counted=got["bytes"], formula=f["bytes"],
                         messages=got["forward"]["messages"] + got["backward"]["messages"],
                         formula_messages=f["messages"], match=got["bytes"] == f["bytes"]))
    for t, m in sorted((megatron or {}).items()):
        f = cost.cp_comm_per_layer(batch_size, c.seq_len, c.d_model, t, "megatron_sp", FP32)
        rows.append(dict(cp=t, method="megatron_sp", counted=m["measured"]["bytes"],
                         formula=f["bytes"], messages=m["measured"]["collectives"],
                         formula_messages=f["messages"],
                         match=m["measured"]["bytes"] == f["bytes"]))
    return sorted(rows, key=lambda r: (r["cp"], r["method"]))


def bytes_curve(s: dict = LONG, cps=(1, 2, 4, 8, 16, 32, 64), bytes_per_value: float = 2) -> dict:
    """{method: [(cp, bytes one rank sends per layer per step)]} at shape ``s``; Ulysses and
    Megatron SP stop at cp = n_heads (a rank holds whole heads)."""
    return {m: [(n, cost.cp_comm_per_layer(s["micro_batch"], s["seq_len"], s["d_model"], n, m,
                                           bytes_per_value, s["n_heads"])["bytes"])
                for n in cps if m == "ring" or s["n_heads"] % n == 0] for m in cost.CP_METHODS}


# --- 6. memory of one attention call ---------------------------------------------------------

class LiveBytes(TorchDispatchMode):
    """Bytes of the storages operations allocate inside the ``with`` block (an output whose
    storage is none of the op's inputs'), released when the storage dies. ``peak``: most
    alive at once; ``largest``: the biggest one; ``live``: alive now (output, saved tensors)."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = self.largest = 0
        self._alive: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs))
                  if isinstance(t, torch.Tensor)}
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                ptr, n = st.data_ptr(), st.nbytes()
                if n and ptr not in inputs and ptr not in self._alive:
                    self._alive.add(ptr)
                    self.live += n
                    self.peak, self.largest = max(self.peak, self.live), max(self.largest, n)
                    weakref.finalize(st, self._free, ptr, n)
        return out

    def _free(self, ptr, n):
        self._alive.discard(ptr)
        self.live -= n


def _shards(seq_len, batch, n_heads, head_dim, cp, rank, layout, full=False):
    g = torch.Generator().manual_seed(0)
    qkv = [torch.randn(batch, n_heads, seq_len, head_dim, generator=g) for _ in range(3)]
    shards = [shard_sequence(t, 2, cp, rank, layout).clone().requires_grad_() for t in qkv]
    return (shards, qkv) if full else shards


def memory_worker(seq_lens, methods, layout: str = "zigzag", micro_batch: int = 1,
                  n_heads: int = 4, head_dim: int = 16, group=None) -> list[dict]:
    """Rank worker: one causal attention forward per (seq_len, method) on this rank's shards
    under ``LiveBytes``; ``error``: largest |difference| from full attention on one device."""
    torch.set_num_threads(1)
    rank, cp = dist.get_rank(group), dist.get_world_size(group)
    rows = []
    for s in seq_lens:
        for method in methods:
            if method == "ulysses" and n_heads % cp:
                continue
            (q, k, v), full = _shards(s, micro_batch, n_heads, head_dim, cp, rank, layout, True)
            core = ring_attention if method == "ring" else ulysses_attention
            with LiveBytes() as probe:
                out = core(q, k, v, True, group, layout)
                kept = probe.live
            want = shard_sequence(causal_attention(*full), 2, cp, rank, layout)
            rows.append(dict(rank=rank, cp=cp, seq_len=s, method=method, peak=probe.peak,
                             largest=probe.largest, kept=kept,
                             error=(out.detach() - want).abs().max().item()))
    return rows


def memory_rows(seq_lens=(128, 256, 512), cps=(1, 2, 4), methods=("ring", "ulysses"),
                layout: str = "zigzag", probe: dict = PROBE) -> list[dict]:
    """Peak bytes of one causal attention call per rank (largest over ranks) per (cp, seq_len,
    method), beside ``cost.attention_memory_per_rank`` (fp32) and its score term."""
    check_choice("layout", layout, LAYOUTS)  # before any rank starts
    for m in methods:
        check_choice("methods", m, ATTENTIONS)
    p, rows = probe, []
    for cp in cps:
        ranks = launch(memory_worker, cp, list(seq_lens), list(methods), layout,
                       p["micro_batch"], p["n_heads"], p["head_dim"], backend="gloo")
        for s in seq_lens:
            for m in methods:
                mine = [x for r in ranks for x in r if x["seq_len"] == s and x["method"] == m]
                if not mine:
                    continue
                args = (s, p["micro_batch"], p["n_heads"], p["head_dim"], cp, m, FP32)
                f = cost.attention_memory_per_rank(*args)
                rows.append(dict(cp=cp, seq_len=s, method=m, peak=max(x["peak"] for x in mine),
                                 largest=max(x["largest"] for x in mine),
                                 kept=max(x["kept"] for x in mine), formula=f,
                                 scores=f - cost.attention_memory_per_rank(*args, flash=True),
                                 error=max(x["error"] for x in mine)))
    return rows


# --- 7. when each wins ------------------------------------------------------------------------

def ring_hiding(gpu: str = "A100-SXM4-80GB", link: str = "NVLink3", d_model: int = 4096,
                blocks=tuple(2 ** k for k in range(6, 15)), efficiency: float = 0.5) -> list[dict]:
    """Per block size c (positions per rank): one ring hop's forward compute (c tokens x
    ``cost.flops_per_token``'s attention term at ``efficiency`` x bf16 peak) beside the next
    K/V block's transfer (``cost.p2p_time``) over ``link``: hidden while compute >= transfer."""
    check_choice("gpu", gpu, tuple(hardware.GPU_PRESETS))
    check_choice("link", link, tuple(hardware.LINK_PRESETS))
    peak, ln = hardware.peak_flops(gpu, "bf16") * efficiency, hardware.LINK_PRESETS[link]
    rows = []
    for c in blocks:
        t_c = c * cost.flops_per_token(0, 1, c, d_model, training=False) / peak
        msg = cost.cp_comm_per_layer(1, 2 * c, d_model, 2)["message_bytes"]
        t_x = cost.p2p_time(msg, ln.latency_us * 1e-6, ln.gb_per_s_per_direction * 1e9)
        rows.append(dict(block=c, compute_s=t_c, transfer_s=t_x, hidden=t_c >= t_x))
    return rows


def hiding_block(link: str = "NVLink3", gpu: str = "A100-SXM4-80GB", **kw) -> int:
    """The first block size of ``ring_hiding``'s grid from which a hop hides over ``link``."""
    return next(r["block"] for r in ring_hiding(gpu, link, **kw) if r["hidden"])


# --- 8. live: what the widget shows -------------------------------------------------------

# Liu et al. 2023, "Ring attention with blockwise transformers", Table 2 (rows for GPUs):
# per-host FLOPS (TF), one-way bandwidth between hosts (GB/s), printed minimal block size
# c = FLOPS / bandwidth and minimal sequence per device s = 6c, both x 1e3
LIU_TABLE2 = {"A100 NVLink": (312, 300, 1.0, 6.2), "A100 InfiniBand": (312, 12.5, 24.5, 149.5)}


def liu_table2_rows(efficiency: float = 0.5) -> list[dict]:
    """Liu et al.'s Table 2 beside the same condition computed here: a block hides its
    transfer when compute >= transfer, i.e. c >= rate / bandwidth (``ring_hiding``'s
    condition with 4 b c^2 h FLOPs against 4 b c h bytes). At the paper's full peak it is
    their c; at ``efficiency`` x peak (§5's assumption) the block shrinks by that factor."""
    rows = []
    for name, (tf, gbs, c_paper, s_paper) in LIU_TABLE2.items():
        c = tf * 1e12 / (gbs * 1e9)
        rows.append({"host": name, "TF": tf, "GB/s one way": gbs, "c, paper (k)": c_paper,
                     "c = F/B (k)": c / 1e3, "s = 6c, paper (k)": s_paper, "s = 6c (k)": 6 * c / 1e3,
                     f"c at {efficiency:.0%} of peak (k)": efficiency * c / 1e3})
    return rows


def block_ratios(slow: str = "IB-HDR", fast: str = "NVLink3") -> dict:
    """How many times larger the block that hides a hop is over InfiniBand than over NVLink.
    ``liu``: Liu et al.'s Table 2 (their c = F/B at 12.5 against 300 GB/s); ``lab``: the same
    condition over the lab's links (c >= rate / bandwidth, so the bandwidth ratio: the rate
    cancels); ``grid``: the first hidden block of §5's power-of-two grid (``hiding_block``)."""
    check_choice("slow", slow, tuple(hardware.LINK_PRESETS))
    check_choice("fast", fast, tuple(hardware.LINK_PRESETS))
    ib, nv = LIU_TABLE2["A100 InfiniBand"], LIU_TABLE2["A100 NVLink"]
    links = hardware.LINK_PRESETS
    return dict(liu=(ib[0] / ib[1]) / (nv[0] / nv[1]),
                lab=links[fast].gb_per_s_per_direction / links[slow].gb_per_s_per_direction,
                grid=hiding_block(slow) / hiding_block(fast))


def predict(seq_len: int = 32, cp: int = 2, layout: str = "zigzag", attention: str = "ring") -> dict:
    """The formulas at once for the lab's GPT (``SMALL`` at ``seq_len``, batch 4, fp32): bytes
    one rank sends per layer and step (Megatron SP's at t = cp beside), one attention call's
    memory per rank, the causal work per rank in blocks of (s/cp)^2 scores per head."""
    c = dataclasses.replace(SMALL, seq_len=seq_len)
    try:
        CPRun(config=c, attention=attention, layout=layout).check(cp)
    except ValueError as e:
        return dict(error=str(e))
    sent = {m: cost.cp_comm_per_layer(BATCH, seq_len, c.d_model, cp, m, FP32, c.n_heads)["bytes"]
            for m in (attention, "megatron_sp")}
    work = cost.causal_work_per_rank(cp, layout)["blocks"] if attention == "ring" else [cp] * cp
    return dict(seq_len=seq_len, cp=cp, layout=layout, attention=attention, bytes=sent[attention],
                megatron_bytes=sent["megatron_sp"], work=work,
                imbalance=max(work) / statistics.mean(work),
                memory=cost.attention_memory_per_rank(seq_len, BATCH, c.n_heads, c.head_dim, cp,
                                                      attention, FP32))


def live(seq_len: int = 32, cp: int = 2, layout: str = "zigzag", attention: str = "ring",
         steps: int = 2) -> dict:
    """``predict`` beside a real run on cp ranks: one forward attention call's events (for a
    timeline), bytes rank 0 sent for one layer, each rank's counted work, one call's peak
    memory (``memory_rows`` at the same shape), the median step; or ``error``."""
    pred = predict(seq_len, cp, layout, attention)
    if "error" in pred:
        return pred
    c = dataclasses.replace(SMALL, seq_len=seq_len)
    r = _run(cp, attention, layout, c, steps=steps, trace=True)
    mem = memory_rows((seq_len,), (cp,), (attention,), layout,
                      dict(micro_batch=BATCH, n_heads=c.n_heads, head_dim=c.head_dim))[0]
    block = c.n_heads * (seq_len // cp) ** 2
    return dict(pred, events=ring_events(r, step=steps - 1), load=hardware.timing_note()[1],
                counted_bytes=r.ranks[0]["layer_comm"]["bytes"], counted_memory=mem["peak"],
                counted_work=[x["attention_work"]["forward"] / block for x in r.ranks],
                largest=mem["largest"], step_s=statistics.median(r.step_times[1:]))


# --- 9. PyTorch's context parallelism (GPUs only) ----------------------------------------------

def torch_cp_worker(seq_len: int, n_heads: int = 8, head_dim: int = 64, batch: int = 2,
                    group=None) -> dict:
    """Rank worker (one GPU per rank, NCCL): causal SDPA under PyTorch's ``context_parallel``
    (its ring, load-balanced shards) gathered back, against SDPA on the whole sequence."""
    import torch.nn.functional as F
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor.experimental._attention import (context_parallel,
                                                                  context_parallel_unshard)
    dev, g = torch.device("cuda", torch.cuda.current_device()), torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(batch, n_heads, seq_len, head_dim, generator=g).to(dev, torch.bfloat16)
               for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    mesh = DeviceMesh.from_group(group or dist.group.WORLD, "cuda")
    cq, ck, cv = (t.clone() for t in (q, k, v))
    with context_parallel(mesh, buffers=[cq, ck, cv], buffer_seq_dims=[2, 2, 2]):
        out = F.scaled_dot_product_attention(cq, ck, cv, is_causal=True)
    (full,) = context_parallel_unshard(mesh, [out], [2])
    return dict(local=out.size(2), error=(full.float() - want.float()).abs().max().item())


def peer_check(seq_len: int = 8192) -> dict:
    """PyTorch's ``context_parallel`` on 2 or 4 GPUs vs one GPU, or why it was skipped."""
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        return dict(skipped=f"{n} CUDA GPU(s) here: PyTorch's context_parallel runs its ring on CUDA "
                    "attention kernels (flash / efficient / cuDNN SDPA), one GPU per rank: needs 2+")
    cp = 4 if n >= 4 else 2
    ranks = launch(torch_cp_worker, cp, seq_len, backend="nccl")
    return dict(cp=cp, seq_len=seq_len, local=ranks[0]["local"],
                error=max(r["error"] for r in ranks), gpu=torch.cuda.get_device_name(0))

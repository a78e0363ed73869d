"""Notebook 04's experiments: pure functions over ``parlab.moe``, ``expert_parallel.run``
and ``parlab.cost`` (capacity: Switch eq. 3; all-to-all bytes: GShard's dispatch/combine;
total vs active parameters), returning plain data for ``figures`` and ``widgets``.
Timings only illustrate; every lesson rests on counts.

**Skew.** The core has no routing-skew knob, so this module makes one, two ways:
* ``train_routing(tilt=...)``: ``reference_train``'s loop (same model, data, AdamW) with
  expert 0's router row tilted at initialisation by ``tilt * mu/|mu|^2``, mu the mean MoE
  input of the first batch: expert 0's logit rises by ``tilt`` on average (most tokens
  agree with mu), a router that starts out favouring one expert. ``tilt=0`` is exactly
  ``reference_train`` (tested).
* on ranks, where the model is built inside ``expert_parallel.run``: the model seed.
  ``SEEDS["skewed"]`` routes half of step 0's tokens of block 0 to one expert,
  ``SEEDS["balanced"]`` spreads them within 1.2x of the mean (found by scanning seeds).
The notebook's exercises and their checkers: ``lessons.l04_expert_parallel.exercises``."""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from parlab import hardware
from parlab.cost import expert_parallel as cost
from parlab.data import get_batch
from parlab.model import ADAMW_BETAS, GPT, GPTConfig
from parlab.moe import positions_before, slot_positions
from parlab.expert_parallel.runner import EPRun, run

# The lab's small MoE GPT (4 experts, top-1, as Switch), no z-loss; balancing set per run.
SMALL = GPTConfig(vocab_size=64, seq_len=32, d_model=64, n_heads=4, n_layers=2, n_experts=4,
                  top_k=1, aux_loss_coef=0.0, z_loss_coef=0.0)
HEAVY = dict(d_ff=4096)   # experts 16x wider: expert compute dominates a step (timings)
BATCH, LR, FP32 = 8, 3e-3, 4
SEEDS = {"balanced": 26, "skewed": 0}
# How each run balances: none; Switch's aux loss (alpha = 1e-2, Switch §2.2); DeepSeek-V3's
# bias (gamma = 0.01 here: tens of steps, not their 14.3T tokens at 0.001).
BALANCERS = {"none": dict(aux_loss_coef=0.0),
             "aux loss": dict(aux_loss_coef=0.01),
             "bias": dict(aux_loss_coef=0.0, balancer="bias", bias_update_rate=0.01)}
# GPU-scale MoE models, from their papers / released configs (see the notebook).
MOE_MODELS = {
    "Mixtral 8x7B": dict(n_experts=8, top_k=2, shared=0, source="Jiang et al. 2024, §2, Table 1"),
    "Switch-C": dict(n_experts=2048, top_k=1, shared=0, source="Fedus et al. 2021, Table 9"),
    "DeepSeek-V3": dict(n_experts=256, top_k=8, shared=1, source="DeepSeek-AI 2024, config.json"),
}
# Mixtral 8x7B's shape (Jiang et al. 2024, Table 1), for cost.moe_params
MIXTRAL = dict(n_layers=32, d_model=4096, d_ff=14336, n_experts=8, top_k=2, n_heads=32,
               n_kv_heads=8, vocab_size=32000, gated=True)


def moe_config(**kw) -> GPTConfig:
    """``SMALL`` with fields replaced."""
    return GPTConfig(**{**_shape(SMALL), "aux_loss_coef": 0.0, "z_loss_coef": 0.0, **kw})


def _shape(config: GPTConfig) -> dict:
    return {k: getattr(config, k) for k in ("vocab_size", "seq_len", "d_model", "n_heads",
                                            "n_layers", "n_experts", "top_k", "d_ff")}


# --- 1. routing on plain tensors -----------------------------------------------------------

def kept_mask(choices: torch.Tensor, n_experts: int, capacity: int | None,
              ranks: int = 1) -> torch.Tensor:
    """(n, k) bool: which assignments fit, by ``parlab.moe``'s rule (first choices
    before second ones, then token order), tokens split into ``ranks`` equal slices."""
    if capacity is None:
        return torch.ones_like(choices, dtype=torch.bool)
    parts = choices.chunk(ranks)
    counts = torch.stack([torch.nn.functional.one_hot(p, n_experts).sum(0) for p in parts])
    return torch.cat([slot_positions(p, n_experts, positions_before(counts, r)) < capacity
                      for r, p in enumerate(parts)])


def simulate(tokens: int = 256, n_experts: int = 4, top_k: int = 1,
             capacity_factor: float | None = 1.25, skew: float = 0.0, ep: int = 2,
             d_model: int = 64, seed: int = 0) -> dict:
    """Instant routing of ``tokens`` tokens (split over ``ep`` ranks) whose experts are
    drawn with popularity ~ (e+1)^-skew (0: uniform), top-k distinct per token, capped
    by ``kept_mask``: assignments per expert, dropped share, rows each rank receives, and
    the dispatch bytes each rank sends (counted) vs ``cost.moe_all_to_all_bytes``."""
    if ep < 1 or n_experts % ep or tokens % ep:
        raise ValueError(f"ep={ep} must divide n_experts={n_experts} and tokens={tokens}")
    g = torch.Generator().manual_seed(seed)
    pop = torch.arange(1, n_experts + 1, dtype=torch.float64) ** -float(skew)
    choices = torch.multinomial(pop.expand(tokens, -1), top_k, generator=g)
    cap = None if capacity_factor is None else cost.expert_capacity(
        tokens, n_experts, capacity_factor, top_k)
    keep = kept_mask(choices, n_experts, cap, ep)
    routed = torch.bincount(choices.reshape(-1), minlength=n_experts)
    kept = torch.bincount(choices[keep], minlength=n_experts)
    per, owner = n_experts // ep, choices // (n_experts // ep)
    src = torch.arange(tokens).div(tokens // ep, rounding_mode="floor").unsqueeze(1)
    remote = keep & (owner != src)
    sent = [int(remote[src[:, 0] == r].sum()) * d_model * FP32 for r in range(ep)]
    formula = cost.moe_all_to_all_bytes(tokens // ep, d_model, top_k, ep, FP32)["dispatch"]
    rank_rows = kept.view(ep, per).sum(1).tolist()
    mean = tokens * top_k / n_experts
    return dict(routed=routed.tolist(), kept=kept.tolist(), capacity=cap,
                dropped=int((~keep).sum()), drop_rate=float((~keep).float().mean()),
                max_over_mean=float(routed.max()) / mean,
                max_over_min=float(routed.max()) / max(float(routed.min()), 1e-9),
                rank_rows=rank_rows, busiest_over_mean=max(rank_rows) / (sum(rank_rows) / ep),
                dispatch_sent=sent, dispatch_formula_balanced=formula)


# --- 2. training: drops and balance over steps ------------------------------------------------

def tilt_router_(model: GPT, x: torch.Tensor, tilt: float) -> None:
    """Add ``tilt * mu / |mu|^2`` to expert 0's router row in every MoE layer, mu the
    mean input of that layer on ``x`` (see the module docstring)."""
    if not tilt:
        return
    seen = {}

    def keep(k):  # a forward hook must return None, or it replaces the output
        return lambda _m, _i, o: seen.__setitem__(k, o.detach().reshape(-1, o.size(-1)))
    hooks = [b.ln2.register_forward_hook(keep(k)) for k, b in enumerate(model.blocks)
             if hasattr(b, "moe")]
    with torch.no_grad():
        model(x)
        for h in hooks:
            h.remove()
        for k, xs in seen.items():
            mu = xs.mean(0)
            model.blocks[k].moe.router.weight[0] += tilt * mu / mu.dot(mu)


def train_routing(config: GPTConfig, steps: int = 40, batch_size: int = BATCH, lr: float = LR,
                  seed: int = 0, data_seed: int = 0, tilt: float = 0.0) -> dict:
    """``reference_train``'s loop (see the module docstring for ``tilt``): {"losses",
    "moe": per step {layer: stats}} with ``parlab.moe``'s stats."""
    model = GPT(config, seed)
    tilt_router_(model, get_batch(0, batch_size, config.seq_len, config.vocab_size,
                                  seed=data_seed)[0], tilt)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=ADAMW_BETAS, weight_decay=0.0)
    losses, moe = [], []
    for step in range(steps):
        x, y = get_batch(step, batch_size, config.seq_len, config.vocab_size, seed=data_seed)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        moe.append({f"blocks.{m.layer}.moe": dict(m.stats) for m in model.moe_layers()})
        for m in model.moe_layers():
            m.update_bias_()
    return {"losses": losses, "moe": moe}


def capacity_drops(routed: list[int], capacity_factor: float | None, top_k: int = 1) -> float:
    """The share of assignments capacity drops, from the assignments per expert alone:
    each expert keeps min(n_i, C) whatever the order, so sum_i max(0, n_i - C) / sum_i n_i
    with C = ``cost.expert_capacity`` over sum(routed) / top_k tokens (0 without capacity).
    The widget applies it to a live run's counts, which the run's own drops then equal."""
    n = sum(routed)
    if capacity_factor is None or not n:
        return 0.0
    c = cost.expert_capacity(n // top_k, len(routed), capacity_factor, top_k)
    return sum(max(0, x - c) for x in routed) / n


def step_load(moe_step: dict, capacity_factor: float | None = None, top_k: int = 1) -> dict:
    """One step's stats, mean over layers: max/mean and max/min assignments per expert;
    drop rate measured (a run with capacity) or, given ``capacity_factor``, the share
    that capacity would drop: sum_i max(0, routed_i - C) / assignments (exact per expert,
    whatever the order)."""
    mm, mn, dr = [], [], []
    for s in moe_step.values():
        r = s["routed"]
        n, E = sum(r), len(r)
        mm.append(max(r) * E / n)
        mn.append(max(r) / max(min(r), 1))
        dr.append(len(s["dropped"]) / n if capacity_factor is None
                  else capacity_drops(r, capacity_factor, top_k))
    k = len(mm)
    return dict(max_over_mean=sum(mm) / k, max_over_min=sum(mn) / k, drop_rate=sum(dr) / k)


def drop_sweep(tilts=(0.0, 1.0), balancers=("none", "aux loss", "bias"),
               cfs=(1.0, 1.25, 1.5, 2.0), steps: int = 30, measured_cf: float = 1.25,
               measured_tilts=(1.0,), config: GPTConfig = SMALL, seed: int = SEEDS["balanced"]
               ) -> list[dict]:
    """Per (tilt, balancer): one run without capacity (routing per step -> drop rate at
    every capacity factor and load balance per step) and, for ``measured_tilts``, one run
    capped at ``measured_cf`` (drops counted by the model itself, training with them)."""
    rows = []
    for tilt in tilts:
        for b in balancers:
            free = train_routing(moe_config(**_shape(config), **BALANCERS[b]), steps, seed=seed,
                                 tilt=tilt)
            capped = train_routing(moe_config(**_shape(config), **BALANCERS[b],
                                              capacity_factor=measured_cf), steps, seed=seed,
                                   tilt=tilt) if tilt in measured_tilts else None
            rows.append(dict(
                tilt=tilt, balancer=b, steps=steps,
                load=[step_load(s) for s in free["moe"]],
                drops={cf: [step_load(s, cf)["drop_rate"] for s in free["moe"]] for cf in cfs},
                measured_cf=measured_cf,
                measured=capped and [step_load(s)["drop_rate"] for s in capped["moe"]],
                loss=free["losses"][-1]))
    return rows


def summarize(row: dict, last: int = 10) -> dict:
    """First step and mean of the last ``last`` steps of a ``drop_sweep`` row."""
    tail = row["load"][-last:]
    return dict(first=row["load"][0],
                last={k: statistics.mean(x[k] for x in tail) for k in tail[0]},
                drops_first={cf: d[0] for cf, d in row["drops"].items()},
                drops_last={cf: statistics.mean(d[-last:]) for cf, d in row["drops"].items()},
                measured_last=row["measured"] and statistics.mean(row["measured"][-last:]))


# --- 3. on ranks: tokens per expert, bytes, the busiest rank -------------------------------

def ep_run(ep=4, seed=SEEDS["skewed"], steps=2, config=SMALL, batch_size=BATCH, **kw):
    return run(EPRun(config=config, steps=steps, batch_size=batch_size, seed=seed, ep=ep, **kw), ep)


def expert_table(result, step: int = 0, layer: str = "blocks.0.moe") -> list[dict]:
    """Per rank: tokens each of its experts computed in ``step`` (counted)."""
    return [dict(rank=r["rank"], experts=r["tokens_per_expert"][step][layer])
            for r in result.ranks]


def a2a_check(result, config: GPTConfig, batch_size: int, step: int = 0) -> list[dict]:
    """Per rank and MoE layer: payload bytes sent by the dispatch and combine all-to-alls,
    forward and backward (traced), next to ``cost.moe_all_to_all_bytes`` with the rank's
    own remote share (its rows bound for other ranks) and with balanced routing. A rank
    sends 2 x its outgoing rows (dispatch fwd, combine bwd) + 2 x the rows its experts
    received (combine fwd, dispatch bwd): the formula's symmetric 4x holds on average."""
    W, rows = len(result.ranks), []
    tokens = batch_size * config.seq_len // W
    unit = config.d_model * FP32
    for r in result.ranks:
        for layer, meas in r["a2a_bytes"][step].items():
            fwd = [c for c in r["collectives"] if c["step"] == step and c["layer"] == layer
                   and c["operator"] == "dispatch" and c["direction"] == "forward"]
            sent, recv = sum(c["payload_sent"] for c in fwd), sum(c["payload_recv"] for c in fwd)
            f = cost.moe_all_to_all_bytes(tokens, config.d_model, config.top_k, W, FP32,
                                          sent / (tokens * config.top_k * unit))
            rows.append(dict(rank=r["rank"], layer=layer, measured=meas["forward"] + meas["backward"],
                             counted=2 * sent + 2 * recv, formula=f["total"], sent_rows=sent // unit,
                             recv_rows=recv // unit, balanced=cost.moe_all_to_all_bytes(
                                 tokens, config.d_model, config.top_k, W, FP32)["total"]))
    return rows


def rows_per_rank(result, step: int = 0, layer: str = "blocks.0.moe") -> list[int]:
    """Rows (kept assignments) each rank's experts computed in ``step`` (counted)."""
    return [sum(r["tokens_per_expert"][step][layer].values()) for r in result.ranks]


def emulated_layer_worker(rows: list[int], row_s: float, repeats: int) -> list[dict]:
    """Rank worker: ``repeats`` times, compute for ``rows[rank] * row_s`` seconds (a sleep:
    emulated expert work, immune to other programs on the cores), then the combine
    all-to-all; returns per repeat when this rank finished computing and when the
    all-to-all let it go, from a common start (a barrier)."""
    me, W = dist.get_rank(), dist.get_world_size()
    out = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        time.sleep(rows[me] * row_s)
        done = time.perf_counter()
        dist.all_to_all_single(torch.empty(W), torch.zeros(W))  # nobody leaves before all arrive
        out.append(dict(compute_s=done - t0, layer_s=time.perf_counter() - t0))
    return out


def busiest(rows: list[int], row_s: float = 2e-4, repeats: int = 5) -> list[dict]:
    """The MoE layer with emulated expert work: per rank, its rows, compute and layer time
    (medians over ``repeats``), and the prediction: every rank's layer lasts as long as
    the busiest rank's compute, max(rows) x row_s."""
    from parlab.launch import launch
    res = launch(emulated_layer_worker, len(rows), rows, row_s, repeats)
    return [dict(rank=r, rows=n, compute_s=statistics.median(x["compute_s"] for x in res[r]),
                 layer_s=statistics.median(x["layer_s"] for x in res[r]),
                 predicted_s=max(rows) * row_s, balanced_s=sum(rows) / len(rows) * row_s)
            for r, n in enumerate(rows)]


def step_times(eps=(1, 2, 4), seed: int = SEEDS["balanced"], steps: int = 3, repeats: int = 2,
               config: GPTConfig | None = None, batch_size: int = BATCH) -> list[dict]:
    """Median step time at each EP degree (world = ep), launches interleaved, first step
    of each launch dropped."""
    config = config or moe_config(**HEAVY)
    times = {e: [] for e in eps}
    for _ in range(repeats):
        for e in eps:
            times[e] += ep_run(e, seed, steps, config, batch_size).step_times[1:]
    med = {e: statistics.median(t) for e, t in times.items()}
    return [dict(ep=e, step_s=med[e], speedup=med[eps[0]] / med[e], steps=len(times[e]),
                 load=hardware.timing_note()[1]) for e in eps]


# --- 4. the widget's live run and prediction --------------------------------------------------

def predict(tokens: int, n_experts: int, top_k: int, capacity_factor: float | None,
            skew: float, ep: int, d_model: int = 64, d_ff: int = 256,
            flops: float = 2e9, link_bytes_per_s: float = 1e9, alpha_s: float = 2e-5) -> dict:
    """``simulate`` plus a time model of one MoE layer's forward: the busiest rank's rows x
    ``cost.moe_flops_per_token`` (forward, one expert) / ``flops``, plus dispatch + combine
    over a link of ``link_bytes_per_s`` with ``alpha_s`` per message."""
    sim = simulate(tokens, n_experts, top_k, capacity_factor, skew, ep, d_model)
    per_row = cost.moe_flops_per_token(d_model, d_ff, n_experts, 1, training=False)
    compute = max(sim["rank_rows"]) * per_row / flops
    comm = 2 * (max(sim["dispatch_sent"]) / link_bytes_per_s + (ep - 1) * alpha_s) if ep > 1 else 0.0
    balanced = tokens * top_k / ep * per_row / flops
    return dict(sim, compute_s=compute, comm_s=comm, layer_s=compute + comm,
                balanced_compute_s=balanced)


def live(ep: int = 2, n_experts: int = 4, top_k: int = 1, capacity_factor: float | None = 1.25,
         skewed: bool = True, steps: int = 3) -> dict:
    """A real run on ``ep`` ranks (experts 16x wide): median step, assignments per expert,
    drop rate (and ``drop_rule``: ``capacity_drops`` on its counts), a2a bytes per rank vs
    formula, rows per rank; or ``error``."""
    try:
        cfg = moe_config(n_experts=n_experts, top_k=top_k, capacity_factor=capacity_factor, **HEAVY)
        r = ep_run(ep, SEEDS["skewed" if skewed else "balanced"], steps, cfg)
    except ValueError as e:
        return dict(error=str(e))
    s0 = r.ranks[0]
    routed = s0["routed"][0]["blocks.0.moe"]
    n_drop = sum(len(x["dropped"][0]["blocks.0.moe"]) for x in r.ranks)
    return dict(ep=ep, step_s=statistics.median(r.step_times[1:]), routed=routed,
                drop_rate=n_drop / sum(routed), bytes=a2a_check(r, cfg, BATCH),
                drop_rule=capacity_drops(routed, capacity_factor, top_k),
                max_over_mean=max(routed) * n_experts / sum(routed),
                rows=[sum(x["tokens_per_expert"][0]["blocks.0.moe"].values()) for x in r.ranks],
                load=hardware.timing_note()[1])


# --- 5. the interview corner's numbers ------------------------------------------------------

def interview(sweep: list[dict] | None = None) -> dict:
    """Numbers for the seed's MoE/EP claims: experts vs devices, Mixtral's parameters,
    capacity, hot experts, EP vs TP bytes per layer (Mixtral's width, bf16)."""
    from parlab.cost import tp_comm_per_layer
    p = cost.moe_params(**MIXTRAL)
    out = {"models": MOE_MODELS, "mixtral_params": p}
    if sweep:
        out["sweep"] = {(r["tilt"], r["balancer"]): summarize(r) for r in sweep}
    s, d, tp = 4096, MIXTRAL["d_model"], tp_comm_per_layer(1, 4096, 4096, 8, bytes_per_value=2)
    out["ep_vs_tp"] = dict(ep8=cost.moe_all_to_all_bytes(s, d, 2, 8, 2)["total"], tp8=tp["bytes"],
                           tp8_mlp_only=tp["bytes"] / 2)
    return out

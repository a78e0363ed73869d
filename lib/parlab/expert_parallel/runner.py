"""One expert-parallel (x data-parallel) training run, in the lab's run convention:

    result = expert_parallel.run(EPRun(config=GPTConfig(n_experts=4, top_k=2,
                                                        capacity_factor=1.25), ep=2), 4)

The global batch is split over all W ranks (W/ep data-parallel replicas of one EP
group each); ``collect`` reassembles the full parameters and gradients, so
``model.max_differences`` compares the run with ``reference_train`` directly, and
every rank reports which of its tokens were dropped, with their global token index
(row-major over the global batch), to compare with ``reference_train``'s "moe".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.distributed as dist

from .. import trace
from ..data import local_batch
from ..memory import held_bytes, optimizer_states
from ..runs import RunResult, TrainRun
from ..validate import check_bool, check_int
from .model import EPGPT, local_tensors, make_groups, sync_grads

EXTRAS = ("rank", "local_losses", "tokens_per_expert", "routed", "dropped", "a2a_bytes",
          "collectives", "step_times")


@dataclass(frozen=True)
class EPRun(TrainRun):
    """Expert parallelism over ``ep`` ranks (None: all of them) x data parallelism over
    world_size / ep; ``config`` must be a MoE (n_experts > 0). ``trace``: return every
    rank's traced events (the collectives are always returned, per step)."""
    ep: int | None = None
    trace: bool = False

    trains_moe: ClassVar[bool] = True

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_bool("trace", self.trace)
        c = self.config
        if c.n_experts == 0:
            raise ValueError("config.n_experts=0: expert parallelism needs a MoE config "
                             "(GPTConfig(n_experts=...))")
        ep = world_size if self.ep is None else check_int("ep", self.ep)
        if world_size % ep:
            raise ValueError(f"ep={ep} must divide world_size={world_size}")
        if c.n_experts % ep:
            raise ValueError(f"ep={ep} must divide n_experts={c.n_experts}")
        if self.batch_size % world_size:
            raise ValueError(f"world_size={world_size} must divide batch_size="
                             f"{self.batch_size}: every rank takes an equal slice")


def build(run: EPRun, group=None):
    """(our expert-parallel model for this rank, its gradient sync); ``peers`` has others."""
    ep_group, dp_group = make_groups(group, run.ep or dist.get_world_size(group))
    return EPGPT(run.config, run.seed, group, ep_group, dp_group), sync_grads


def train_worker(run: EPRun, group=None, builder=None) -> dict:
    """Rank worker: ``run.steps`` AdamW steps, mirroring ``reference_train``, on this
    rank's slice of each global batch. ``builder(run, group)``: (model, sync_grads);
    default ``build`` (ours); ``peers.build_dense`` / ``peers.build_torch_a2a``."""
    torch.set_num_threads(1)
    W, rank, cfg = dist.get_world_size(group), dist.get_rank(group), run.config
    ep = run.ep or W
    model, sync = (builder or build)(run, group)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95),
                            weight_decay=run.weight_decay)
    losses, step_times, windows, tokens, routed, dropped = [], [], [], [], [], []
    trace.start()
    for step in range(run.steps):
        x, y = local_batch(step, run.batch_size, cfg.seq_len, cfg.vocab_size, rank, W,
                           seed=run.data_seed)
        t0 = trace.now()
        opt.zero_grad(set_to_none=True)
        with trace.span("forward", step=step):
            _, loss = model(x, y)
        with trace.span("backward", step=step):
            loss.backward()
            sync(model)
        with trace.span("optimizer", step=step):
            opt.step()
            for m in model.moe_layers():
                m.update_bias_()   # same global load on every rank: same biases
        windows.append((t0, trace.now()))
        step_times.append(windows[-1][1] - t0)
        losses.append(loss.item())
        layers = {f"blocks.{m.layer}.moe": m.stats for m in model.moe_layers()}
        tokens.append({k: s.get("local_tokens") for k, s in layers.items()})
        routed.append({k: s["routed"] for k, s in layers.items()})
        dropped.append({k: s["dropped"] for k, s in layers.items()})
    events = [dict(e, rank=dist.get_rank()) for e in trace.stop()]
    collectives = trace.comm_rows(events, windows, ("op", "layer", "direction", "operator",
                                                    "payload_sent", "payload_recv"))
    a2a = [{} for _ in range(run.steps)]  # payload bytes sent, per step, layer and pass
    for c in collectives:
        if c["operator"] in ("dispatch", "combine"):
            per = a2a[c["step"]].setdefault(c["layer"], {"forward": 0, "backward": 0})
            per[c["direction"]] += c["payload_sent"]
    state, grads = local_tensors(model)
    keep = rank < ep  # the first EP group holds every expert once
    return {"rank": rank, "local_losses": losses, "step_times": step_times,
            "tokens_per_expert": tokens, "routed": routed, "dropped": dropped,
            "a2a_bytes": a2a, "collectives": collectives,
            "events": events if run.trace else [],
            "memory": held_bytes(params=list(model.parameters()),
                                 grads=[p.grad for p in model.parameters()],
                                 optimizer=optimizer_states(opt)),
            "state_dict": state if keep else None, "grads": grads if keep else None}


def collect(run: EPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one run's ``train_worker`` returns (group rank order): mean
    loss over ranks, full parameters and gradients (the replicated ones from rank 0,
    each expert from the rank of the first EP group holding it), slowest-rank step
    times, and per rank ``EXTRAS``."""
    result = RunResult.from_replicas(ranks, run.steps, EXTRAS)
    state, grads = {}, {}
    for r in ranks:
        if r["state_dict"] is not None:
            state.update(r["state_dict"])
            grads.update(r["grads"])
    result.state_dict, result.grads = state, grads
    return result


def run(run: EPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """Check ``run``, train on ``world_size`` ranks and gather the result."""
    from ..launch import launch
    if not isinstance(run, EPRun):
        raise ValueError(f"run must be an EPRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout))

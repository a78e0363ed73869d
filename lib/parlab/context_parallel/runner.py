"""One context-parallel training run, in the lab's run convention:

    result = context_parallel.run(CPRun(config=GPTConfig(...), steps=3, batch_size=8,
                                        layout="zigzag", attention="ring"), world_size=4)

Every rank builds the global batch and keeps its shard of every sequence; parameters are
replicated and their gradients summed over the group, so rank 0's parameters are the
run's. Besides losses, parameters and gradients, each rank reports, for one layer
(``blocks.0.attn``) in the first step:

  layer_comm      {"forward": {"messages", "bytes"}, "backward": {...}, "bytes"}: what it
                  sent (ring: exact p2p bytes; Ulysses: the all-to-alls' modelled bytes),
                  beside ``cost.cp_comm_per_layer``;
  attention_work  {"forward", "backward"}: attention scores computed for one sequence,
                  summed over heads (q rows x k columns of every block, masked entries
                  included), beside ``cost.causal_work_per_rank``; None where untraced
                  (Ulysses' backward is autograd's).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from .. import comm, trace
from ..data import get_batch
from ..memory import held_bytes, optimizer_states
from ..runs import RunResult, TrainRun
from ..validate import check_bool, check_choice
from .layout import LAYOUTS, shard_positions, shard_sequence
from .model import ATTENTIONS, CPGPT, sync_grads

LAYER = "blocks.0.attn"  # the layer whose traffic and work are summarised per rank


@dataclass(frozen=True)
class CPRun(TrainRun):
    """One context-parallel training run over cp = world_size ranks. ``layout``:
    "contiguous" or "zigzag" (load-balanced); ``attention``: "ring" or "ulysses";
    ``trace``: return every rank's traced events (traffic and work are always returned)."""
    layout: str = "zigzag"
    attention: str = "ring"
    trace: bool = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_choice("layout", self.layout, LAYOUTS)
        check_choice("attention", self.attention, ATTENTIONS)
        check_bool("trace", self.trace)
        c, cp = self.config, world_size
        chunks = cp if self.layout == "contiguous" else 2 * cp
        if c.seq_len % chunks:
            raise ValueError(f"seq_len={c.seq_len} must be divisible by "
                             f"{'cp' if self.layout == 'contiguous' else '2*cp'}={chunks} "
                             f"for the {self.layout} layout")
        if self.attention == "ulysses" and c.n_heads % cp:
            raise ValueError(f"cp={cp} must divide n_heads={c.n_heads}: Ulysses gives each "
                             "rank whole heads")


def _summary(events: list[dict], windows) -> tuple[list[dict], dict, dict]:
    """(one row per comm event, the traffic of LAYER in step 0 by direction, the attention
    scores of LAYER in step 0 by direction) from one rank's events."""
    comm_rows = trace.comm_rows(events, windows)
    layer_comm, work = {}, {}
    for d in ("forward", "backward"):
        mine = [c for c in comm_rows if c["layer"] == LAYER and c["direction"] == d
                and c["step"] == 0]
        layer_comm[d] = {"messages": len(mine), "bytes": sum(c["bytes_sent"] for c in mine)}
        blocks = [e["meta"]["scores"] for e in events
                  if e["kind"] == "compute" and "scores" in e["meta"]
                  and e["meta"].get("layer") == LAYER and e["meta"].get("direction") == d
                  and trace.step_of(e["start"], windows) == 0]
        work[d] = sum(blocks) if blocks else None  # Ulysses' backward is autograd's: untraced
    layer_comm["bytes"] = layer_comm["forward"]["bytes"] + layer_comm["backward"]["bytes"]
    return comm_rows, layer_comm, work


def train_worker(run: CPRun, group=None) -> dict:
    """Rank worker: ``run.steps`` AdamW steps of context-parallel training over ``group``
    (default: the world), mirroring ``reference_train``."""
    torch.set_num_threads(1)
    rank, cp, cfg = dist.get_rank(group), dist.get_world_size(group), run.config
    device = comm.device(group)  # the rank's GPU under NCCL, else the CPU
    model = CPGPT(cfg, run.seed, group, run.layout, run.attention).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.95),
                            weight_decay=run.weight_decay)
    positions = shard_positions(cfg.seq_len, cp, rank, run.layout).to(device)
    losses, step_times, windows = [], [], []
    trace.start()
    for step in range(run.steps):
        x, y = get_batch(step, run.batch_size, cfg.seq_len, cfg.vocab_size, seed=run.data_seed)
        x, y = (shard_sequence(t, 1, cp, rank, run.layout).to(device) for t in (x, y))
        t0 = trace.now()
        opt.zero_grad(set_to_none=True)
        with trace.span("forward", step=step):
            loss = model(x, y, positions, x.size(0) * cfg.seq_len)
        with trace.span("backward", step=step):
            loss.backward()
            sync_grads(model, group)
        with trace.span("optimizer", step=step):
            opt.step()
        windows.append((t0, trace.now()))
        step_times.append(windows[-1][1] - t0)
        losses.append(loss.item())
    events = [dict(e, rank=rank) for e in trace.stop()]
    comm_rows, layer_comm, work = _summary(events, windows)
    params = list(model.parameters())
    return {"rank": rank, "local_losses": losses, "step_times": step_times,
            "comm": comm_rows, "layer_comm": layer_comm, "attention_work": work,
            "positions": positions.cpu().tolist(), "events": events if run.trace else [],
            "memory": held_bytes(params=params, grads=[p.grad for p in params],
                                 optimizer=optimizer_states(opt)),
            "state_dict": ({k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
                           if rank == 0 else None),
            "grads": ({n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}
                      if rank == 0 else None)}


def collect(run: CPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one group's ``train_worker`` returns (group-rank order): the
    loss is the sum of the ranks' shares, the parameters and gradients are rank 0's
    (replicas), a step lasts as long as its slowest rank; per rank its comm rows,
    ``layer_comm``, ``attention_work`` and the positions it held."""
    return RunResult(
        losses=[sum(r["local_losses"][s] for r in ranks) for s in range(run.steps)],
        state_dict=ranks[0]["state_dict"], grads=ranks[0]["grads"],
        events=[e for r in ranks for e in r["events"]], memory=[r["memory"] for r in ranks],
        step_times=[max(r["step_times"][s] for r in ranks) for s in range(run.steps)],
        ranks=[{k: r[k] for k in ("rank", "local_losses", "comm", "layer_comm",
                                  "attention_work", "positions")} for r in ranks])


def run(run: CPRun, world_size: int, timeout: float = 120.0) -> RunResult:
    """Check ``run``, train on ``world_size`` = cp ranks and gather the result."""
    from ..launch import launch
    if not isinstance(run, CPRun):
        raise ValueError(f"run must be a CPRun, got {type(run).__name__}")
    run.check(world_size)
    return collect(run, launch(train_worker, world_size, run, timeout=timeout))

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

from .. import comm, trace
from ..data import get_batch
from ..model import GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, train
from ..validate import check_choice
from .layout import LAYOUTS, shard_positions, shard_sequence
from .apply import ATTENTIONS, apply_context_parallel, sync_grads

LAYER = "blocks.0.attn"  # the layer whose traffic and work are summarised per rank
EXTRAS = ("comm", "layer_comm", "attention_work", "positions")


@dataclass(frozen=True)
class CPRun(TrainRun):
    """One context-parallel training run over cp = world_size ranks. ``layout``:
    "contiguous" or "zigzag" (load-balanced); ``attention``: "ring" or "ulysses"
    (traffic and work are always returned)."""
    layout: str = "zigzag"
    attention: str = "ring"

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
        check_cp(self.config, world_size, self.layout, self.attention)


def check_cp(config, cp: int, layout: str, attention: str) -> None:
    """ValueError unless ``cp`` ranks can share ``config``'s sequence this way."""
    check_choice("layout", layout, LAYOUTS)
    check_choice("attention", attention, ATTENTIONS)
    chunks = cp if layout == "contiguous" else 2 * cp
    if config.seq_len % chunks:
        raise ValueError(f"seq_len={config.seq_len} must be divisible by "
                         f"{'cp' if layout == 'contiguous' else '2*cp'}={chunks} "
                         f"for the {layout} layout")
    if attention == "ulysses" and config.n_heads % cp:
        raise ValueError(f"cp={cp} must divide n_heads={config.n_heads}: Ulysses gives each "
                         "rank whole heads")


def _summary(comm_rows: list[dict], work: list) -> tuple[dict, dict]:
    """(the traffic of LAYER in step 0 by direction, the attention scores it computed in
    step 0 by direction) from one rank's comm rows and work probes."""
    layer_comm = {}
    scores = {}
    for d in ("forward", "backward"):
        mine = [c for c in comm_rows if c["layer"] == LAYER and c["direction"] == d
                and c["step"] == 0]
        layer_comm[d] = {"messages": len(mine), "bytes": sum(c["bytes_sent"] for c in mine)}
        blocks = [n for n, tags in work if tags.get("layer") == LAYER
                  and tags.get("direction") == d and tags.get("step") == 0]
        scores[d] = sum(blocks) if blocks else None  # Ulysses' backward is autograd's: uncounted
    layer_comm["bytes"] = layer_comm["forward"]["bytes"] + layer_comm["backward"]["bytes"]
    return layer_comm, scores


class CPRecipe(Recipe):
    """The lab's GPT on this rank's positions, its attention cores context-parallel."""

    def __init__(self, run: CPRun, group=None):
        super().__init__(run, group)
        cfg = run.config
        device = comm.device(group)
        self.model = GPT(cfg, run.seed).to(device)
        apply_context_parallel(self.model, group, run.layout, run.attention)
        trace.label_modules(self.model, {m: n for n, m in self.model.named_modules() if n})
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.positions = shard_positions(cfg.seq_len, self.world, self.rank, run.layout).to(device)
        self.work = []  # (attention scores, tags) of every block computed
        trace.clear_probes()
        trace.add_probe("attention_scores", lambda n, tags: self.work.append((n, tags)))

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        x, y = get_batch(step, r.batch_size, c.seq_len, c.vocab_size, seed=r.data_seed)
        return tuple(shard_sequence(t, 1, self.world, self.rank, r.layout).to(self.positions.device)
                     for t in (x, y))

    def train_step(self, x, y):
        with trace.span("forward"):
            _, loss = self.model(x, y, self.positions)  # this rank's tokens: their mean loss
        with trace.span("backward"):
            loss.backward()
            sync_grads(self.model, self.group)
        return loss.item()

    def full_state(self):
        out = super().full_state()
        trace.clear_probes()
        return out

    def report(self, events, windows) -> dict:
        comm_rows = trace.comm_rows(events, windows)
        layer_comm, work = _summary(comm_rows, self.work)
        return {"comm": comm_rows, "layer_comm": layer_comm, "attention_work": work,
                "positions": self.positions.cpu().tolist()}


def train_worker(run: CPRun, group=None) -> dict:
    """Rank worker: context-parallel training over ``group`` (default: the world)."""
    return train(CPRecipe(run, group))


def collect(run: CPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one group's ``train_worker`` returns (group-rank order): the
    loss is the mean of the ranks' (equal shards), the parameters and gradients are rank
    0's (replicas); per rank its comm rows, ``layer_comm``, ``attention_work`` and the
    positions it held."""
    return RunResult.gather(run, ranks, EXTRAS)


run = make_run(CPRun, train_worker, collect)

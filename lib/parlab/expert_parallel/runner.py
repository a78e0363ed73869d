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

import torch.distributed as dist

from .. import trace
from ..model import GPT
from ..runs import Recipe, RunResult, TrainRun, make_run, module_state, train
from ..validate import check_choice, check_int
from .layers import apply_expert_parallel
from .groups import make_groups, sync_grads
from .peers import PEERS

EXTRAS = ("tokens_per_expert", "routed", "dropped", "a2a_bytes", "collectives", "moe_stats")


@dataclass(frozen=True)
class EPRun(TrainRun):
    """Expert parallelism over ``ep`` ranks (None: all of them) x data parallelism over
    world_size / ep; ``config`` must be a MoE (n_experts > 0). The collectives are
    always returned, per step. ``peer``: "dense" (every expert on every rank) or
    "torch_a2a" (dispatch and combine by PyTorch's autograd all-to-all), ``peers.py``."""
    ep: int | None = None
    peer: str | None = None

    trains_moe: ClassVar[bool] = True

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the broken field (before any rank starts)."""
        super().check(world_size)
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
        check_choice("peer", self.peer, (None, *PEERS))


def build(run: EPRun, group=None):
    """(our expert-parallel model for this rank, its gradient sync); ``peers`` has others."""
    ep_group, dp_group = make_groups(group, run.ep or dist.get_world_size(group))
    model = GPT(run.config, run.seed)
    apply_expert_parallel(model, group, ep_group)
    return model, lambda m: sync_grads(m, group, dp_group)


class EPRecipe(Recipe):
    """The lab's MoE GPT with its experts spread over the EP groups."""

    def __init__(self, run: EPRun, group=None):
        super().__init__(run, group)
        self.ep = run.ep or self.world
        self.model, self.sync = (PEERS[run.peer] if run.peer else build)(run, group)
        trace.label_modules(self.model, {m: n for n, m in self.model.named_modules() if n})
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.tokens = []
        self.routed = []
        self.dropped = []
        self.stats = []

    def train_step(self, x, y):
        with trace.span("forward"):
            _, loss = self.model(x, y)
        with trace.span("backward"):
            loss.backward()
            self.sync(self.model)
        return loss.item()

    def step(self) -> None:
        super().step()
        layers = {f"blocks.{m.layer}.moe": m for m in self.model.moe_layers()}
        for m in layers.values():
            m.update_bias_()   # same global load on every rank: same biases
        self.tokens.append({k: m.stats.get("local_tokens") for k, m in layers.items()})
        self.routed.append({k: m.stats["routed"] for k, m in layers.items()})
        self.dropped.append({k: m.stats["dropped"] for k, m in layers.items()})
        self.stats.append({k: dict(m.stats) for k, m in layers.items()})  # this rank's

    def full_state(self):
        if self.rank >= self.ep:  # the first EP group holds every expert once
            return None, None
        return module_state(self.model)

    def report(self, events, windows) -> dict:
        collectives = trace.comm_rows(events, windows, ("op", "layer", "direction", "operator",
                                                        "payload_sent", "payload_recv"))
        a2a = [{} for _ in range(self.run.steps)]  # payload bytes sent, per step, layer, pass
        for c in collectives:
            if c["operator"] in ("dispatch", "combine"):
                block = ".".join(c["layer"].split(".")[:3])  # blocks.i.moe
                per = a2a[c["step"]].setdefault(block, {"forward": 0, "backward": 0})
                per[c["direction"]] += c["payload_sent"]
        return {"tokens_per_expert": self.tokens, "routed": self.routed,
                "dropped": self.dropped, "a2a_bytes": a2a, "collectives": collectives,
                "moe_stats": self.stats}


def train_worker(run: EPRun, group=None) -> dict:
    """Rank worker: expert x data parallel training over ``group`` (default: the world),
    ours or (``run.peer``) a peer's."""
    return train(EPRecipe(run, group))


def collect(run: EPRun, ranks: list[dict]) -> RunResult:
    """The ``RunResult`` of one run's ``train_worker`` returns (group rank order): mean
    loss over ranks, full parameters and gradients (the replicated ones from rank 0,
    each expert from the rank of the first EP group holding it), slowest-rank step
    times, and per rank ``EXTRAS``."""
    return RunResult.gather(run, ranks, EXTRAS)


run = make_run(EPRun, train_worker, collect)

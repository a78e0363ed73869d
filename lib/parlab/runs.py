"""The run convention every strategy follows.

    result = parlab.<strategy>.run(<Name>Run(config=GPTConfig(...), steps=3, batch_size=8, ...),
                                   world_size)

``TrainRun`` holds the fields every run shares with ``model.reference_train``; each
strategy's frozen ``<Name>Run`` adds its knobs and extends ``check(world_size)``,
which raises ``ValueError`` naming the field *before any process starts*.
``RunResult`` is what every ``run`` returns: ``losses``, ``state_dict`` and ``grads``
mean exactly what ``reference_train``'s do, so ``model.max_differences(result, ref)``
compares any run with any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .model import GPTConfig
from .validate import check_float, check_int


@dataclass(frozen=True)
class TrainRun:
    """What every training run needs, with ``reference_train``'s meaning:
    ``steps`` AdamW(lr, betas=(0.9, 0.95), weight_decay) steps on global batches of
    ``batch_size`` sequences drawn from ``data_seed``, weights initialised from ``seed``."""
    config: GPTConfig = field(default_factory=GPTConfig)
    steps: int = 3
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0
    data_seed: int = 0
    # Only expert parallelism knows Mixture-of-Experts layers; the other strategies build
    # dense blocks (and their capacity would be counted over a rank's slice, not the
    # global batch), so they refuse a MoE config rather than train something else.
    trains_moe: ClassVar[bool] = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the first broken field. Subclasses call this first,
        then check their own fields and how ``batch_size`` splits over their degrees."""
        check_int("world_size", world_size)
        if not isinstance(self.config, GPTConfig):
            raise ValueError(f"config must be a GPTConfig, got {type(self.config).__name__}")
        if getattr(self.config, "n_experts", 0) and not self.trains_moe:
            raise ValueError(f"config.n_experts={self.config.n_experts}: {type(self).__name__} "
                             "trains dense models only; a MoE config trains with "
                             "parlab.expert_parallel (EPRun)")
        check_int("steps", self.steps)
        check_int("batch_size", self.batch_size)
        check_float("lr", self.lr)
        check_float("weight_decay", self.weight_decay, strict=False)
        check_int("seed", self.seed, low=0)
        check_int("data_seed", self.data_seed, low=0)


@dataclass
class RunResult:
    """What a strategy's ``run`` measured. The first three fields mean what
    ``reference_train``'s keys mean; the rest are measurements."""
    losses: list[float]            # per step: mean loss over the global batch
    state_dict: dict               # final parameters, full tensors, by reference name
    grads: dict                    # gradients of the last step, full, by reference name
    events: list[dict] = field(default_factory=list)   # traced events of every rank ("rank" key)
    memory: list[dict] = field(default_factory=list)   # per rank: bytes held, by kind
    step_times: list[float] = field(default_factory=list)  # per step, seconds (slowest rank)
    ranks: list[dict] = field(default_factory=list)    # per rank: what else its worker returned

    def __getitem__(self, key: str):
        """``result["losses"]`` as well as ``result.losses``: reference_train returns a dict."""
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    @classmethod
    def from_replicas(cls, ranks: list[dict], steps: int, extras=()) -> "RunResult":
        """The result of data-parallel replicas (one dict per rank, in group-rank order,
        each with ``local_losses``, ``step_times``, ``events`` and ``memory``, and rank
        0's ``state_dict`` and ``grads``): the global mean loss per step is the mean of
        the ranks' slice means (equal slices), every replica holds the same weights, and
        a step lasts as long as its slowest rank. ``extras``: keys kept per rank."""
        n = len(ranks)
        return cls(losses=[sum(r["local_losses"][s] for r in ranks) / n for s in range(steps)],
                   state_dict=ranks[0]["state_dict"], grads=ranks[0]["grads"],
                   events=[e for r in ranks for e in r["events"]],
                   memory=[r["memory"] for r in ranks],
                   step_times=[max(r["step_times"][s] for r in ranks) for s in range(steps)],
                   ranks=[{k: r[k] for k in extras} for r in ranks])

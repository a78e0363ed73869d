"""The run convention every strategy follows, and the one training loop they share.

    result = parlab.<strategy>.run(<Name>Run(config=GPTConfig(...), steps=3, batch_size=8, ...),
                                   world_size)

``TrainRun`` holds the fields every run shares with ``model.reference_train``; each
strategy's frozen ``<Name>Run`` adds its knobs and extends ``check(world_size)``, which
raises ``ValueError`` naming the field *before any process starts*.

On every rank, ``train(recipe)`` is the loop: one intra-op thread, the step window and
its trace tags, losses, step times, memory and the full state at the end. A strategy
brings only a ``Recipe``: how it builds its parts over its groups, what one step
computes and synchronises, and what else it reports. ``RunResult.gather`` turns the
ranks' returns into one result whose ``losses``, ``state_dict`` and ``grads`` mean
exactly what ``reference_train``'s do, so ``model.max_differences(result, ref)``
compares any run with any other; ``make_run`` writes each strategy's ``run()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.distributed as dist

from . import trace
from .data import check_vocab, local_batch
from .memory import held_bytes, optimizer_states
from .model import GPTConfig, reference_optimizer
from .validate import check_bool, check_float, check_int


@dataclass(frozen=True)
class TrainRun:
    """What every training run needs, with ``reference_train``'s meaning: ``steps``
    steps of ``model.reference_optimizer`` (AdamW) on global batches of ``batch_size``
    sequences drawn from ``data_seed``, weights initialised from ``seed``. ``trace``:
    keep every rank's traced events on the result."""
    config: GPTConfig = field(default_factory=GPTConfig)
    steps: int = 3
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0
    data_seed: int = 0
    trace: bool = False
    # Only runs that place experts know Mixture-of-Experts layers; the others refuse a
    # MoE config (its capacity would be counted over a rank's slice, not the global batch).
    trains_moe: ClassVar[bool] = False

    def check(self, world_size: int) -> None:
        """Raise ValueError naming the first broken field. Subclasses call this first,
        then check their own fields and how ``batch_size`` splits over their degrees."""
        check_int("world_size", world_size)
        if not isinstance(self.config, GPTConfig):
            raise ValueError(f"config must be a GPTConfig, got {type(self.config).__name__}")
        # Once more, though GPTConfig checks itself when made: a config built past its
        # frozen guard (object.__setattr__, an old pickle) must fail here, not in a rank.
        try:
            self.config.validate()
        except ValueError as e:  # named as the run's field: config.d_ff=0 must be ...
            raise ValueError(f"config.{e}") from None
        check_vocab(self.config.vocab_size)  # the data's minimum, before any rank draws it
        if getattr(self.config, "n_experts", 0) and not self.trains_moe:
            raise ValueError(f"config.n_experts={self.config.n_experts}: {type(self).__name__} "
                             "trains dense models only; a MoE config trains with "
                             "parlab.expert_parallel (EPRun) or parlab.parallel_nd (NDRun)")
        check_int("steps", self.steps)
        check_int("batch_size", self.batch_size)
        check_float("lr", self.lr)
        check_float("weight_decay", self.weight_decay, strict=False)
        check_int("seed", self.seed, low=0)
        check_int("data_seed", self.data_seed, low=0)
        check_bool("trace", self.trace)


# --- one rank: the recipe a strategy brings, and the loop ----------------------------

class Recipe:
    """One rank's part of a run. A strategy subclasses it and sets, in ``__init__``,
    ``model`` (the module this rank trains: its forward is what it runs, its
    parameters what it holds) and ``optimizer``; then overrides what differs from
    plain data parallelism:

      batch(step)         this rank's inputs and targets (default: its slice of the batch)
      before_step()       anything before the step's clock starts (default: nothing)
      train_step(x, y)    forward, backward and the gradient sync; returns this rank's
                          part of the loss (None: it reports none)
      step()              the optimizer step (and what follows it)
      full_state()        (parameters, gradients) by reference name, full tensors, on the
                          ranks that keep them (None elsewhere); may be a collective
      report(events, windows)  extra fields for the result
    ``replica``: which copy of the model this rank's loss belongs to (losses are summed
    within a replica, averaged over replicas), None if it reports no loss."""

    def __init__(self, run: TrainRun, group=None):
        self.run = run
        self.group = group
        if dist.is_initialized():
            self.rank = dist.get_rank(group)
            self.world = dist.get_world_size(group)
        else:  # one device, in this process: no process group needed
            self.rank = 0
            self.world = 1
        self.replica = self.rank
        self.model = None
        self.optimizer = None

    def make_optimizer(self, params):
        return reference_optimizer(params, self.run.lr, self.run.weight_decay)

    def batch(self, step: int):
        r = self.run
        c = self.run.config
        return local_batch(step, r.batch_size, c.seq_len, c.vocab_size, self.rank, self.world,
                           seed=r.data_seed)

    def before_step(self) -> None:
        """Called before each step's clock starts (a pipeline's ranks meet here)."""

    def zero_grad(self) -> None:
        for opt in _as_list(self.optimizer):
            opt.zero_grad(set_to_none=True)

    def train_step(self, x, y):
        with trace.span("forward"):
            _, loss = self.model(x, y)
        with trace.span("backward"):
            loss.backward()
        return loss.item()

    def step(self) -> None:
        for opt in _as_list(self.optimizer):
            opt.step()

    def parameters(self) -> list:
        return list(self.model.parameters())

    def memory(self) -> dict:
        params = self.parameters()
        return held_bytes(params=params, grads=[p.grad for p in params],
                          optimizer=optimizer_states(_as_list(self.optimizer)))

    def full_state(self):
        """(parameters and buffers, gradients) by reference name, full, on the ranks that
        keep them (default: rank 0 of the group, whose ``model`` holds them whole)."""
        if self.rank != 0:
            return None, None
        return module_state(self.model)

    def report(self, events: list, windows: list) -> dict:
        return {}


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def snapshot(values: dict, grads: dict) -> tuple[dict, dict]:
    """The full state as a result keeps it, from {reference name: tensor} of the
    parameters and buffers and {reference name: gradient} (None: left out): detached
    copies on the CPU. Every run's ``full_state`` ends here."""
    def copy(t):
        return t.detach().cpu().clone()
    return ({n: copy(t) for n, t in values.items()},
            {n: copy(g) for n, g in grads.items() if g is not None})


def module_state(module, names: dict | None = None) -> tuple[dict, dict]:
    """``snapshot`` of a module that holds its tensors whole: its state_dict and its
    parameters' gradients; ``names``: {id(tensor): reference name} for a module that is
    a piece of the reference model (a pipeline stage), only the named ones kept."""
    if names is None:
        return snapshot(module.state_dict(), {n: p.grad for n, p in module.named_parameters()})
    tensors = [*module.parameters(), *module.buffers()]
    return snapshot({names[id(t)]: t for t in tensors if id(t) in names},
                    {names[id(p)]: p.grad for p in module.parameters() if id(p) in names})


def names_of(module) -> dict:
    """{id(tensor): [its names]} for a module's parameters and persistent buffers, a tied
    parameter under each of its names (the first first). Taken before a part moves the
    tensors out of the module (ZeRO-3 keeps them in its units)."""
    out: dict = {}
    for name, t in module.state_dict(keep_vars=True).items():
        out.setdefault(id(t), []).append(name)
    return out


def named_state(names: dict, values: dict, grads: dict) -> tuple[dict, dict]:
    """``snapshot`` of full tensors keyed by the tensors they stand for (a part's
    ``full_tensors``): each value under every name of its tensor, each gradient under
    the first, as ``named_parameters`` names it. ``names``: ``names_of`` the module."""
    return snapshot({n: v for t, v in values.items() for n in names[id(t)]},
                    {names[id(t)][0]: g for t, g in grads.items()})


def step_once(recipe: Recipe, step: int, batch=None):
    """One training step as ``train`` runs it (for timers that interleave recipes);
    ``batch``: (x, y) made beforehand, else ``recipe.batch(step)``. Returns the loss."""
    x, y = recipe.batch(step) if batch is None else batch
    recipe.before_step()
    return _step(recipe, x, y)


def _step(recipe: Recipe, x, y):
    """The order of one step, the only place it is written: gradients cleared, the
    recipe's forward, backward and gradient sync, the optimizer step."""
    recipe.zero_grad()
    loss = recipe.train_step(x, y)
    with trace.span("optimizer"):
        recipe.step()
    return loss


class Hook:
    """What is attached to the loop from outside, as trace and probes are: a checkpointer
    (``parlab.checkpoint.Checkpointing``), a log, fault injection. Each method is called
    on every rank; these defaults do nothing."""

    def start(self, recipe: Recipe) -> int | None:
        """Before the first step: the step to start from (None: 0), e.g. after a resume."""

    def before_step(self, recipe: Recipe, step: int) -> None:
        """Before step ``step`` (before its batch is made and its clock starts)."""

    def after_step(self, recipe: Recipe, step: int, loss) -> None:
        """After step ``step`` (``loss``: this rank's part of its loss), off its clock."""

    def report(self) -> dict:
        """Extra fields for this rank's return."""
        return {}


def train(recipe: Recipe, hooks=()) -> dict:
    """The training loop of every run, on one rank: ``run.steps`` steps of the recipe, from
    the step the ``hooks`` start at (0 unless one resumes). Events carry the rank in the
    recipe's group and the step in their meta."""
    torch.set_num_threads(1)
    run = recipe.run
    first = max((h.start(recipe) or 0 for h in hooks), default=0)
    losses = []
    windows = []
    trace.start()
    for step in range(first, run.steps):
        for h in hooks:
            h.before_step(recipe, step)
        x, y = recipe.batch(step)
        recipe.before_step()
        with trace.tagged(step=step):
            t0 = trace.now()
            losses.append(_step(recipe, x, y))
            windows.append((t0, trace.now()))
        for h in hooks:
            h.after_step(recipe, step, losses[-1])
    events = [dict(e, rank=recipe.rank) for e in trace.stop()]
    state, grads = recipe.full_state()
    return {"rank": recipe.rank, "replica": recipe.replica, "first_step": first,
            "local_losses": losses, "windows": windows,
            "step_times": [b - a for a, b in windows], "events": events,
            "memory": recipe.memory(), "state_dict": state, "grads": grads,
            **recipe.report(events, windows), **{k: v for h in hooks for k, v in h.report().items()}}


# --- the caller: one result from every rank's return ---------------------------------

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
    def gather(cls, run: TrainRun, ranks: list[dict], extras=(), **fields) -> "RunResult":
        """The result of ``train``'s returns (one per rank, in group-rank order): per step,
        the loss parts summed within each replica and averaged over replicas (equal
        slices of the batch); the full parameters and gradients merged from the ranks
        that kept them; a step as long as its slowest rank; ``extras``: per-rank keys kept
        on ``ranks``; ``fields``: more of this class's fields. A run resumed at step k
        (a hook's ``start``) has losses and times for steps k .. steps - 1."""
        n = len(ranks[0]["step_times"])  # the steps run (all of them, unless resumed)
        replicas: dict = {}
        for r in ranks:
            if r["replica"] is not None:
                parts = replicas.setdefault(r["replica"], [0.0] * n)
                for s, v in enumerate(r["local_losses"]):
                    parts[s] += v
        losses = [sum(p[s] for p in replicas.values()) / len(replicas)
                  for s in range(n)] if replicas else []
        merged = {key: {k: t for r in ranks if r[key] for k, t in r[key].items()}
                  for key in ("state_dict", "grads")}
        return cls(losses=losses, state_dict=merged["state_dict"], grads=merged["grads"],
                   events=[e for r in ranks for e in r["events"]] if run.trace else [],
                   memory=[r["memory"] for r in ranks],
                   step_times=[max(r["step_times"][s] for r in ranks) for s in range(n)],
                   ranks=[{k: r[k] for k in ("rank", "local_losses", "step_times", *extras)}
                          for r in ranks], **fields)


def make_run(run_type: type, worker, gather=None, backend: str | None = None,
             timeout: float = 120.0):
    """A strategy's ``run(run, world_size, timeout)``: check ``run`` (a ``run_type``)
    before any process starts, run ``worker(run)`` on ``world_size`` ranks, and
    ``gather(run, ranks)`` the result (default ``RunResult.gather``)."""
    gather = gather or RunResult.gather

    def run(run, world_size: int, timeout: float = timeout):
        from .launch import launch
        if not isinstance(run, run_type):
            raise ValueError(f"run must be a {run_type.__name__}, got {type(run).__name__}")
        run.check(world_size)
        return gather(run, launch(worker, world_size, run, timeout=timeout, backend=backend))

    run.__doc__ = (f"Check a ``{run_type.__name__}``, train it on ``world_size`` ranks "
                   f"(``{worker.__module__}.{worker.__name__}``) and gather the result.")
    return run

"""Training that stops, saves and resumes, on any layout: one rank's side, on the lab's
one training loop (``parlab.runs.train``) with ``parlab.checkpoint.Checkpointing``.

``Layout("ours", dp)``: the lab's ``FullyShard`` (ZeRO-3) over dp ranks, its AdamW over the
shards; ``Layout("fsdp2", dp)``: torch's FSDP2; ``Layout("one", 1)``: one device, the
reference. All three are ``parlab.zero``'s run (``ZeroRun`` at stage 3, "fsdp2", stage 0
on one rank), so every layout trains the same model on the same global batches: step s
uses ``data.get_batch(s, ...)``, rank r its slice of rows. Dropout (``GlobalDropout``,
attached to the embeddings from outside) draws its mask for the *whole* global batch from
torch's global RNG, seeded alike on every rank, and keeps its rows: so the RNG is one
replicated stream whose state does not depend on the layout, and a run resumed on
another layout draws the masks the uninterrupted one would have -- if the RNG state was
restored.

``train_rank(spec)`` runs steps ``start .. spec.steps - 1``: it starts from scratch, or
resumes from ``spec.resume_from`` (resharding to this layout); after step k-1 it saves
when k is in ``spec.save_at``. What the lesson does to it is attached from outside too:
``spec.planted`` restores wrongly on purpose (for the tests and the notebook):
"no_optimizer" (fresh AdamW states), "data_off_by_one" (next step + 1), "no_rng" (the new
process's RNG); ``spec.kill`` makes a rank die before a step; ``spec.log`` keeps a line
per step for the failover lesson.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from parlab.checkpoint import Checkpointing, restore_train_state
from parlab.model import GPT, GPTConfig
from parlab.runs import Hook, Recipe, train
from parlab.validate import check_choice, check_float, check_int, shown
from parlab.zero import ZeroRecipe, ZeroRun
from . import checks

KINDS = ("one", "ours", "fsdp2")
PLANTED = (None, "no_optimizer", "data_off_by_one", "no_rng")
RNG_SEED = 1234  # the replicated dropout stream's seed, the same on every rank
STAGE = {"ours": 3, "fsdp2": "fsdp2"}  # the sharded layouts as ZeRO runs


@dataclass(frozen=True)
class Layout:
    kind: str = "ours"
    dp: int = 1

    def __post_init__(self):
        # a typo ("our", "fsdp") would otherwise train as plain DP (stage 0) and label it
        check_choice("kind", self.kind, KINDS)
        # not the launcher's local cap: under torchrun dp may span nodes (a local launch
        # caps it); but each rank trains at least one row of a batch of at most MAX_BATCH
        check_int("dp", self.dp, 1, checks.MAX_BATCH)
        if self.kind == "one" and self.dp != 1:
            raise ValueError(f"dp={self.dp}: Layout('one') is one device, dp=1")

    @property
    def label(self) -> str:
        return "one device" if self.kind == "one" else f"{self.kind} dp{self.dp}"


@dataclass(frozen=True)
class Spec:
    """One rank's job; see the module doc. ``resume_hook(train_state) -> next step``
    replaces the restore of the data position and RNG (the notebook's exercise)."""
    config: GPTConfig
    layout: Layout = field(default_factory=Layout)
    steps: int = 6
    batch_size: int = 8
    lr: float = 3e-3
    dropout: float = 0.1
    seed: int = 0
    directory: str | None = None
    save_at: tuple = ()
    resume_from: str | None = None
    planted: str | None = None
    kill: tuple | None = None   # (rank, step): that rank SIGKILLs itself before the step
    log: str | None = None      # rank 0 appends "step loss time" lines here (failover)
    # this lesson resumes on other layouts on purpose (§1): False refuses a checkpoint
    # saved at another layout, as ``Checkpointing`` does by default (a config that differs
    # is refused either way)
    reshard: bool = True

    def __post_init__(self):
        """Every field checked when the spec is made, before any rank gets it."""
        checks.config(self.config)
        if not isinstance(self.layout, Layout):
            raise ValueError(f"layout={shown(self.layout)} must be a Layout, e.g. "
                             "Layout('ours', 2)")
        checks.steps("steps", self.steps)
        check_int("batch_size", self.batch_size, 1, checks.MAX_BATCH)
        if self.batch_size % self.layout.dp:
            raise ValueError(f"dp={self.layout.dp} must divide batch_size={self.batch_size} "
                             "(each rank trains on an equal slice)")
        check_float("lr", self.lr)
        check_float("dropout", self.dropout, 0.0, strict=False)
        if not self.dropout < 1:
            raise ValueError(f"dropout={self.dropout} must be < 1 (the share of activations "
                             "dropped)")
        check_int("seed", self.seed, 0)
        checks.path("directory", self.directory)
        checks.path("resume_from", self.resume_from)
        checks.path("log", self.log)
        if not isinstance(self.save_at, (tuple, list, range)):
            raise ValueError(f"save_at={shown(self.save_at)} must be a tuple of steps")
        for k in self.save_at:  # saved after step k - 1, so 1 .. steps
            check_int("save_at", k, 1, self.steps)
        if self.save_at and self.directory is None:
            raise ValueError(f"save_at={tuple(self.save_at)} needs a directory to save into")
        check_choice("planted", self.planted, PLANTED)
        if self.kill is not None:
            if not (isinstance(self.kill, (tuple, list)) and len(self.kill) == 2):
                raise ValueError(f"kill={shown(self.kill)} must be (rank, step) or None")
            check_int("kill", self.kill[0], 0, self.layout.dp - 1)
            check_int("kill", self.kill[1], 0, self.steps - 1)

    def run(self) -> ZeroRun:
        """The run this spec trains: ZeRO-3 (ours), FSDP2, or the same fields on one device."""
        return ZeroRun(config=self.config, steps=self.steps, batch_size=self.batch_size,
                       lr=self.lr, seed=self.seed, trace=False,
                       zero_stage=STAGE.get(self.layout.kind, 0))


class OneDevice(Recipe):
    """The reference layout: the whole model and batch in this process, no process group."""

    def __init__(self, run: ZeroRun):
        super().__init__(run)
        self.gpt = self.model = GPT(run.config, run.seed)
        self.optimizer = self.make_optimizer(self.model.parameters())


class GlobalDropout:
    """Dropout on the embeddings' output with a mask drawn for the global batch
    (B, T, d) from the global RNG, this rank keeping rows ``rows`` (see module doc)."""

    def __init__(self, p: float, batch_size: int, rows: slice):
        self.p, self.batch_size, self.rows = p, batch_size, rows

    def __call__(self, module, args, out):
        if self.p == 0 or not module.training:
            return out
        keep = torch.rand(self.batch_size, *out.shape[1:]) >= self.p
        return out * keep[self.rows].to(out.dtype) / (1 - self.p)


# --- what the lesson attaches to the loop -------------------------------------------

def planted_resume(planted: str | None):
    """The restore of the data position and the RNG, right or wrong on purpose."""
    check_choice("planted", planted, PLANTED)
    def resume(saved: dict) -> int:
        if planted == "no_rng":  # the new process's RNG stays: other dropout masks
            return int(saved["step"])
        step = restore_train_state(saved)
        return step + 1 if planted == "data_off_by_one" else step
    return resume


class GlobalLoss(Hook):
    """Each step's loss over the global batch (the mean of the ranks' equal slices), when
    it ended, and, on rank 0, a "step loss time start" line appended to ``log``."""

    def __init__(self, log: str | None = None):
        self.log, self.losses, self.ends, self.first = log, {}, {}, 0

    def start(self, recipe) -> None:
        self.first = None

    def after_step(self, recipe, step: int, loss) -> None:
        mean = torch.tensor(float(loss))
        if recipe.world > 1:
            dist.all_reduce(mean, group=recipe.group)
            mean /= recipe.world
        self.first = step if self.first is None else self.first
        self.losses[step], self.ends[step] = float(mean), time.time()
        if self.log and recipe.rank == 0:
            with open(self.log, "a") as f:
                f.write(f"{step} {self.losses[step]!r} {self.ends[step]!r} {self.first}\n")

    def report(self) -> dict:
        return {"global_losses": dict(self.losses), "step_end": dict(self.ends)}


class KillAt(Hook):
    """A worker's sudden death (a GPU falling off the bus): rank ``rank`` SIGKILLs itself
    before step ``step``, no cleanup; ``log``: when, for the failover lesson."""

    def __init__(self, rank: int, step: int, log: str | None = None):
        self.rank, self.step, self.log = rank, step, log

    def before_step(self, recipe, step: int) -> None:
        if (recipe.rank, step) != (self.rank, self.step):
            return
        if self.log:
            with open(self.log + ".kill", "w") as f:
                f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)


def train_rank(spec: Spec, hook=None) -> dict:
    """One rank of ``spec`` (see the module doc): {"losses": {step: global mean loss},
    "params": full parameters at the end (rank 0), "saved": {step: path}, "start": first
    step trained, "step_end": {step: time.time() at its end}}. ``hook``: the learner's
    resume of the data position and RNG, instead of ours."""
    run = spec.run()
    one = spec.layout.kind == "one"
    run.check(1 if one else dist.get_world_size())
    torch.manual_seed(RNG_SEED + spec.seed)  # the replicated stream, the same everywhere
    recipe = OneDevice(run) if one else ZeroRecipe(run)
    rows = spec.batch_size // recipe.world
    recipe.gpt.wte.register_forward_hook(GlobalDropout(
        spec.dropout, spec.batch_size, slice(recipe.rank * rows, (recipe.rank + 1) * rows)))
    if spec.resume_from:
        torch.manual_seed(987654)  # a new process: whatever its RNG holds is not the run's
    checkpoints = Checkpointing(spec.directory, spec.save_at, spec.resume_from,
                                restore_optimizer=spec.planted != "no_optimizer",
                                resume=hook or planted_resume(spec.planted),
                                reshard=spec.reshard)
    losses = GlobalLoss(spec.log)
    hooks = [checkpoints, losses] + ([KillAt(*spec.kill, spec.log)] if spec.kill else [])
    out = train(recipe, hooks)
    return {"losses": out["global_losses"], "saved": out["saved"], "start": out["first_step"],
            "step_end": out["step_end"], "params": out["state_dict"]}  # (rank 0's, gathered)

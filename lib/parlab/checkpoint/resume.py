"""Saving and resuming inside the one training loop: ``Checkpointing``, a hook of
``runs.train`` (attached from outside, as trace and probes are).

    result = train(recipe, hooks=[Checkpointing(directory, save_at=(4, 8))])
    again = train(other_recipe, hooks=[Checkpointing(resume_from=result_path)])

What the next step depends on is saved after step k - 1 into ``directory/step_0000k``
(PyTorch's DCP recipe; Wang et al., "Gemini", SOSP 2023, §2): the model, the optimizer's
states, the data position (the next step, k: the lab's data is a function of the step)
and the RNG. A resume loads it into whatever layout this run has -- another number of
ranks, our ZeRO-3 or torch's FSDP2 or one device (``state.training_state``): DCP reads
each rank's boxes from what was written -- when asked (``reshard=True``): the saved
config and layout (``run_facts``) are compared with this run's before anything loads,
and a config that differs is refused whatever ``reshard`` says. The loop then starts at
the saved step.
"""

from __future__ import annotations

import dataclasses
import os

import torch

from ..runs import Hook
from .dcp import STEP_DIR, load, save, train_state
from ..runs import TrainRun
from .state import restore_training_state, training_state


def restore_train_state(saved: dict) -> int:
    """The default resume of the data position and the RNG: the RNG put back, the saved
    next step returned (it already is the next step: no + 1)."""
    torch.set_rng_state(saved["rng"])
    return int(saved["step"])


def run_facts(recipe) -> dict:
    """What a checkpoint records of the run that saved it, for a resume to compare:
    "config", the model's (a 2-layer model is not a 1-layer one, whatever loads), and
    "layout", how it is spread: the world size, the recipe, and the strategy's own run
    fields (``zero_stage``, degrees, schedule...: the run's fields beyond ``TrainRun``'s)."""
    run = recipe.run
    base = {f.name for f in dataclasses.fields(TrainRun)}
    own = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in base}
    return {"config": dataclasses.asdict(run.config),
            "layout": {"world_size": recipe.world, "recipe": type(recipe).__name__,
                       "run": type(run).__name__, **own}}


class Checkpointing(Hook):
    """Save after the steps k - 1 for k in ``save_at`` into ``directory`` (step k's
    checkpoint holds the state to train step k next); resume from ``resume_from`` (a
    checkpoint's path) before the first step. ``restore_optimizer=False`` loads the
    weights only (the optimizer starts afresh, as for fine-tuning); ``resume(train_state)
    -> next step`` replaces ``restore_train_state`` (what to do with the data position and
    the RNG). ``reshard=True``: a checkpoint of another layout may load (DCP reshards it);
otherwise a layout that differs is refused, naming the fields. ``saved``: {k: path} of
what this run wrote."""

    def __init__(self, directory: str | None = None, save_at=(), resume_from: str | None = None,
                 restore_optimizer: bool = True, resume=restore_train_state,
                 reshard: bool = False):
        if save_at and directory is None:
            raise ValueError(f"save_at={tuple(save_at)} needs a directory to save into")
        self.directory = directory
        self.save_at = tuple(save_at)
        self.resume_from = resume_from
        self.restore_optimizer = restore_optimizer
        self.resume = resume
        self.reshard = reshard
        self.saved: dict[int, str] = {}

    def start(self, recipe) -> int | None:
        if self.resume_from is None:
            return None
        model_sd, optim_sd = training_state(recipe.model, recipe.optimizer)
        state = {"model": model_sd, "train": train_state(0)}
        if self.restore_optimizer:
            state["optim"] = optim_sd
        load(state, self.resume_from, expect=run_facts(recipe), reshard=self.reshard)
        restore_training_state(recipe.model, recipe.optimizer, state)
        if not self.restore_optimizer:  # its states were made to be loaded into: drop them
            recipe.optimizer.state.clear()
        return self.resume(state["train"])

    def after_step(self, recipe, step: int, loss) -> None:
        if step + 1 not in self.save_at:
            return
        path = os.path.join(self.directory, STEP_DIR.format(step + 1))
        model_sd, optim_sd = training_state(recipe.model, recipe.optimizer)
        save({"model": model_sd, "optim": optim_sd, "train": train_state(step + 1)}, path,
             run=run_facts(recipe))
        self.saved[step + 1] = path

    def report(self) -> dict:
        return {"saved": dict(self.saved)}

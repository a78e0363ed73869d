"""Checkpoints and failures at scale (notebook 08): sharded DCP checkpoints that reshard
(``dcp_state``, ``checkpoint``), a training loop that saves and resumes on any layout
(``training``), sync vs async saves (``stall``), a real failure and restart under
torchrun (``failover``, ``elastic_worker``), DTensor TP resharded (``tp_resume``) and
stragglers (``stragglers``). The
formulas are in ``parlab.cost.reliability``."""

from .checkpoint import bytes_per_rank, latest, load, save, train_state
from .dcp_state import flat_boxes, fully_shard_state, torch_state
from .failover import FailoverError, failover
from . import tp_resume  # noqa: F401  (DTensor TP: save at dp2·tp2, resume at tp4)
from .training import GlobalDropout, Layout, Spec, train_rank

__all__ = ["bytes_per_rank", "latest", "load", "save", "train_state", "flat_boxes",
           "fully_shard_state", "torch_state", "FailoverError", "failover", "GlobalDropout",
           "Layout", "Spec", "train_rank"]

"""Sharded checkpoints with ``torch.distributed.checkpoint`` (DCP), read in this order:

  state.py  the state dicts DCP can save and reshard: our ``FullyShard``'s flat shards as
            boxes of the global tensors (``fully_shard_state``), torch FSDP2's own
            (``torch_state``), AdamW's moments keyed by parameter name
  dcp.py    one training state saved and loaded, sync or async (``save``, ``load``), the
            step directories and which of them is complete (``latest``)
  resume.py ``Checkpointing``: a hook of the one training loop that saves after given
            steps and resumes a run (at any layout) where a checkpoint left off

A checkpoint saved at one layout (dp4, our ZeRO-3) loads at another (dp2, FSDP2): keys and
global shapes agree, DCP reads each loading rank's boxes from whatever was written. The
formulas (checkpoint bytes, the Young/Daly interval, goodput) are in ``parlab.cost``.
"""

from .dcp import STEP_DIR, bytes_per_rank, latest, load, save, train_state
from .resume import Checkpointing, restore_train_state
from .state import flat_boxes, fully_shard_state, torch_state, training_state

__all__ = ["STEP_DIR", "bytes_per_rank", "latest", "load", "save", "train_state", "flat_boxes",
           "fully_shard_state", "torch_state", "training_state", "Checkpointing",
           "restore_train_state"]

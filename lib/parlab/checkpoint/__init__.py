"""Sharded checkpoints with ``torch.distributed.checkpoint`` (DCP), read in this order:

  state.py  the state dicts DCP can save and reshard: our ``FullyShard``'s flat shards as
            boxes of the global tensors (``fully_shard_state``), torch FSDP2's own
            (``torch_state``), AdamW's moments keyed by parameter name
  dcp.py    one training state saved and loaded, sync or async (``save``, ``load``)
  integrity.py  published by a rename once whole, with a manifest of sizes and checksums
            and the run's config and layout, all checked before loading; the newest
            good step directory (``latest``)
  resume.py ``Checkpointing``: a hook of the one training loop that saves after given
            steps and resumes a run (at any layout) where a checkpoint left off

A checkpoint saved at one layout (dp4, our ZeRO-3) loads at another (dp2, FSDP2), when
asked (``reshard=True``): keys and global shapes agree, DCP reads each loading rank's
boxes from whatever was written. The formulas (checkpoint bytes, the Young/Daly
interval, goodput) are in ``parlab.cost``.
"""

from .dcp import STEP_DIR, bytes_per_rank, load, save, train_state
from .integrity import (MANIFEST, CheckpointError, CheckpointMismatch, clean, complete, latest,
                        verify)
from .resume import Checkpointing, restore_train_state, run_facts
from .state import flat_boxes, fully_shard_state, torch_state, training_state

__all__ = ["MANIFEST", "STEP_DIR", "CheckpointError", "CheckpointMismatch", "bytes_per_rank",
           "clean", "complete", "latest", "load", "save", "train_state", "verify", "flat_boxes",
           "fully_shard_state", "torch_state", "training_state", "Checkpointing",
           "restore_train_state", "run_facts"]

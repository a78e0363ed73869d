"""Context parallelism: the sequence itself is split over the ranks, read in this order:

  layout.py   which positions each rank holds: contiguous, or zigzag (load-balanced)
  ring.py     ring attention (Liu et al. 2023): K/V blocks go round, online-softmax merge
  ulysses.py  DeepSpeed-Ulysses (Jacobs et al. 2023): all-to-all to head shards and back
  apply.py    apply_context_parallel: a model's attention cores made context-parallel
              (returns their names; a model without one is a ValueError)
  runner.py   CPRun and run(): the lab's run convention
"""

from .layout import LAYOUTS, shard_positions, shard_sequence, unshard_sequence
from .apply import apply_context_parallel, context_parallel_core, sync_grads
from .ring import ring_attention
from .runner import CPRun, collect, run, train_worker
from .ulysses import ulysses_attention

__all__ = ["LAYOUTS", "shard_sequence", "unshard_sequence", "shard_positions",
           "ring_attention", "ulysses_attention", "apply_context_parallel",
           "context_parallel_core", "sync_grads", "CPRun", "run",
           "train_worker", "collect"]

"""N-D parallelism composed from the strategies' parts: tensor parallelism inside each
pipeline stage, pipeline parallelism across stages, context parallelism over the
sequence, expert parallelism folded over the data-parallel ranks, and data parallelism
(ZeRO 0-3) across replicas, on a ``mesh.Mesh(dp, pp, cp, tp, ep)`` -- PTD-P (Narayanan
et al. 2021, SC21) grown to the layouts Llama 3 and DeepSeek-V3 train with. Read in
this order:

  ../mesh.py   the named axes: which ranks share a TP group, a PP stage, a DP replica
  runner.py    NDRun (checked before any process starts), the composition, run()
  dp_sync.py   after the flush: ZeRO stage 0-3 over the right groups, and the full state
  clip.py      clipping by the global gradient norm over the mesh
  emulated.py  emulated compute that still issues the TP collectives (timing sweeps)

    result = run(NDRun(config=GPTConfig(...), dp=2, pp=2, tp=2, micro_batches=4), 8)
"""

from ..mesh import Mesh
from .dp_sync import DataParallel
from .emulated import EmulatedTPCompute
from .runner import NDRecipe, NDRun, collect, run, train_worker

__all__ = ["Mesh", "NDRun", "NDRecipe", "run", "collect", "train_worker", "DataParallel",
           "EmulatedTPCompute"]

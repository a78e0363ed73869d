"""3D parallelism, PTD-P (Narayanan et al. 2021, SC21): tensor parallelism inside each
pipeline stage, pipeline parallelism across stages, data parallelism (or ZeRO-1) across
replicas, on a ``mesh.Mesh(dp, pp, tp)``. Read in this order:

  ../mesh.py   the named axes: which ranks share a TP group, a PP stage, a DP replica
  stages.py    TPStage (TP blocks cut into a pipeline stage) and its compute objects
  replicas.py  after the flush: gradients averaged over the DP group, or ZeRO-1
  runner.py    Run3D (checked before any process starts), run(), collect()

    result = run(Run3D(config=GPTConfig(...), dp=2, pp=2, tp=2, micro_batches=4), 8)
"""

from ..mesh import Mesh
from .replicas import ReplicaAllReduce, ReplicaZero1
from .runner import Run3D, collect, run, train_worker
from .stages import EmulatedTPCompute, TPStage, build_tp_stage

__all__ = ["Mesh", "Run3D", "run", "collect", "train_worker", "TPStage", "build_tp_stage",
           "EmulatedTPCompute", "ReplicaAllReduce", "ReplicaZero1"]

"""ZeRO (Rajbhandari et al., SC 2020), stages 0-3, and PyTorch's FSDP2 (notebook 01).
Read in this order:

  stages.py       Stage0DP (plain DP) -> ZeroStage1 (P_os) -> ZeroStage2 (P_os+g)
  stage3.py       ZeroStage3 (P_os+g+p): parameters gathered just in time
  flat.py         the layout: parameters flattened into one buffer per bucket / unit
  collectives.py  the async reduce-scatter, all-gather and all-reduce they launch
  probes.py       MemoryProbe and Tracer: instrumentation the runner passes in
  peers.py        TorchPeer: FSDP2 (fully_shard) and DDP behind the same interface
  runner.py       ZeroRun (checked before any process starts), run(), the rank worker
  experiments.py  step_times: ours and PyTorch's, interleaved in the same processes
  widgets.py      the memory calculator (notebook 01)

    result = parlab.zero.run(ZeroRun(steps=3, batch_size=8, zero_stage=2), 4)
"""

from .flat import Flat  # noqa: F401
from .peers import PEERS, TorchPeer  # noqa: F401
from .probes import MemoryProbe, Tracer  # noqa: F401
from .runner import CLASSES, ZeroRun, collect, make, run, train_worker  # noqa: F401
from .stage3 import ZeroStage3  # noqa: F401
from .stages import BUCKET_BYTES, STAGES, Stage0DP, ZeroStage1, ZeroStage2  # noqa: F401

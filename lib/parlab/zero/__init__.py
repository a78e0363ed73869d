"""ZeRO (Rajbhandari et al., SC 2020), stages 1-3, and PyTorch's FSDP2 (notebook 01).

  stages.py       ZeroDP: each stage partitions one more model state over the dp ranks
  peers.py        TorchPeer: FSDP2 (fully_shard) and DDP behind the same interface
  runner.py       run(): check, launch, gather
  experiments.py  step_times: ours and PyTorch's, interleaved in the same processes
  widgets.py      the memory calculator (notebook 01)
"""

from .peers import PEERS, TorchPeer  # noqa: F401
from .runner import make, run, train_worker  # noqa: F401
from .stages import STAGES, Unit, ZeroDP  # noqa: F401

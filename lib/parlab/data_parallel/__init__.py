"""Data parallelism (taught in notebook 01; lessons/l01_data_parallel). Read in this order:

  grad_sync.py    the one gradient-sync interface of every data-parallel part (DP, ZeRO,
                  FSDP, HSDP): finished inside backward, no_sync(), finish_grad_sync()
  ddp.py          NaiveDP and BucketedDP (DDP's buckets, overlapped with backward)
  compression.py  CompressedDP: fp16 / top-k / 1-bit sign gradients with error feedback
  peers.py        TorchDDP, PyTorch's DistributedDataParallel (DPRun(variant="ddp"))
  runner.py       DPRun (checked before any process starts), run(), the rank worker
  
    result = parlab.data_parallel.run(DPRun(steps=3, batch_size=8, variant="bucketed"), 2)
"""

from ..trace import overlap_fraction  # noqa: F401
from .compression import COMPRESSORS, CompressedDP  # noqa: F401
from .ddp import BucketedDP, NaiveDP, assign_buckets  # noqa: F401
from .grad_sync import GradSync  # noqa: F401
from .peers import TorchDDP  # noqa: F401
from .runner import VARIANTS, DPRun, collect, make_dp, run, train_worker  # noqa: F401

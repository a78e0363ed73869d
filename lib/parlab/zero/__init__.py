"""ZeRO (Rajbhandari et al., SC 2020), stages 0-3, and PyTorch's FSDP2 (taught in notebook 01).
Read in this order:

  flat.py         how each tensor is cut into one chunk per rank (ShardLayout: FSDP2's
                  per-parameter sharding, ZeRO-3), or a group of tensors laid end to end
                  and cut in one block per rank (FlatLayout: ZeRO-1/2's parameters live
                  in it), and the buffers one collective moves
  sharded.py      ShardedOptimizer: stages 1 (P_os) and 2 (P_os+g), any elementwise
                  optimizer over any parameters
  fully_shard.py  FullyShard: stage 3 (P_os+g+p) over any module, units gathered just
                  in time; fp16/bf16 compute over fp32 master shards
  prefetch.py     Prefetcher: the next unit's all-gather issued before this unit computes
  hybrid.py       HybridShard: HSDP, ZeRO-3 within a node and replicas across nodes
  stages.py       apply_zero(module, stage, group): a stage to the part that implements it
                  (used by the ZeRO run and every composed run)
  probes.py       MemoryProbe and Tracer: instrumentation the runner passes in
  peers.py        torch_peer: FSDP2 (fully_shard), DDP and ZeroRedundancyOptimizer on the same model
                  (ZeroRun(zero_stage="fsdp2" / "ddp" / "zero_redundancy"))
  runner.py       ZeroRun (checked before any process starts), run(): the stages applied
                  to the lab's GPT

Every part finishes its gradient reduction inside backward (data_parallel/grad_sync.py).

    opt = ShardedOptimizer(model.parameters(), torch.optim.AdamW, group, stage=2, lr=1e-3)
    model = FullyShard(model, group); opt = torch.optim.AdamW(model.parameters())
    result = parlab.zero.run(ZeroRun(steps=3, batch_size=8, zero_stage=2), 4)
"""

from .flat import FlatLayout, ShardLayout  # noqa: F401
from .fully_shard import FullyShard  # noqa: F401
from .hybrid import HybridShard, hsdp_groups  # noqa: F401
from .prefetch import Prefetcher  # noqa: F401
from .peers import PEERS, torch_peer  # noqa: F401
from .probes import MemoryProbe, Tracer  # noqa: F401
from .runner import ZeroRecipe, ZeroRun, collect, run, train_worker  # noqa: F401
from .stages import Zero, apply_zero  # noqa: F401
from .sharded import ELEMENTWISE, ShardedOptimizer  # noqa: F401

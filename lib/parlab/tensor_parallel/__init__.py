"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) and sequence parallelism
(Korthikanti et al. 2022), read in this order:

  mappings.py  f, g and sequence parallelism's pair, as autograd functions
  layers.py    ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
               vocab_parallel_cross_entropy
  model.py     the reference GPT, tensor-parallel over one process group
  runner.py    TPRun and run(): the lab's run convention
  peers.py     PyTorch's own tensor parallelism (DTensor) on the same model
"""

from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                     vocab_parallel_cross_entropy)
from .mappings import f, g, sp_gather, sp_reduce_scatter
from .model import TPGPT, sync_sequence_parallel_grads
from .runner import TPRun, collect, run, train_worker

__all__ = ["f", "g", "sp_gather", "sp_reduce_scatter", "ColumnParallelLinear",
           "RowParallelLinear", "VocabParallelEmbedding", "vocab_parallel_cross_entropy",
           "TPGPT", "sync_sequence_parallel_grads", "TPRun", "run", "train_worker", "collect"]

"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) and sequence parallelism
(Korthikanti et al. 2022), read in this order:

  mappings.py     f, g and sequence parallelism's pair, as autograd functions of (x, group)
  collective_matmul.py  SP's forward all-gather -> GEMM and GEMM -> reduce-scatter, chunked
                  and pipelined (Wang et al. 2023); layers.all_gather_matmul uses it
  layers.py       ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding (each
                  .from_linear / .from_embedding of a full layer), vocab_parallel_cross_entropy
  parallelize.py  parallelize(model, plan, group): swap submodules by a name -> style plan;
                  the lab's GPT's plan; the sequence-parallel gradient sum; reassembly
  runner.py       TPRun and run(): the lab's run convention
  peers.py        PyTorch's own tensor parallelism (DTensor) on the same model

    parallelize(model, {"fc1": Colwise(), "fc2": Rowwise()}, group)
"""

from .collective_matmul import matmul_reduce_scatter
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                     all_gather_matmul, vocab_parallel_cross_entropy)
from .mappings import f, g, sp_gather, sp_reduce_scatter
from .parallelize import (Colwise, Rowwise, SequenceParallel, VocabParallel, check_tp,
                          full_tensors, gpt_plan, parallelize, parallelize_gpt,
                          recompute_attention, sync_sequence_parallel_grads)
from .runner import TPRecipe, TPRun, collect, run, train_worker

__all__ = ["f", "g", "sp_gather", "sp_reduce_scatter", "all_gather_matmul", "matmul_reduce_scatter", "ColumnParallelLinear",
           "RowParallelLinear", "VocabParallelEmbedding", "vocab_parallel_cross_entropy",
           "Colwise", "Rowwise", "SequenceParallel", "VocabParallel", "parallelize",
           "gpt_plan", "parallelize_gpt", "check_tp", "full_tensors", "recompute_attention",
           "sync_sequence_parallel_grads", "TPRecipe", "TPRun", "run", "train_worker", "collect"]

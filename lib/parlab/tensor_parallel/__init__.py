"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) and sequence parallelism
(Korthikanti et al. 2022), read in this order:

  mappings.py     f, g and sequence parallelism's pair, as autograd functions of (x, group)
  collective_matmul.py  SP's forward all-gather -> GEMM and GEMM -> reduce-scatter, chunked
                  and pipelined (Wang et al. 2023); layers.all_gather_matmul uses it
  layers.py       ColumnParallelLinear, RowParallelLinear (each .from_module of a full
                  nn.Linear or GPT-2's Conv1D), VocabParallelEmbedding (.from_embedding),
                  vocab_parallel_cross_entropy
  parallelize.py  apply_tensor_parallel(model, plan, group): swap submodules by a name ->
                  style plan, returning their names; the lab's GPT's plan; the
                  sequence-parallel gradient sum; reassembly
  runner.py       TPRun and run(): the lab's run convention
  peers.py        PyTorch's own tensor parallelism (DTensor) on the same model
                  (TPRun(peer="dtensor"))

    apply_tensor_parallel(model, {"fc1": Colwise(), "fc2": Rowwise()}, group)
    apply_tensor_parallel(gpt, gpt_plan(gpt.config), group)   # the lab's GPT
"""

from .collective_matmul import matmul_reduce_scatter
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                     all_gather_matmul, vocab_parallel_cross_entropy)
from .mappings import f, g, sp_gather, sp_reduce_scatter
from .parallelize import (Colwise, Rowwise, SequenceParallel, VocabParallel, VocabParallelLoss,
                          apply_tensor_parallel, check_tp, full_tensors, gpt_plan,
                          recompute_attention, sync_sequence_parallel_grads)
from .runner import TPRecipe, TPRun, collect, run, train_worker

__all__ = ["f", "g", "sp_gather", "sp_reduce_scatter", "all_gather_matmul", "matmul_reduce_scatter", "ColumnParallelLinear",
           "RowParallelLinear", "VocabParallelEmbedding", "vocab_parallel_cross_entropy",
           "Colwise", "Rowwise", "SequenceParallel", "VocabParallel", "VocabParallelLoss",
           "apply_tensor_parallel", "gpt_plan", "check_tp", "full_tensors", "recompute_attention",
           "sync_sequence_parallel_grads", "TPRecipe", "TPRun", "run", "train_worker", "collect"]

"""Analytic cost models: every formula the notebooks compare measurements against.

Formulas live here once; notebooks and widgets call them, never retype them.
Units: bytes, seconds, bytes/second, FLOP, FLOP/s. Pure Python (no torch). Every
function checks its arguments first: a non-finite or out-of-domain value is a
ValueError naming the argument (each module's docstring states its domains).

  collectives    the alpha-beta model (Hockney; Thakur et al.): COLLECTIVES, ALGORITHMS,
                 collective_steps, collective_bytes, reduced_bytes, collective_time,
                 p2p_time, ring_tree_crossover; nccl-tests' bus_bandwidth_factor,
                 bus_bandwidth; AlphaBetaFit, fit_alpha_beta; NCCL's own model across
                 nodes: NCCL_BASE_US, NCCL_HOP_US, nccl_latency, nccl_collective_time (ring
                 or tree, the faster)
  compute        transformer_params (Kaplan et al.); FLOP_COUNTS, flops_per_token: model or
                 hardware FLOPs per token, counted as Kaplan et al., PaLM or Megatron-LM
                 (Narayanan et al.) do, over N or a LayerShape; mfu (PaLM), mfu_from_hfu,
                 training_time (Narayanan et al.)
  pipeline       PIPELINE_SCHEDULES, bubble_fraction, bubble_ratio, min_micro_batches,
                 pipeline_peak_activations (GPipe; Narayanan et al.), split_backward_bubble
                 (Qi et al.'s zero-bubble schedules), dualpipe_bubble (DeepSeek-V3),
                 interleaved_memory_factor
  memory         ZERO_STAGES, zero_memory, zero_comm_volume (ZeRO); RECOMPUTE (RECOMPUTE_KINDS), LAYERS,
                 activation_memory (Korthikanti et al.'s inventory: their GPT layer, the
                 lab's own, or a LayerShape; TP, SP, CP, recomputation, fused attention),
                 activation_table (their Table 2)
  fit            does it fit? ModelPreset, MODEL_PRESETS, memory_plan, max_micro_batch
  data_parallel  dp_step_time, dp_speedup (PyTorch DDP, Li et al.)
  fsdp          fsdp_comm_volume, fsdp_gathered_peak (resharding, prefetch; Zhao et al.),
                 hsdp_comm_volume (hybrid sharding), zeropp_comm_volume (ZeRO++),
                 zero_offload_traffic (ZeRO-Offload); unit by unit: FSDP_IMPLS
                 (DeepSpeed 2021, FSDP2), fsdp_unit_messages, fsdp_unit_exposed,
                 fsdp_step_exposed, fsdp_accumulation (reshard or keep across micro-batches)
  tensor_parallel  tp_comm_per_layer (Megatron-LM, Shoeybi et al.; sequence parallelism,
                 Korthikanti et al.), tp_scaling, tp_scaling_curve (one TP group on
                 NVLink or across nodes)
  context_parallel  CP_METHODS, CP_LAYOUTS, cp_comm_per_layer (ring attention, Liu et al.;
                 DeepSpeed-Ulysses, Jacobs et al.; Megatron SP for comparison),
                 causal_work_per_rank (contiguous vs zigzag), attention_memory_per_rank
  expert_parallel  expert_capacity (Switch, Fedus et al.; GShard, Lepikhin et al.),
                 moe_all_to_all_bytes (dispatch + combine), moe_flops_per_token (one MoE
                 layer's router and experts, capacity padding included),
                 moe_params (total vs active; Mixtral, Jiang et al.), moe_remote_copies
                 (tokens leaving a node: all-to-all vs a deduplicating dispatcher),
                 fine_grained_experts (DeepSeekMoE), expert_choice_coverage (Zhou et al.),
                 grouped_gemm_rows / grouped_gemm_flops (dropless, MegaBlocks)
  kernels       one GPU's kernels: gemm_quantization, gemm_time (tiles, waves, roofline),
                 ELEMENTWISE bytes per operator, LOSS_KERNELS / loss_bytes (the
                 cross-entropy by implementation), attention_flops, attention_time (fused or
                 materialized), softmax_exp_factor (matmul against the exponentials' units)
  transformer   LayerShape (GPT or Llama-style, GQA, SwiGLU, MoE), layer_params,
                 embedding_params, layer_gemms, layer_elementwise, logits_gemm, op_recomputed
  network       members_per_domain, group_bandwidth, group_collective_time: a group's
                 traffic over NVLink or the node's network cards (rails; all-to-all);
                 moe_dispatch_time; network_scaling (bus bandwidth as rings span more nodes)
  step          Device, layer_time, logits_time, optimizer_time: a GPU's computation
  planning      pipeline_p2p_time, dp_grad_sync (exposed vs overlapped), chunked_sync_exposed
                 (the same sync, chunk by chunk under interleaving), offload_exposed
                 (activation offloading's copies), interleaved_peak_activations,
                 data_parallel_degree -- for parlab.planner
  precision     FORMATS (bits), unit_roundoff, ulp, vanishing_update, summation_error_bound
                 (Higham), RECIPES, training_bytes_per_param, training_bytes (ZeRO's 16 B);
                 TRAINING_DTYPES (bf16 .. mxfp8, nvfp4 with their block scales),
                 bytes_per_element
  clip          clip_norm_overcount: the global gradient norm of a split model with the
                 TP-replicated parameters counted tp times, or summed over DP too
"""

from .collectives import (ALGORITHMS, COLLECTIVES, NCCL_BASE_US, AlphaBetaFit, bus_bandwidth,
                          hierarchical_all_reduce_bytes, in_network_all_reduce_bytes,
                          bus_bandwidth_factor, collective_bytes, collective_steps,
                          collective_time, fit_alpha_beta, p2p_time, reduced_bytes,
                          ring_tree_crossover, NCCL_HOP_US, nccl_latency, nccl_collective_time)
from .compute import (FLOP_COUNTS, flops_per_token, mfu, mfu_from_hfu, training_time,
                      transformer_params)
from .data_parallel import dp_speedup, dp_step_time, onebit_adam_volume_ratio
from .fsdp import (FSDP_IMPLS, fsdp_accumulation, fsdp_comm_volume, fsdp_gathered_peak,
                   fsdp_step_exposed, fsdp_unit_exposed, fsdp_unit_messages, hsdp_comm_volume,
                   zero_offload_traffic, zeropp_comm_volume)
from .memory import (LAYERS, RECOMPUTE, RECOMPUTE_KINDS, ZERO_STAGE_NAMES, ZERO_STAGES,
                     activation_memory, activation_table, zero_comm_volume, zero_memory)
from .fit import MODEL_PRESETS, ModelPreset, max_micro_batch, memory_plan
from .pipeline import (PIPELINE_SCHEDULES, bubble_fraction, bubble_ratio, dualpipe_bubble,
                       interleaved_memory_factor, min_micro_batches, pipeline_peak_activations,
                       split_backward_bubble)
from .tensor_parallel import (chunked_overlap, tp_comm_per_layer, tp_forward_overlap, tp_scaling,
                              tp_scaling_curve)
from .context_parallel import (CP_LAYOUTS, CP_METHODS, attention_memory_per_rank,
                               causal_work_per_rank, cp_comm_per_layer)
from .expert_parallel import (expert_capacity, expert_choice_coverage, fine_grained_experts,
                              grouped_gemm_flops, grouped_gemm_rows, moe_all_to_all_bytes,
                              moe_flops_per_token, moe_params, moe_remote_copies)
from .kernels import (ATTENTION, EAGER_OPS, ELEMENTWISE, FUSED_BACKWARD, GEMM_TILES,
                      LOSS_KERNELS, SOFTMAX_FLOPS_PER_EXP, attention_flops, attention_time,
                      elementwise_bytes, gemm_quantization, gemm_time, loss_bytes,
                      softmax_exp_factor)
from .transformer import (MLPS, NORMS, LayerShape, embedding_params, layer_elementwise, layer_gemms,
                          layer_params, logits_gemm, op_recomputed)
from .network import (group_bandwidth, group_collective_time, members_per_domain,
                      moe_dispatch_time, network_scaling)
from .step import ADAM_BYTES_PER_PARAM, Device, layer_time, logits_time, optimizer_time
from .planning import (chunked_sync_exposed, data_parallel_degree, dp_grad_sync,
                       interleaved_peak_activations, offload_exposed, pipeline_p2p_time)
from .precision import (FORMATS, LOW_PRECISION, RECIPES, TRAINING_DTYPES, bytes_per_element,
                        mantissa_bits, summation_error_bound, training_bytes,
                        training_bytes_per_param, ulp, unit_roundoff, vanishing_update)
from .clip import clip_norm_overcount
from .reliability import (checkpoint_bytes, checkpoint_seconds, daly_interval, goodput, goodput_curve,
                          implied_gpu_mtbf_hours, interruptions_per_day, job_mtbf_hours,
                          pipeline_time_with_straggler, restart_for_goodput, synchronous_step,
                          young_interval)

__all__ = [
    "COLLECTIVES", "ALGORITHMS", "collective_steps", "collective_bytes", "reduced_bytes",
    "collective_time", "p2p_time", "ring_tree_crossover", "bus_bandwidth_factor",
    "bus_bandwidth", "AlphaBetaFit", "fit_alpha_beta", "hierarchical_all_reduce_bytes",
    "in_network_all_reduce_bytes", "NCCL_BASE_US", "NCCL_HOP_US", "nccl_latency", "nccl_collective_time",
    "transformer_params", "FLOP_COUNTS", "flops_per_token", "mfu", "mfu_from_hfu",
    "training_time",
    "PIPELINE_SCHEDULES", "bubble_fraction", "bubble_ratio", "min_micro_batches",
    "pipeline_peak_activations", "split_backward_bubble", "dualpipe_bubble",
    "interleaved_memory_factor",
    "ZERO_STAGES", "ZERO_STAGE_NAMES", "zero_memory", "zero_comm_volume", "RECOMPUTE", "RECOMPUTE_KINDS", "LAYERS",
    "activation_memory", "activation_table",
    "ModelPreset", "MODEL_PRESETS", "memory_plan", "max_micro_batch",
    "dp_step_time", "dp_speedup", "onebit_adam_volume_ratio",
    "fsdp_comm_volume", "fsdp_gathered_peak", "hsdp_comm_volume", "zeropp_comm_volume",
    "zero_offload_traffic", "FSDP_IMPLS", "fsdp_unit_messages", "fsdp_unit_exposed",
    "fsdp_accumulation", "fsdp_step_exposed",
    "tp_comm_per_layer", "tp_scaling", "tp_scaling_curve", "chunked_overlap", "tp_forward_overlap",
    "CP_METHODS", "CP_LAYOUTS", "cp_comm_per_layer", "causal_work_per_rank",
    "attention_memory_per_rank",
    "expert_capacity", "moe_all_to_all_bytes", "moe_flops_per_token", "moe_params",
    "moe_remote_copies", "fine_grained_experts", "expert_choice_coverage", "grouped_gemm_rows",
    "grouped_gemm_flops",
    "GEMM_TILES", "ELEMENTWISE", "EAGER_OPS", "ATTENTION", "gemm_quantization", "gemm_time",
    "elementwise_bytes", "LOSS_KERNELS", "loss_bytes", "FUSED_BACKWARD", "attention_flops",
    "attention_time",
    "SOFTMAX_FLOPS_PER_EXP", "softmax_exp_factor",
    "MLPS", "NORMS", "LayerShape", "layer_params", "embedding_params", "layer_gemms",
    "layer_elementwise", "logits_gemm", "op_recomputed",
    "members_per_domain", "group_bandwidth", "group_collective_time", "moe_dispatch_time",
    "network_scaling",
    "Device", "ADAM_BYTES_PER_PARAM", "layer_time", "logits_time", "optimizer_time",
    "pipeline_p2p_time", "dp_grad_sync", "chunked_sync_exposed",
    "offload_exposed", "interleaved_peak_activations", "data_parallel_degree",
    "FORMATS", "RECIPES", "TRAINING_DTYPES", "LOW_PRECISION",
    "bytes_per_element", "mantissa_bits", "unit_roundoff", "ulp", "vanishing_update",
    "summation_error_bound", "training_bytes_per_param", "training_bytes",
    "checkpoint_bytes", "checkpoint_seconds", "interruptions_per_day", "job_mtbf_hours",
    "implied_gpu_mtbf_hours", "young_interval", "daly_interval", "goodput", "goodput_curve",
    "restart_for_goodput", "pipeline_time_with_straggler", "synchronous_step",
    "clip_norm_overcount",
]

"""The interview text's factual claims, sentence by sentence, in its order: the checklist
the claims table must cover (a test holds ``followups.claims()`` to it). Each entry:
(id, the part of the text it comes from, the claim in our words). Framing, advice without
a checkable content and anecdotes (a 1.3B demo "on 4 cards") are left out."""

from __future__ import annotations

STANDARD = "standard answer"
THIRTY = "30-second template"
MISTAKES = "common mistakes"
RESUME = "résumé advice"
READING = "reading list"

SEED_CLAIMS: tuple[tuple[str, str, str], ...] = (
    # the standard answer: DP
    ("four_kinds", STANDARD, "Four kinds of parallelism: data, tensor, pipeline, expert"),
    ("dp_idea", STANDARD, "DP: a full copy per GPU, its own data, gradients all-reduced after "
                          "backward"),
    ("dp_when", STANDARD, "DP is for a model that fits on one GPU"),
    ("dp_linear", STANDARD, "DP's communication grows linearly with the GPUs"),
    ("ddp_ring", STANDARD, "PyTorch DDP uses ring all-reduce by default"),
    ("ring_o1", STANDARD, "Ring all-reduce takes DP's communication from O(N) to O(1)"),
    ("cross_node_batch", STANDARD, "Fine within 8 GPUs; across nodes, raise the batch size to "
                                   "synchronise less often"),
    ("compression_cost", STANDARD, "Gradient compression (1-bit SGD) cuts traffic but may hurt "
                                   "convergence"),
    ("compression_10g", STANDARD, "Use gradient compression only below 10 Gbps"),
    # TP
    ("tp_idea", STANDARD, "TP splits each matmul over GPUs and all-reduces the partial results"),
    ("tp_columns", STANDARD, "Megatron splits Q/K/V by columns and the output projection by rows"),
    ("tp_once", STANDARD, "TP communicates once per step"),
    ("tp_layer_gb", STANDARD, "TP is for a layer that does not fit: 175B has 2.8 GB of "
                              "parameters plus activations per layer"),
    ("tp_fwd_bwd_once", STANDARD, "Each layer does one all-reduce in forward and one in backward"),
    ("nvlink_600", STANDARD, "A DGX A100's NVLink gives 600 GB/s"),
    ("tp_cross_node", STANDARD, "TP works best in one node; across nodes network latency makes "
                                "its efficiency collapse"),
    # PP
    ("pp_idea", STANDARD, "PP puts consecutive layers on different GPUs; data flows through "
                          "them like a pipeline"),
    ("pp_schedules", STANDARD, "The classic schedules: GPipe (micro-batches) and 1F1B"),
    ("pp_when", STANDARD, "PP is for many layers (over 40) when a few consecutive layers fit "
                          "on a GPU"),
    ("bubble_50_20", STANDARD, "1F1B cuts GPipe's bubble from 50% to about 20% on 4 GPUs"),
    ("m_4p_hide", STANDARD, "Hiding the bubble needs M ≥ 4 × the pipeline depth"),
    ("more_m_memory", STANDARD, "More micro-batches lower the bubble but keep more activations"),
    ("recompute_trade", STANDARD, "Activation checkpointing trades compute for memory"),
    # 3D
    ("three_d", STANDARD, "3D parallelism is DP + TP + PP, e.g. Megatron-LM with DeepSpeed"),
    ("placement", STANDARD, "TP inside a node (NVLink), PP across nodes (IB/RoCE), DP over "
                            "all nodes"),
    ("gpt3_layout", STANDARD, "GPT-3 175B trained as 8-way TP × 64-way PP × 64-way DP = 32768 "
                              "GPUs"),
    ("gpt3_312", STANDARD, "... at 312 TFLOPS per GPU (52% utilisation)"),
    ("tune_ratio", STANDARD, "The TP/PP/DP split must be tuned by hand, or one axis becomes "
                             "the bottleneck"),
    ("tp_first", STANDARD, "First fix TP (4-8 in a node), then PP (layers per GPU by memory), "
                           "then DP for the rest"),
    # EP
    ("ep_idea", STANDARD, "EP puts experts on different GPUs; a token goes only to the experts "
                          "its router picks"),
    ("mixtral_experts", STANDARD, "MoE models such as Mixtral 8x7B have far more experts than "
                                  "devices"),
    ("hot_10x", STANDARD, "Hot experts may get 10× the tokens of cold ones"),
    ("aux_loss", STANDARD, "An auxiliary loss forces the load to balance"),
    ("cf_125", STANDARD, "A capacity factor of 1.25 works well"),
    ("topology", STANDARD, "The topology (NVLink vs IB vs Ethernet) sets each strategy's "
                           "granularity"),
    # the 30-second template
    ("must_3d", THIRTY, "Large-model training must use 3D parallelism (DP + TP + PP)"),
    # follow-up 1
    ("tp_two_fwd", "follow-up 1", "Forward does 2 all-reduces per layer (attention and MLP "
                                  "outputs)"),
    ("tp_48mb", "follow-up 1", "One all-reduce moves h × b × s × 2 bytes: about 48 MB for GPT-3"),
    ("tp_96mb", "follow-up 1", "8-way TP moves 96 MB per layer"),
    ("sp_comm", "follow-up 1", "Sequence parallelism reduces the communication volume"),
    ("layernorm_overlap", "follow-up 1", "Overlap by running e.g. LayerNorm during the "
                                         "all-reduce"),
    ("overlap_5_10", "follow-up 1", "That overlap was measured at +5-10% throughput"),
    # follow-up 2
    ("bubble_formula", "follow-up 2", "The bubble is (P−1)/(M+P−1)"),
    ("gpipe_vs_1f1b", "follow-up 2", "GPipe's bubble is (P−1)/M, 1F1B's (P−1)/(M+P−1): 37.5% "
                                     "vs 27.3% at P = 4, M = 8"),
    ("under_15", "follow-up 2", "1F1B with DeepSpeed's accumulation stays under 15% once M ≥ 4P"),
    # follow-up 3
    ("7b_14gb", "follow-up 3", "A 7B model's parameters are about 14 GB in fp16"),
    ("7b_one_card", "follow-up 3", "So it fits on one 80 GB GPU: plain DDP is enough"),
    ("no_tp_pp", "follow-up 3", "No TP or PP is needed"),
    ("speedup_35", "follow-up 3", "4 GPUs give about 3.5× (communication costs the rest)"),
    ("grad_accum", "follow-up 3", "Gradient accumulation (steps = 4) emulates a larger batch"),
    ("recompute_20gb", "follow-up 3", "With recomputation memory drops below 20 GB, so the batch "
                                      "can double"),
    # common mistakes
    ("async", MISTAKES, "Asynchronous gradient updates can hurt convergence"),
    ("tp_vs_pp_comm", MISTAKES, "TP splits inside an operator and all-reduces; PP splits "
                                "between layers and sends point to point"),
    # résumé advice
    ("thirteen_b", RESUME, "13B: TP = 4 spent 30% in communication, TP = 8 lowered utilisation "
                           "because NVLink saturated, TP = 4 + PP = 2 was best"),
    # reading list
    ("ref_megatron", READING, "Megatron-LM (NVIDIA 2019)"),
    ("ref_gpipe", READING, "GPipe (Google 2019)"),
    ("ref_deepspeed", READING, "DeepSpeed: system optimizations ... over 100 billion parameters "
                               "(Microsoft 2020)"),
    ("ref_narayanan", READING, "Efficient large-scale language model training on GPU clusters "
                               "using Megatron-LM (NVIDIA 2021)"),
    ("ref_sp", READING, "Sequence Parallelism: Long Sequence Training from System Perspective "
                        "(2023), for sequence parallelism"),
)

VERDICTS = ("holds", "wrong", "half right", "depends")

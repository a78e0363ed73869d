"""Published runs from stacks other than Megatron: PyTorch FSDP trainers in eager mode
(MosaicML's llm-foundry on torch 2.1), with ``torch.compile`` and torchao's float8
(torchtitan, 2024 and 2025). NVIDIA's own tables (Megatron with Transformer Engine in FP8, MXFP8
and NVFP4 on H100, B200 and GB200) are ``published_nvidia``'s and ``published_dgxc``'s rows.
Each row names its source (a repository file at a commit), its table, and the stack profile it
is predicted with (``layout["stack"]``, ``stacks.STACKS``); a row a profile was fitted on says
so (``in_sample``), and so does the one row the 500 W H100s' sustained rate was fitted on
(``FITTED_MACHINE``); every other row is out of sample.

Throughputs are converted to seconds per step, the one figure that needs no FLOP
convention: step_s = global batch x sequence / (tokens/s/GPU x GPUs). llm-foundry's MFU
counts the whole attention square against the bf16 peak (its README, "MFU"); torchtitan
prints no MFU for its float8 runs; neither is used.
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware import GPU_PRESETS
from .presets import MODELS, gpt
from .stacks import STACKS

# a row is the keyword arguments of a ``published.PublishedRun`` (published.py makes them;
# importing it here would make a cycle)
_FIELDS = ("name", "group", "source", "model", "gpu", "node", "n_gpus", "global_batch", "layout",
           "metric", "value")


def _row(*args, **kw) -> dict:
    """A row, in sample where a stack profile (``STACKS``' fitted_on) or a GPU preset's
    unknown (``FITTED_MACHINE``) was fitted on it: named there, not again here."""
    row = {**dict(zip(_FIELDS, args)), **kw}
    fitted = {n for s in STACKS.values() for n in s.fitted_on} | {
        n for names in FITTED_MACHINE.values() for n in names}
    return {**row, "in_sample": row["name"] in fitted}

_FOUNDRY = ("mosaicml/llm-foundry scripts/train/benchmarking/README.md at 495218376 "
            "(2024-04-22), table '{}' (added at {}); the runs as sweep.sh at that commit "
            "submits them: image mosaicml/pytorch:2.1.0_cu121, Composer's FSDP, attn_impl "
            "'triton' (submit_benchmarks.py's default), no torch.compile")
_TITAN_2412 = ("pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md at 820504e "
               "(torch 1963fc8, torchao eab345c, torchtitan 9dec370, 2024-12-23/26), {}")
_TITAN_2506 = ("pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md at "
               "2887250 (torch 38410cf9, 2025-06-14), {}")
_TRAINY = ("pytorch/torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md at "
           "4a61bd8 (torch 2.8.0a0 NGC 25.05, torchao 0afa4c1, torchtitan e7c0cae, 2025-06-13)")

# torchtitan's Grand Teton H100s: 96 GB HBM2e at 2.4 TB/s, a 500 W power limit, and "the
# actual peak TFLOPs number is between SXM and NVL, and we don't know its exact value"
# (footnote 2). The midpoint of the H100 SXM's dense peaks (989.5 bf16, 1979 fp8) and the H100
# NVL's (835.5, 1670.5: NVIDIA's H100 datasheet, sparse figures halved) is the nominal peak;
# what these GPUs sustain under the cap is unknown, so it is fitted: SUSTAINED_500W x the
# midpoint makes the compile profile's estimate of one bf16 row (FITTED_MACHINE) take its
# measured time. The cap lowers the SM clock, so every compute-bound kernel (GEMMs, attention)
# slows by that factor and the HBM does not. 0.83 x 912.5 = 757 TFLOP/s lies below the NVL's
# peak: it is a sustained rate, not a peak the source could have meant.
_MIDPOINT = {"bf16": 912.5, "fp16": 912.5, "fp8": 1824.75}
SUSTAINED_500W = 0.83
H100_96_500W = replace(GPU_PRESETS["H100-SXM5-80GB"], name="H100-HBM2e-96GB-500W", memory_gb=96,
                       hbm_gb_per_s=2400,
                       peak_tflops={**GPU_PRESETS["H100-SXM5-80GB"].peak_tflops,
                                    **{k: round(v * SUSTAINED_500W, 2) for k, v in _MIDPOINT.items()}},
                       source="torchtitan benchmarks/llama3_h100_202412_torchtitan.md, "
                              "'Hardware' and footnote 2: 96GB HBM2e, 2.4 TB/s, 500 W, a peak "
                              "between H100 SXM's and NVL's (midpoint) that the source does not "
                              f"know; x {SUSTAINED_500W}, the rate sustained under the cap, "
                              "fitted on Table 1's 'FSDP + torch.compile' row (8 GPUs)")
# the rows a GPU preset's unknown was fitted on (in sample, like a stack profile's)
FITTED_MACHINE = {H100_96_500W.name: ("torchtitan 8B 8 H100 FSDP + compile",)}

# torchtitan's selective "op" checkpointing (parallelize_llama.py at 9dec370, _save_list;
# the 8B configurations' default): the planner's recompute "op" (cost.op_recomputed)
_OP_SAC = "op"

# MPT as llm-foundry benchmarks it (scripts/train/yamls/pretrain/mpt-*.yaml; its NumParams
# column counts biases, LayerNorm biases and a learned position table: 6,658,859,008 for
# 7b at 2048 = 50368 x 4096 + 2048 x 4096 + 32 x (12 x 4096^2 + 11 x 4096) + 4096); no dropout
_MPT = {name: gpt(f"mpt-{name}", l, d, a, 2048, 50368, "llm-foundry scripts/train/yamls/"
                  f"pretrain/mpt-{name}.yaml at 495218376", dropout=False)
        for name, l, d, a in (("1b", 24, 2048, 16), ("3b", 32, 2560, 20), ("7b", 32, 4096, 32),
                              ("13b", 40, 5120, 40), ("30b", 48, 7168, 56), ("70b", 80, 8192, 64))}


_SCALE = ("MPT-7b runs 8% fewer tokens/s/GPU on 512 H100s than on 128; the collectives model "
          "predicts the same rate at both (FSDP's gathers stay hidden behind each block)")


def _foundry():
    # table (the commit that added it), gpu, node; rows: model, gpus, micro-batch, global
    # batch, ZeRO stage (FULL_SHARD 3, SHARD_GRAD_OP 2), full checkpointing, tokens/s/GPU
    rows = (("A100 80GB with 1600 Gbps node-node interconnect (RoCE)", "b2a43a147, 2023-10-19",
             "A100-SXM4-80GB", "DGX-A100",
             (("1b", 8, 14, 448, 3, False, 20513), ("3b", 8, 10, 160, 3, False, 10811),
              ("7b", 8, 6, 96, 3, False, 4641), ("13b", 8, 2, 48, 3, False, 2262),
              ("30b", 8, 3, 504, 3, True, 916))),
            ("H100 80GB BF16", "b2a43a147, 2023-10-19", "H100-SXM5-80GB", "DGX-H100",
             (("1b", 8, 14, 112, 3, False, 45455), ("7b", 8, 6, 48, 3, False, 10643),
              ("13b", 8, 2, 16, 3, False, 4792), ("30b", 8, 3, 504, 3, True, 2002))),
            ("H100 80GB BF16 (Large Scale, >= 128 GPUs)", "5e85bd62d, 2024-01-06",
             "H100-SXM5-80GB", "DGX-H100",
             (("7b", 128, 6, 768, 3, False, 10475), ("7b", 512, 6, 3072, 3, False, 9670),
              ("70b", 128, 8, 1024, 3, True, 1058), ("70b", 512, 8, 4096, 3, True, 1007))))
    for table, added, gpu, node, runs in rows:
        for name, n, b, B, zero, ac, tps in runs:
            kind = gpu[:4]
            yield _row(
                f"llm-foundry MPT-{name} {n} {kind}", f"llm-foundry {kind} (eager FSDP)",
                _FOUNDRY.format(table, added), _MPT[name], gpu, node, n, B,
                dict(micro_batch=b, zero_stage=zero, recompute="full" if ac else "none",
                     dtype="bf16", attention="fused", stack="pytorch-eager-2023"),
                "step_s", B * 2048 / (tps * n),
                known_miss=_MPT70_H100 if (name, n, kind) == ("70b", 128, "H100") else "",
                note=f"{tps} tokens/s/GPU; FULL_SHARD (ZeRO-3), sequence 2048, amp_bf16, "
                     f"{'full' if ac else 'no'} activation checkpointing; the loss in "
                     "flash-attn's Triton kernel (llmfoundry/models/mpt/modeling_mpt.py: "
                     "loss_fn 'fused_crossentropy', the default)"
                     + (f"; {_SCALE}" if (name, n) == ("7b", 512) else ""))


_MPT70_H100 = ("the 2023 stack's one Hopper GEMM share is fitted on MPT-7b's 8-GPU row (d_model "
               "4096); the 70b's GEMMs (d_model 8192, four times the work each) run at a higher "
               "share, and both 70b rows are pessimistic (on 512 GPUs within 15%, on 128 not): "
               "one share per stack follows a GEMM's size only through tile and wave "
               "quantization")


_EAGER = ("the eager profile is the lab's eager/compiled gap on a 1B GPT, whose LayerNorm and "
          "GeLU are one kernel each either way; a Llama layer's RMSNorm, RoPE and SwiGLU run "
          "an op at a time in eager (at 9dec370 RMSNorm is x.float(), pow, mean, rsqrt, two "
          "multiplies and a cast back: norms.py), priced as such (cost.EAGER_OPS); the fp32 "
          "copies those ops save for the backward are not in the memory estimate")
_H200_FLOAT8 = ("the float8 share (0.64) is fitted on the 500 W H100s' Float8 row once their "
                "sustained rate is fitted on a bf16 row (0.83 of the midpoint peak); on Trainy's "
                "700 W H200s, another torchao (0afa4c1 against eab345c) and torch (2.8 against a "
                "2024-12 nightly), the same share is 13-15% optimistic. A share fitted on these "
                "rows instead would be 0.48-0.50; the sources do not separate the recipe's "
                "version from the machine")
_NARROW_TP = ("Llama 3 8B under FSDP x TP 8 leans optimistic against the 70B under the same layout "
              "(in bf16 and float8, with async TP and without), and only the 8B's bf16 rows go "
              "beyond 15%: each rank's GEMMs are 512-1,792 columns wide (d_model 4096 over 8), "
              "and what such narrow GEMMs lose beyond tile and wave quantization is not in the "
              "model; the same lean as Megatron-LM's small H100 models")
_ASYNC_TP = ("the planner's tp_comm_overlap hides all of backward's TP collectives behind the "
             "weight-gradient GEMMs (Transformer Engine's userbuffers): 1.15x over vanilla TP "
             "for this bf16 8B (1.18x for the 70B); torch's async TP of 2025-06 measured 1.10x "
             "(1.09x for the 70B). In float8 the two nearly agree (8B: 1.09x predicted, 1.10x "
             "measured; 70B: 1.12x, 1.16x)")


# the 2024-12 tables' "Memory(GiB)": torchtitan logs torch.cuda's max_memory_reserved
# (train.py at 9dec370, "memory: {max_reserved_gib}"), the maximum over the GPUs (footnote 1);
# the planner predicts allocated memory, so the published figure bounds it from above
_RESERVED = "torch.cuda.max_memory_reserved, the largest over the GPUs"
# the loss at 9dec370 (train.py): F.cross_entropy(pred.flatten(0, 1).float(), ...) in eager
# mode even with torch.compile ("compiling loss function causes CUDA errors, turning off for
# now"); from 2025 (components/loss.py at e7c0cae and 2887250) it is compiled with the model
_TITAN_LOSS = "the loss eager on fp32 logits (train.py at 9dec370 leaves it uncompiled)"


def _titan():
    m8 = MODELS["llama3-8B"]
    m70 = MODELS["llama3-70B"]
    t = _TITAN_2412
    sac = dict(zero_stage=3, micro_batch=2, recompute=_OP_SAC, attention="fused")
    for table, n, B in (("Table 1 (8 GPUs)", 8, 16), ("Table 3 (128 GPUs)", 128, 256)):
        for stack, dtype, tps, gib in (
                ("pytorch-eager", "bf16", {8: 5762, 128: 5605}[n], {8: 82.4, 128: 67.0}[n]),
                ("torch-compile", "bf16", {8: 6667, 128: 6514}[n], {8: 77.0, 128: 62.0}[n]),
                ("torchao-float8", "fp8", {8: 8532, 128: 8380}[n], {8: 76.8, 128: 61.8}[n])):
            label = {"pytorch-eager": "FSDP", "torch-compile": "FSDP + compile",
                     "torchao-float8": "FSDP + compile + Float8"}[stack]
            yield _row(
                f"torchtitan 8B {n} H100 {label}", "torchtitan 2024-12 (H100 500 W)",
                t.format(table), m8, H100_96_500W, "Grand-Teton-H100", n, B,
                dict(**sac, dtype=dtype, stack=stack, loss_kernel="torch"), "step_s",
                B * 8192 / (tps * n),
                extra={"memory_gib": gib, "memory_counter": _RESERVED},
                note=f"{tps} tokens/s/GPU; Llama 3.1 8B, sequence 8192 (train_configs/"
                     "llama3_8b.toml at 9dec370), local batch 2, selective (op) "
                     "checkpointing; " + _TITAN_LOSS
                     + ("; " + _EAGER if stack == "pytorch-eager" else ""))
    for label, overlap, tps, gib in (("2D", False, 829, 71.9), ("2D + AsyncTP", True, 876, 67.6)):
        yield _row(
            f"torchtitan 70B 256 H100 {label} Float8", "torchtitan 2024-12 (H100 500 W)",
            t.format("Table 4"), m70, H100_96_500W, "Grand-Teton-H100", 256, 512,
            dict(tp=8, zero_stage=3, micro_batch=16, recompute="full", sequence_parallel=True,
                 tp_comm_overlap=overlap, dtype="fp8", stack="torchao-float8",
                 loss_kernel="torch"),
            "step_s", 512 * 8192 / (tps * 256),
            extra={"memory_gib": gib, "memory_counter": _RESERVED},
            note=f"{tps} tokens/s/GPU; FSDP 32 x TP 8, local batch 16, full checkpointing, "
                 "torch.compile + Float8; " + _TITAN_LOSS)
    # Tables 2, 5 and 6: context and pipeline parallelism. At 9dec370 a pipeline splits each
    # rank's local batch into pp micro-batches (pipeline_llama.py: pipeline_parallel_
    # microbatches "or parallel_dims.pp"), an interleaved schedule puts 2 stages on a rank and
    # the generated split gives 405B's 126 layers 15 or 16 a stage (pipelining_utils.py:
    # generate_split_points); FSDP beside a pipeline keeps the weights gathered
    # (parallelize_llama.py: reshard_after_forward=False); context parallelism all-gathers
    # K and V (config_manager.py: context_parallel_rotate_method "allgather")
    m405 = MODELS["llama3-405B"]
    cp_miss = {
        (8, 65536): "Table 2's steps do not grow as one GPU's work does: each row keeps 32k "
                    "tokens a GPU, so only attention grows, 2x a row (the whole K and V against "
                    "a GPU's queries), and the planner's steps go 1.69x, 1.81x, 1.90x where the "
                    "published go 1.53x, 2.37x, 1.95x; 64k ran faster than that line allows, "
                    "and nothing in the table says why",
        (512, 262144): "the step from 128k to 256k grows 1.94x where attention's share of the "
                       "planner's step gives 1.73x: at 256k attention is most of the step, at "
                       "the one fused-attention share fitted at 2k tokens (a 256k kernel's "
                       "rate is not measured here), and the CP group spans 8 nodes"}
    titan = dict(zero_stage=3, recompute="full", dtype="fp8", stack="torchao-float8",
                 loss_kernel="torch", attention="fused")
    for schedule, v, tps, gib in (("1F1B", 1, 100, 82.5), ("Interleaved 1F1B", 2, 128, 72.7)):
        yield _row(
            f"torchtitan 405B 512 H100 3D {schedule}", "torchtitan 2024-12 (H100 500 W)",
            t.format("Table 5"), m405, H100_96_500W, "Grand-Teton-H100", 512, 256,
            dict(**titan, tp=8, pp=8, v=v, micro_batch=4, sequence_parallel=True,
                 tp_comm_overlap=True, uneven_stages=True),
            "step_s", 256 * 8192 / (tps * 512),
            extra={"memory_gib": gib, "memory_counter": _RESERVED},
            note=f"{tps} tokens/s/GPU; FSDP 8 x TP 8 x PP 8, local batch 32 in 8 "
                 "micro-batches of 4, full checkpointing, torch.compile + Float8 + AsyncTP; "
                 + _TITAN_LOSS)
    # Tables 2 and 6: each GPU keeps 32k tokens as the sequence and CP grow together
    pp8 = dict(tp=8, pp=8, sequence_parallel=True, tp_comm_overlap=True, uneven_stages=True)
    for table, model, n, local, degrees, label, how, rows in (
            ("Table 2", m8, 8, 1, {}, "8B 8 H100 FSDP {} CP {}",
             "FSDP {} x CP {}, local batch 1, full checkpointing, torch.compile + Float8",
             ((8, 1, 32768, 3890, 83.9), (4, 2, 65536, 2540, 84.2),
              (2, 4, 131072, 1071, 84.0), (1, 8, 262144, 548, 84.5))),
            ("Table 6", m405, 512, 8, pp8, "405B 512 H100 4D FSDP {} CP {}",
             "FSDP {} x CP {} x TP 8 x PP 8 (1F1B), local batch 8 in 8 micro-batches of 1, "
             "full checkpointing, torch.compile + Float8 + AsyncTP",
             ((8, 1, 32768, 76, 75.3), (4, 2, 65536, 47, 75.9),
              (2, 4, 131072, 31, 77.1), (1, 8, 262144, 16, 84.9)))):
        for fsdp, cp, S, tps, gib in rows:
            yield _row(
                f"torchtitan {label.format(fsdp, cp)} {S // 1024}k",
                "torchtitan 2024-12 (H100 500 W)", t.format(table),
                replace(model, name=f"{model.name}-{S // 1024}k", seq_len=S), H100_96_500W,
                "Grand-Teton-H100", n, local * fsdp,
                dict(**titan, **degrees, cp=cp, cp_kind="allgather", micro_batch=1),
                "step_s", local * fsdp * S / (tps * n),
                extra={"memory_gib": gib, "memory_counter": _RESERVED},
                note=f"{tps} tokens/s/GPU; {how.format(fsdp, cp)}; " + _TITAN_LOSS,
                known_miss=cp_miss.get((n, S), ""))
    t = _TITAN_2506
    for model, n, b, rc, tag, rows in (
            (m70, 256, 16, "full", "Llama3 70b on 256 H100s",
             (("bf16", 597.3, 652.4), ("fp8", 809.8, 942.4))),
            (m8, 64, 12, _OP_SAC, "Llama3 8b on 64 H100s",
             (("bf16", 4378, 4809.4), ("fp8", 5078.1, 5570.1)))):
        size = "70B" if model is m70 else "8B"
        for dtype, vanilla, asynctp in rows:
            stack = "torch-compile" if dtype == "bf16" else "torchao-float8"
            for label, overlap, tps in (("TP", False, vanilla), ("AsyncTP", True, asynctp)):
                yield _row(
                    f"torchtitan 2025 {size} {n} H100 {label} {dtype}",
                    "torchtitan 2025-06 async TP (H100 500 W)", t.format(tag), model,
                    H100_96_500W, "Grand-Teton-H100", n, b * n // 8,
                    dict(tp=8, zero_stage=3, micro_batch=b, recompute=rc, sequence_parallel=True,
                         tp_comm_overlap=overlap, dtype=dtype, stack=stack),
                    "step_s", b * (n // 8) * 8192 / (tps * n),
                    known_miss=(_ASYNC_TP if overlap else _NARROW_TP)
                    if (size, dtype) == ("8B", "bf16") else "",
                    note=f"{tps} tokens/s/GPU; FSDP {n // 8} x TP 8, local batch {b}, "
                         f"torch.compile, {'float8 tensorwise' if dtype == 'fp8' else 'bf16'}")
    for nodes, tps in ((4, 10938), (8, 10753)):
        n = 8 * nodes
        yield _row(
            f"torchtitan 8B {n} H200 Float8 (Trainy)", "torchtitan 2025-06 Float8 (H200)",
            _TRAINY, m8, "H200-SXM-141GB", "DGX-H100", n, 2 * n,
            dict(zero_stage=3, micro_batch=2, recompute=_OP_SAC, dtype="fp8",
                 stack="torchao-float8"),
            "step_s", 2 * n * 8192 / (tps * n), known_miss=_H200_FLOAT8 if nodes == 8 else "",
            note=f"{tps} tokens/s/GPU; FSDP {n}, local batch 2, compile, float8 with fp8 "
                 "all-gather; 400 Gb/s CX-7 per GPU")


MORE_ROWS = (*_foundry(), *_titan())  # published.RUNS holds them as PublishedRuns

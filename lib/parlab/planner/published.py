"""Published training runs the planner is checked against, each with its source: the paper
and its table or section, or a repository's README at a dated commit.

A row gives the model, the GPU and its node, the layout as published, and the figure the
source reports -- ``metric``: "tflops" (executed TFLOP/s per GPU, recomputation counted,
Narayanan et al. 2021 §5.1), "mfu" (model FLOPs utilisation against the 16-bit peak,
PaLM's / Megatron-LM's count), "model_tflops" (model TFLOP/s per GPU, same count) or
"step_s" (seconds per iteration). Every other knob is the source's (stated in ``note``). A knob the source does not give takes the framework's default (micro-batch 1, no
interleaving, no recomputation); only where that layout does not fit in memory does the
planner pick, among the knobs named in ``search``, the fastest variant that fits -- what the
run must have done to fit.

In sample: Narayanan et al. 2021 Table 1 only -- the rows the constants were chosen on
(``constants.CONSTANTS_NOTE``). Everything else is out of sample. A ``known_miss`` says why
the model cannot get a row right; it stands beside the row's error and never takes the row
out of the score (``validate.summary``). A ``memory_note`` says why a layout that ran does
not fit the planner's memory model, where it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .presets import MODELS, gpt, llama
from .published_more import MORE_ROWS as _OTHER_STACKS  # PyTorch FSDP, torch.compile, float8
from .published_nvidia import NVIDIA_ROWS  # Megatron + Transformer Engine, NVIDIA's tables
from .published_dgxc import DGXC_ROWS  # the same stack in DGX Cloud's weak-scaling tables


@dataclass(frozen=True)
class PublishedRun:
    name: str
    group: str
    source: str
    model: object             # a MODELS key or a ModelSpec
    gpu: str
    node: str
    n_gpus: int
    global_batch: int
    layout: dict
    metric: str
    value: float
    in_sample: bool = False
    search: tuple = ()
    note: str = ""
    known_miss: str = ""
    extra: dict = field(default_factory=dict)
    memory_note: str = ""


_T1 = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
       "Megatron-LM', SC 2021, Table 1; micro-batch, interleaving and DDP from Megatron-LM "
       "examples/academic_paper_scripts/sc21/run_table_1.sh")
_T2 = "Narayanan et al., SC 2021, §5.2 and Table 2 (PTD-P vs ZeRO-3 without model parallelism)"
_KORT = ("Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', "
         "MLSys 2023, Table 3 (configurations) and Table 5 (MFU, sequence parallelism + "
         "selective recomputation); MFU as in NVIDIA/Megatron-LM README at 2e90a34 (2022-05-19)")
_MTNLG = ("Smith et al., 'Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B', "
          "arXiv 2201.11990, 2022, §2.4 (280/350/420 DGX A100 servers, batch 1920)")
_BLOOM = ("bigscience-workshop/bigscience, train/tr11-176B-ml/README.md at 9e64ede "
          "(2024-07-29): 'Environment' (TP 4, PP 12, DP 8, MBS 2), 'Global batch size' "
          "(2048), 'Important checkpoints' (iteration 85376: 104.70 s per iteration)")
_MLM = ("NVIDIA/Megatron-LM README.md at f2e5db4 (2024-07-15), 'Performance Benchmarking': "
        "images/model_table.png (H100, sequence 4096, vocabulary 131072, batch in sequences)")
_LLAMA = ("Dubey et al., 'The Llama 3 Herd of Models', arXiv 2407.21783v3, §3.3.2 and Table 4 "
          "(H100, 8 per server, 400 Gb/s RoCE per GPU, §3.3.1)")
_QWEN = ("yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md at 798dfb5 (2026-05-13), "
         "H100 table, 'Cross-node EP strategy' (256 H100, InfiniBand 8 x 50 GB/s)")

_T1_ROWS = (  # name, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s, micro-batch, v, ddp
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1, "torch"),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1, "torch"),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1, "torch"),
    ("18B", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1, "torch"),
    ("39B", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1, "local"),
    ("76B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3, "local"),
    ("145B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2, "local"),
    ("310B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2, "local"),
    ("530B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3, "local"),
    ("1T", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1, "local"),
)
# Megatron 2021-22 on A100: fp16 with loss scaling, materialized attention (fused softmax)
# Megatron of 2021-22 (and Megatron-DeepSpeed, its fork): the loss on output.float() one op
# at a time (megatron/model/gpt_model.py at aed2f75, 2021-04, and 35a3fa8, 2022-05)
_MEGATRON_2021 = dict(dtype="fp16", attention="materialized", loss_kernel="megatron")


def _table1():
    for name, a, h, l, tp, pp, n, B, tf, b, v, ddp in _T1_ROWS:
        yield PublishedRun(
            f"Table 1 {name}", "Narayanan 2021 Table 1", _T1, f"megatron-{name}",
            "A100-SXM4-80GB", "DGX-A100", n, B,
            dict(tp=tp, pp=pp, v=v, micro_batch=b, recompute="full", dp_overlap=ddp == "torch",
                 **_MEGATRON_2021), "tflops", tf, in_sample=True,
            note=f"DDP '{ddp}': {'overlapped with the last backward' if ddp == 'torch' else 'after the flush'}")


_GPT175 = gpt("gpt3-175B-51200", 96, 12288, 96, 2048, 51200, "GPT-3 175B, vocabulary 51,200")
_GPT530 = MODELS["megatron-530B"]
_ZERO3 = ("DeepSpeed's ZeRO-3 of 2021 (fsdp_impl='deepspeed2021'): a gather per weight matrix "
          "(4 a layer), waited for, each paying NCCL's ring latency over the whole DP group "
          "(it grows with the ranks) and the bandwidth of 8 HDR cards, and the reduce-scatters "
          "hidden behind nothing (v0.3.13 synchronizes the device before every gather). The "
          "mechanism gives the trend (175B: 177 -> 151 -> 104 TFLOP/s, was ~200 flat) but not "
          "its size: the paper's 144 -> 88 -> 44 leaves 23 -> 37 -> 52 s a step beyond the "
          "modelled compute, where the model finds 7.4 -> 9.3 -> 13.2 s of exposed traffic. "
          "From 768 GPUs (175B) and 1120 (530B) the paper's step stops shrinking as the GPUs "
          "double (66.7 s both; 180 s, 184 s): a fixed time per GPU, as if ZeRO-3's three "
          "passes over the weights ran at 16-18 GB/s a GPU, two thirds of one HDR card's "
          "25 GB/s, where NCCL's ring over a node's 8 cards reaches about 185. What held it "
          "there is a cost of DeepSpeed's code of the time (partition_parameters.py at v0.3.13 "
          "gathers each parameter into N views and copies it out again), which neither the "
          "paper nor any measurement we have gives (no DeepSpeed or NCCL version, no prefetch "
          "or bucket settings in §5.2). A rate fitted to these rows would explain nothing, so "
          "the planner leaves it out and shows the miss")
_MTNLG_MISS = ("the same layout on the same cluster ran at 159 TFLOP/s under Megatron (Table 2, "
               "PTD-P 530B on 2240 GPUs, predicted within 3%); MT-NLG's 126 is DeepSpeed's "
               "pipeline engine and its overheads, which the model does not know")


def _table2():
    for model, name, rows in ((_GPT175, "175B", ((384, 1536, 4, 144), (768, 1536, 2, 88),
                                                  (1536, 1536, 1, 44))),
                              (_GPT530, "530B", ((640, 2560, 4, 138), (1120, 2240, 2, 98),
                                                 (2240, 2240, 1, 48)))):
        for n, B, b, tf in rows:
            yield PublishedRun(f"Table 2 ZeRO-3 {name} {n} GPUs", "Narayanan 2021 Table 2 (ZeRO-3)",
                               _T2, model, "A100-SXM4-80GB", "DGX-A100", n, B,
                               dict(zero_stage=3, micro_batch=b, recompute="full",
                                    fsdp_impl="deepspeed2021", **_MEGATRON_2021),
                               "tflops", tf, known_miss=_ZERO3)
    for model, name, pp, B, rows in ((_GPT175, "175B", 12, 1536, ((384, 153), (768, 149), (1536, 141))),
                                     (_GPT530, "530B", 35, 2240, ((560, 171), (1120, 167), (2240, 159)))):
        for n, tf in rows:
            yield PublishedRun(f"Table 2 PTD-P {name} {n} GPUs", "Narayanan 2021 Table 2 (PTD-P)",
                               _T2, model, "A100-SXM4-80GB", "DGX-A100", n, B,
                               dict(tp=8, pp=pp, micro_batch=1, recompute="full", zero_stage=1,
                                    dp_overlap=False, **_MEGATRON_2021), "tflops", tf,
                               note="v = 1: Table 2 gives no interleaving")


def _korthikanti():
    # v: §6, "three interleaving stages (m = 3) for the 175B and 530B models"; the others
    # have none (22B has one stage, 1T two layers per stage)
    rows = (("22B", gpt("gpt-22B", 48, 6144, 64, 2048, 51200, _KORT), 8, 1, 8, 4, 4, 1, 41.5),
            ("175B", _GPT175, 8, 8, 64, 64, 1, 3, 51.4),
            ("530B", _GPT530, 8, 35, 280, 280, 1, 3, 56.0),
            ("1T", MODELS["megatron-1T"], 8, 64, 512, 512, 1, 1, 56.3))
    for name, model, tp, pp, n, B, b, v, mfu in rows:
        yield PublishedRun(f"Korthikanti {name}", "Korthikanti 2022 Table 5", _KORT, model,
                           "A100-SXM4-80GB", "DGX-A100", n, B,
                           dict(tp=tp, pp=pp, v=v, micro_batch=b, recompute="selective",
                                sequence_parallel=True, **_MEGATRON_2021), "mfu", mfu / 100,
                           note="data-parallel size 1; v from §6 (3 for 175B and 530B)")


def _mt_nlg():
    for nodes, tf in ((280, 126), (350, 121), (420, 113)):
        yield PublishedRun(f"MT-NLG 530B {nodes * 8} GPUs", "MT-NLG 530B", _MTNLG, _GPT530,
                           "A100-SXM4-80GB", "DGX-A100", nodes * 8, 1920,
                           dict(tp=8, pp=35, micro_batch=1, recompute="full", zero_stage=1,
                                dp_overlap=False, **_MEGATRON_2021), "tflops", tf,
                           known_miss=_MTNLG_MISS,
                           note="DeepSpeed's 1F1B pipeline (no interleaving), gradients "
                                "reduced after the flush")


_BLOOM_MODEL = gpt("bloom-176B", 70, 14336, 112, 2048, 250880,
                   "BLOOM 176B: Le Scao et al. 2022, Table 3; vocabulary 250,680 padded to "
                   "250,880 (a multiple of 128 x tp); ALiBi, no position table; dropout 0",
                   dropout=False)
_BLOOM_MODEL = replace(_BLOOM_MODEL, learned_positions=False)


def _bloom():
    yield PublishedRun("BLOOM 176B", "BLOOM-176B", _BLOOM, _BLOOM_MODEL, "A100-SXM4-80GB",
                       "Jean-Zay-A100", 384, 2048,
                       dict(tp=4, pp=12, micro_batch=2, recompute="full", zero_stage=1,
                            dp_overlap=False, dtype="bf16", attention="materialized",
                            uneven_stages=True, loss_kernel="megatron"),
                       "step_s", 104.70,
                       note="Megatron-DeepSpeed: 1F1B (no interleaving), ZeRO-1, gradients "
                            "after the flush; 70 layers on 12 stages (6 on the slowest); 4 "
                            "Omni-Path links per 8 GPUs")


_MLM_ROWS = (  # size, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s, MFU %
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8, 41), ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9, 47),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1, 49), ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6, 46),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7, 42), ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5, 43),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8, 44), ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4, 48),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9, 47))


_SMALL_H100 = ("the two smallest models are the table's only rows beyond 15%, both optimistic, "
               "with the loss priced as Megatron ran it (unfused, fp32), which took nearly half "
               "of the 1.7B's miss: at d_model 2048-4096 an H100 runs a layer's GEMMs in about a "
               "millisecond, and the costs of many short kernels (launch gaps, tails that do not "
               "fill the GPU) that the model does not count become visible. On torchtitan's "
               "H100s the 8B rows (d_model 4096) lean the same way against the 70B's under the "
               "same FSDP x TP 8 layout; no A100 row does. Both keep Megatron's attention "
               "dropout of 0.1, which a fused kernel pays for (a random number per score) and "
               "the planner prices free until a gpu-report measures it (Constants."
               "attention_dropout_factor): at 1.2 they would be +11% and +14%, attention being "
               "a larger share of a narrow model's step")


def _megatron_h100():
    for name, a, h, l, tp, pp, n, B, tf, _ in _MLM_ROWS:
        model = gpt(f"mlm-{name}", l, h, a, 4096, 131072, _MLM)
        yield PublishedRun(f"Megatron-LM H100 {name}", "Megatron-LM H100 weak scaling", _MLM,
                           model, "H100-SXM5-80GB", "DGX-H100", n, B,
                           dict(tp=tp, pp=pp, micro_batch=1, zero_stage=1, sequence_parallel=tp > 1,
                                tp_comm_overlap=tp > 1, dtype="bf16", attention="fused",
                                loss_kernel="megatron"),
                           "model_tflops", tf, search=("v", "recompute"),
                           known_miss=_SMALL_H100 if h <= 4096 else "",
                           note="--overlap-grad-reduce, --overlap-param-gather, --tp-comm-"
                                "overlap (README); distributed optimizer; micro-batch 1 as in "
                                "the same commit's examples/gpt3/train_gpt3_175b_distributed."
                                "sh; interleaving and recomputation not given; the loss "
                                "Megatron-Core's default at f2e5db4, unfused (no --cross-"
                                "entropy-loss-fusion among the README's flags)")


def _llama3():
    rows = ((8192, 1, 64, 8192, 32, 0.43, ""), (16384, 1, 128, 8192, 16, 0.41, ""),
            (16384, 16, 8, 131072, 16, 0.38,
             "Table 4 prints DP = 4, but 8 x 16 x 16 x 4 = 8,192 GPUs and 4 x 16 sequences of "
             "131,072 = 8.4M tokens, not the 16,384 GPUs and 16M tokens of the same row: DP = 8"))
    counts = ("; at 128k tokens attention is most of the FLOPs PaLM's formula counts (the whole "
              "s x s square; a causal kernel does half): Table 4 does not say which count its "
              "MFU uses, and the two counts put the prediction about 30 points apart -- "
              "'error' counts the square full, as PaLM does, 'error_causal' causally; the loss "
              "kernel is not given (Meta's own stack): the planner's default")
    for n, cp, dp, S, per_dp, mfu, note in rows:
        model = llama("llama3-405B-%d" % S, 126, 16384, 128, 8, 53248, S, 128256, _LLAMA)
        yield PublishedRun(f"Llama 3 405B {n} GPUs{' CP16 128k' if cp > 1 else ''}",
                           "Llama 3 405B", _LLAMA, model, "H100-SXM5-80GB", "Grand-Teton-H100",
                           n, per_dp * dp,
                           dict(tp=8, cp=cp, pp=16, v=8, micro_batch=1, zero_stage=3,
                                fsdp_keep_unsharded=True, sequence_parallel=True,
                                cp_kind="allgather", dtype="bf16", attention="fused",
                                ends_as_layers=True),
                           "mfu", mfu, search=("recompute",),
                           note="FSDP across DP as §3.3.2 describes it: optimizer states and "
                                "gradients sharded, the weights not resharded after the "
                                "forward (ZeRO-3 keeping the stage unsharded across the "
                                "micro-batches); §3.3.2 'Pipeline parallelism improvements': "
                                "the first and the last stage each hold one layer fewer, the "
                                "first model chunk only the embedding and the last only the "
                                "output layer and the loss, so 126 layers + 2 fill 16 x 8 "
                                "chunks of one (v = 8); " + note + (counts if cp > 1 else ""))


def _qwen3():
    yield PublishedRun("Qwen3-235B-A22B 256 H100", "MoE: Qwen3-235B-A22B", _QWEN,
                       "qwen3-235B-A22B", "H100-SXM5-80GB", "DGX-H100", 256, 2048,
                       dict(tp=2, pp=8, v=4, ep=32, micro_batch=1, zero_stage=1,
                            sequence_parallel=True, dtype="bf16", attention="fused",
                            ep_dispatch="dedup", ends_as_layers=True),
                       "step_s", 19.7,
                       note="EP 32 over TP x DP, expert TP 1, DeepEP dispatcher; 94 layers "
                            "and the embedding and loss on 32 chunks of 3 (the YAML's "
                            "--account-for-embedding-in-pipeline-split and --account-for-loss-"
                            "in-pipeline-split); the 'norm, act' "
                            "recomputation (cheap) left out; dropless, balance assumed; the "
                            "loss in Transformer Engine's kernel (model_configs/benchmarking/"
                            "Qwen3-235B-A22B.yaml at 798dfb5: --cross-entropy-fusion-impl te)")


# the rows published_more, published_nvidia and published_dgxc give as keyword arguments
MORE_ROWS = (*_OTHER_STACKS, *NVIDIA_ROWS, *DGXC_ROWS)
RUNS = (*_table1(), *_table2(), *_korthikanti(), *_mt_nlg(), *_bloom(), *_megatron_h100(),
        *_llama3(), *_qwen3(), *(PublishedRun(**r) for r in MORE_ROWS))
IN_SAMPLE = tuple(r for r in RUNS if r.in_sample)
OUT_OF_SAMPLE = tuple(r for r in RUNS if not r.in_sample)

"""NVIDIA's own published runs: Megatron-Core with Transformer Engine in BF16, FP8, MXFP8 and
NVFP4 on H100, B200, GB200 and GB300 -- Megatron-Bridge's performance archive (H100 by release;
every Llama 3 layout on B200, GB200 and GB300), NeMo 24.07's H100 FP8 table, NeMo 25.02-25.07's
first B200 and GB200 tables (DGX Cloud's weak-scaling tables: ``published_dgxc``). All are
predicted with the default stack and out of sample; each row names its source (a repository
file at a commit, or the NeMo page, container and the configuration's commit), and where the
table's layout cannot hold its activations, how its recipe ran it. Throughputs become seconds
per step, as in ``published_more``.
"""

from __future__ import annotations

from .. import cost
from ..hardware import GPU_PRESETS, node_for
from .presets import MODELS, gpt, llama
from .published_more import _row
from .spec import ModelSpec


_BRIDGE = ("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md at 4ab94dfad "
           "(2026-08-11), '{}', DGX-H100 (Megatron-Core + Transformer Engine, FP8 current "
           "scaling)")
_L405 = llama("llama3.1-405B", 126, 16384, 128, 8, 53248, 8192, 128256,
              "Llama 3.1 405B: Dubey et al. 2024, Table 3")


def _nvidia_row(name, group, source, model, gpu, n, B, degrees, b, dtype, tps, note="",
                loss_kernel="triton", **kw) -> dict:
    """One row of an NVIDIA table: Megatron + Transformer Engine as the tables run it -- the
    distributed optimizer unless FSDP is named, sequence parallelism and TP overlap wherever
    tp > 1, uneven stages where pp x v does not divide the layers, the loss in Transformer
    Engine's Triton kernel unless ``loss_kernel`` says otherwise (the performance scripts set
    cross_entropy_fusion_impl = "te": Megatron-Bridge's scripts/performance/utils/overrides.py
    at 067f987df, NeMo's scripts/performance from 96578928a, 2025-04-07) -- on ``gpu``'s usual
    node, its ``tps`` tokens/s/GPU as seconds per step; recomputation searched unless
    ``degrees`` names it. ``note`` follows the throughput and the micro-batch in the row's
    note."""
    tp, pp, v = (degrees.get(k, 1) for k in ("tp", "pp", "v"))
    ends = pp > 1 and model.name in _ENDS_AS_LAYERS  # its split fills every chunk evenly
    layout = dict(**{"zero_stage": 1, **degrees}, micro_batch=b, sequence_parallel=tp > 1,
                  tp_comm_overlap=tp > 1, dtype=dtype, loss_kernel=loss_kernel,
                  uneven_stages=not ends and model.n_layers % (pp * v) != 0,
                  ends_as_layers=ends)
    return _row(name, group, source, model, gpu, node_for(GPU_PRESETS[gpu]).name, n, B, layout,
                "step_s", B * model.seq_len / (tps * n),
                search=() if "recompute" in degrees else ("recompute",),
                note=f"{tps} tokens/s/GPU; micro-batch {b}, sequence {model.seq_len}" + note
                + ("; " + _ENDS_AS_LAYERS[model.name] if ends else ""), **kw)


# the models whose recipes count the embedding and the loss as a layer each in the pipeline
# split (spec.Layout.ends_as_layers): the first and the last rank build one layer fewer
_ENDS_AS_LAYERS = {
    "llama3.1-405B":
        "the embedding and the loss each take a layer's place in the pipeline split, as Llama "
        "3.1 405B's recipes set account_for_embedding_in_pipeline_split and account_for_loss_"
        "in_pipeline_split (Megatron-Bridge src/megatron/bridge/recipes/llama/llama31_405b.py "
        "at 183aad1d3, 2025-09, and recipes/llama/llama3.py at e59a57360, 2025-11, and "
        "8ce2b2d73, 2026-03, the base of the performance scripts and of perf_recipes at "
        "067f987df; NeMo nemo/collections/llm/recipes/llama31_405b.py from d3f25b1210, "
        "2025-03-08, 'asymmetric PP for 405b', to 8cfedd7)",
}


def _bridge():
    """Megatron + Transformer Engine in FP8 on H100, by release: the default stack's fp8
    (its GEMMs at the fp8 peak, the same 0.70 share), out of sample."""
    m8, m70 = MODELS["llama3-8B"], MODELS["llama3-70B"]
    rows = (("25.11 NeMo Container", "8B", m8, 8, 128, dict(zero_stage=3), 14451),
            ("25.11 NeMo Container", "70B", m70, 64, 128, dict(tp=4, pp=8, v=5), 1602),
            ("25.11 NeMo Container", "405B", _L405, 1024, 512, dict(tp=8, pp=8, cp=2, v=8), 292),
            ("26.04.01 NeMo Container", "70B", m70, 64, 256, dict(tp=4, pp=8, v=5), 1664),
            ("26.04.01 NeMo Container", "405B", _L405, 1024, 1536, dict(tp=8, pp=8, cp=2, v=8),
             328))
    for release, size, model, n, B, degrees, tps in rows:
        yield _nvidia_row(
            f"Megatron-Bridge {release.split()[0]} {size} {n} H100 FP8",
            "Megatron-Bridge H100 FP8", _BRIDGE.format(release), model, "H100-SXM5-80GB", n, B,
            degrees, 1, "fp8", tps,
            "; TP overlap with userbuffers where tp > 1 (perf_recipes/llama/h100/llama3.py at "
            "4ab94dfad); 8B: FSDP over 8; recomputation not in the table, searched (the recipe "
            "at 4ab94dfad recomputes 5 of the 8B's 32 layers)")


_BLACKWELL = ("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md at 067f987df "
              "(2026-08-22), '{} NeMo Container', DGX-{} (Megatron-Core + Transformer Engine; "
              "FP8 = FP8-CS, per-tensor current scaling; MXFP8 = FP8-MX, 32-value blocks)")
# Every Llama 3 pre-training layout the archive gives on the two Blackwell systems with a
# preset (B200, GB200; not B300, GB300), each at the latest release that lists it; 25.09's
# table gives MXFP8 in parentheses, its micro-batch from its GA column
_BLACKWELL_ROWS = (  # release, gpu, size, GPUs, precision, batch, micro-batch, degrees, tokens/s/GPU
    ("26.04.01", "GB200", "70B", 64, "FP8", 256, 2, dict(zero_stage=3, offload_layers=40), 4224),
    ("26.04.01", "GB200", "70B", 64, "MXFP8", 256, 1, dict(tp=2, pp=4, v=5), 3712),
    ("26.04.01", "GB200", "70B", 64, "NVFP4", 256, 1, dict(tp=2, pp=4, v=5), 4864),
    ("26.06", "GB200", "405B", 256, "FP8", 1536, 1, dict(tp=4, pp=16, v=4, recompute="none"),
     843),
    ("26.06", "GB200", "405B", 256, "MXFP8", 1536, 1, dict(tp=4, pp=16, v=8), 783),
    ("26.06", "GB200", "405B", 256, "NVFP4", 1536, 1, dict(tp=4, pp=16, v=8), 1166),
    ("26.02.01", "GB200", "405B", 256, "NVFP4", 1536, 1, dict(tp=4, pp=16, v=4), 1083),
    ("25.11", "GB200", "8B", 8, "FP8", 128, 2, {}, 31508),
    ("25.11", "GB200", "8B", 8, "MXFP8", 128, 2, {}, 29789),
    ("25.09", "GB200", "70B", 64, "FP8", 128, 2, dict(zero_stage=3, offload_layers=40), 3986),
    ("25.09", "GB200", "70B", 64, "MXFP8", 128, 1, dict(tp=2, pp=4, v=5), 3546),
    ("25.09", "GB200", "405B", 128, "FP8", 64, 1, dict(zero_stage=3, tp=2, offload_layers=95),
     729),
    ("25.09", "GB200", "405B", 128, "MXFP8", 64, 1, dict(tp=4, pp=8, cp=2, v=8), 578),
    ("25.11", "B200", "8B", 8, "FP8", 128, 2, {}, 30624),
    ("25.11", "B200", "8B", 8, "MXFP8", 128, 2, {}, 29521),
    ("25.11", "B200", "405B", 128, "FP8", 64, 1, dict(tp=4, pp=8, cp=2, v=8), 661),
    ("25.11", "B200", "405B", 128, "MXFP8", 64, 1, dict(tp=4, pp=8, cp=2, v=8), 624),
)
# The same for Blackwell Ultra (GB300; the archive's B300 rows are all MoE models). 26.02.01's
# two other 70B rows are left out: they give layouts its own recipes do not have (MXFP8 at MBS 2
# without VP; NVFP4 without TP, PP or FSDP, where 70B's weights, gradients and optimizer states
# cannot fit one GPU), where the recipes of the time (scripts/performance/configs/llama/
# llama3_workload_base_configs.py at 8ce2b2d73) run both at PP 4, VP 5: 26.04.01's layout, here
_GB300_ROWS = (
    ("25.11", "GB300", "8B", 8, "FP8", 128, 2, {}, 37556),
    ("25.11", "GB300", "8B", 8, "MXFP8", 128, 2, {}, 36108),
    ("26.04.01", "GB300", "70B", 64, "FP8", 256, 2, dict(zero_stage=3, offload_layers=20), 5248),
    ("26.04.01", "GB300", "70B", 64, "MXFP8", 256, 1, dict(pp=4, v=5), 4864),
    ("26.04.01", "GB300", "70B", 64, "NVFP4", 256, 1, dict(pp=4, v=5), 7296),
    ("26.06", "GB300", "405B", 256, "FP8", 1536, 1, dict(tp=4, pp=8, v=4), 1048),
    ("26.06", "GB300", "405B", 256, "MXFP8", 1536, 1, dict(tp=2, pp=8, cp=2, v=4), 952),
    ("26.06", "GB300", "405B", 256, "NVFP4", 1536, 1, dict(tp=4, pp=8, v=4), 1413),
    ("26.02.01", "GB300", "405B", 256, "FP8", 1536, 1, dict(tp=2, pp=8, cp=2, v=4), 1024),
)


# MXFP8 runs at constants.MXFP8_SHARE of FP8's GEMM rate, fitted on NeMo 25.07's pair (not a
# row here); the archive's own pairs at one layout test it (25.11: 8B on 8 GB200s 29,789 against
# 31,508 tokens/s/GPU, 8B on 8 B200s 29,521 / 30,624, 405B on 128 B200s 624 / 661). NVFP4 has
# no such pair: it runs at its own peak with FP8's share
_EARLY_GB200 = ("25.09 is the archive's earliest GB200 release, and its two 405B rows the most "
                "optimistic GB200 rows: 25.09's B200 table ran the same model's MXFP8 layout "
                "faster than its GB200 table did (622 tokens/s/GPU against 578), and what held "
                "that release's GB200 runs back is not in the tables")
_BLACKWELL_MISS = {
    ("25.09", "GB200", "405B", "FP8"):
        "TP 2 with FSDP, 95 of 126 layers' activations offloaded, no recomputation (NeMo's "
        "recommended configuration); " + _EARLY_GB200,
    ("25.09", "GB200", "405B", "MXFP8"):
        "the layout of 25.11's B200 row, which is within 6%; " + _EARLY_GB200,
}


# where the layout in the table cannot hold its activations without recomputation, the recipe
# says how it ran: activation offloading over NVLink-C2C, no recomputation
_OFFLOAD = {("GB200", "70B"): "Megatron-Bridge perf_recipes/llama/gb200/llama3.py at 067f987df, "
                              "llama3_70b_pretrain_64gpu_gb200_fp8cs_config: "
                              "cpu_offloading_num_layers 40",
            ("GB200", "405B"): "NVIDIA/NeMo scripts/performance/recommended_model_configs/"
                               "model_configs_gb200.csv at 8cfedd7, llama31 405b fp8 on 128 "
                               "GB200s, TP 2 with FSDP: activation_offload_layers 95, "
                               "recompute_layers 0",
            ("GB300", "70B"): "Megatron-Bridge perf_recipes/llama/gb300/llama3.py at 067f987df, "
                              "llama3_70b_pretrain_64gpu_gb300_fp8cs_config: "
                              "cpu_offloading_num_layers 20 (20 also at 8ce2b2d73)"}


def _bridge_blackwell():
    """The same stack on B200 and GB200 in FP8, MXFP8 and NVFP4, every row out of sample:
    checked blind, then with MXFP8's share (fitted on NeMo 25.07's pair, not on these rows);
    and on GB300, checked once its preset and the exponential rates (``hardware.EXP_SOURCES``)
    were in; its pairs against the GB200 inside one rack (``constants.GB300_PAIRS``) leave it at
    its datasheet peaks."""
    models = {"8B": MODELS["llama3-8B"], "70B": MODELS["llama3-70B"], "405B": _L405}
    groups = {"B200": "Megatron-Bridge B200/GB200", "GB200": "Megatron-Bridge B200/GB200",
              "GB300": "Megatron-Bridge GB300"}
    for release, gpu, size, n, precision, B, b, degrees, tps in _BLACKWELL_ROWS + _GB300_ROWS:
        yield _nvidia_row(
            f"Megatron-Bridge {release} {size} {n} {gpu} {precision}",
            groups[gpu], _BLACKWELL.format(release, gpu), models[size], gpu, n,
            B, degrees, b, precision.lower(), tps,
            (f"; FSDP over {n // degrees.get('tp', 1)}" if degrees.get("zero_stage") == 3 else "")
            + (f"; no recomputation, the first {degrees['offload_layers']} layers' activations "
               "offloaded to the Grace host (" + _OFFLOAD[gpu, size] + ")"
               if "offload_layers" in degrees else "; no recomputation (its recipe)"
               if "recompute" in degrees else "; recomputation not in the table, searched"),
            known_miss=_BLACKWELL_MISS.get((release, gpu, size, precision), ""))


_NEMO = ("NVIDIA/NeMo docs/source/performance/performance_summary.md at 8e3d65d (2024-09-09, "
         "'24.07 perf numbers': the table's last version on main), 'Pretraining' (container NeMo "
         "24.07, DGX-H100, FP8); GPT-3 5B/20B/175B as NeMo's GPTConfig5B/20B/175B "
         "(nemo/collections/llm/gpt/model/base.py: 175B without dropout, the others with "
         "Megatron's 0.1); Nemotron as Nemotron3Config8B/22B and Nemotron4Config340B "
         "(nemo/collections/llm/gpt/model/nemotron.py at 8cfedd7)")


def _nemotron(name, layers, d, heads, groups, ff):
    """A Nemotron layer as NeMo's config gives it: LayerNorm, a squared-ReLU MLP (two matrices,
    priced as GeLU's), rotary embeddings, no biases or dropout, untied embeddings, the
    performance scripts' 256,000-token vocabulary."""
    shape = cost.LayerShape(d, heads, groups, None, ff, "gelu", biases=False, dropout=False,
                            rope=True)
    return ModelSpec(name, layers, 4096, 256000, shape, tied_embeddings=False,
                     learned_positions=False, source="NVIDIA/NeMo nemo/collections/llm/gpt/model/"
                     "nemotron.py at 8cfedd7, " + name)
_SMALL_GPT = ("GPT-3 20B (GPT-style layers of width 6144: LayerNorm, a two-matrix MLP, TP 2) is "
              "the one row of this table beyond 15%. GPT-3 5B and Nemotron-3 8B, 17-22% "
              "optimistic while the loss was priced as one fused kernel for every row, are within "
              "once it is priced as the launcher's configs ran it (unfused, fp32); like "
              "Megatron-LM's H100 1.7B and 7.1B they still lean optimistic. Attention dropout "
              "(Megatron's 0.1 in GPT-3 5B and 20B, which FlashAttention-3 does not offer: "
              "Dao-AILab/flash-attention#1377) is priced free in a fused kernel until a "
              "gpu-report measures its factor (Constants.attention_dropout_factor); at 1.2 this "
              "row would be +14.5%")


# NeMo 24.07 ran its tables from NeMo-Framework-Launcher's configs: the Llama ones set
# cross_entropy_loss_fusion (launcher_scripts/conf/training/llama/*.yaml, from 43844fe4 and
# 9352b045, 2024-06); the GPT-3 and Nemotron ones never do (none at 24c3d6bb, 2024-09-06),
# which leaves Megatron-Core's default, the unfused fp32 loss
_NEMO_LOSS = {True: "the loss in Megatron-Core's native fusion (the launcher's Llama configs "
                    "set cross_entropy_loss_fusion)",
              False: "the loss unfused on fp32 logits (the launcher's GPT-3 and Nemotron configs "
                     "leave cross_entropy_loss_fusion at Megatron-Core's default, off)"}


def _nemo_2407():
    """NeMo 24.07's H100 FP8 pre-training table, every row whose model the zoo has or NeMo's
    own config gives: the default stack's fp8 a year before Megatron-Bridge's tables, on GPT-3,
    Llama 2/3 and Nemotron from 5B to 340B, checked blind (Nemotron's three rows once its
    configs were in, 2 of 3)."""
    gpt5 = gpt("gpt3-5B", 24, 4096, 32, 2048, 50257, _NEMO)
    gpt20 = gpt("gpt3-20B", 44, 6144, 48, 2048, 50257, _NEMO)
    gpt175 = gpt("gpt3-175B-nemo", 96, 12288, 96, 2048, 50257, _NEMO, dropout=False)
    l2 = {n: llama(f"llama2-{n}", layers, d, heads, heads, ff, 4096, 32000,
                   "Llama 2: Touvron et al. 2023, Table 1 and §2.2 (4k context)")
          for n, layers, d, heads, ff in (("7B", 32, 4096, 32, 11008), ("13B", 40, 5120, 40, 13824))}
    rows = (  # name, model, GPUs, batch, micro-batch, tp, pp, cp, vp, tokens/s/GPU
        ("GPT3-5B", gpt5, 64, 2048, 4, 1, 1, 1, 1, 23406),
        ("GPT3-20B", gpt20, 64, 256, 2, 2, 1, 1, 1, 5851),
        ("GPT3-175B", gpt175, 128, 256, 1, 4, 8, 1, 6, 716),
        ("GPT3-175B", gpt175, 512, 2048, 2, 4, 8, 1, 6, 825),
        ("LLAMA2-7B", l2["7B"], 8, 128, 1, 1, 1, 1, 1, 16934),
        ("LLAMA2-13B", l2["13B"], 16, 128, 1, 1, 4, 1, 10, 8715),
        ("LLAMA2-70B", MODELS["70B"], 64, 128, 1, 4, 4, 1, 20, 1728),
        ("Nemotron-8B", _nemotron("Nemotron3Config8B", 32, 4096, 32, 32, 16384), 64, 256, 4,
         2, 1, 1, 1, 12507),
        ("Nemotron-22B", _nemotron("Nemotron3Config22B", 40, 6144, 48, 48, 24576), 64, 256, 2,
         2, 4, 1, 10, 4312),
        ("Nemotron-340B", _nemotron("Nemotron4Config340B", 96, 18432, 96, 8, 73728), 128, 32, 1,
         8, 8, 1, 12, 326),
        ("LLAMA3-8B", MODELS["llama3-8B"], 8, 128, 1, 1, 1, 2, 1, 12273),
        ("LLAMA3-70B", MODELS["llama3-70B"], 64, 128, 1, 4, 4, 2, 5, 1524))
    for name, model, n, B, b, tp, pp, cp, vp, tps in rows:
        llama_ = name.startswith("LLAMA")
        yield _nvidia_row(
            f"NeMo 24.07 {name} {n} H100 FP8", "NeMo 24.07 H100 FP8", _NEMO, model,
            "H100-SXM5-80GB", n, B, dict(tp=tp, pp=pp, cp=cp, v=vp), b, "fp8", tps,
            "; the distributed optimizer; recomputation not in the table, searched; "
            + _NEMO_LOSS[llama_], loss_kernel="megatron-jit" if llama_ else "megatron",
            known_miss=_SMALL_GPT if name == "GPT3-20B" else "")


_NEMO_PAGE = ("NVIDIA NeMo Framework user guide, 'Performance Summary', container NeMo {}, "
              "DGX-{}, pre-training, FP8 per-tensor current scaling (MXFP8 in parentheses), "
              "https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/{} (stored "
              "copy); models as NVIDIA/NeMo's configs and performance scripts at 8cfedd7 give "
              "them (GPT-3 175B: GPTConfig175B, vocabulary 51,200; Nemotron-4: "
              "Nemotron4Config15B/340B, 256,000)")
# before NeMo's performance scripts chose Transformer Engine's kernel (96578928a, 2025-04-07)
# NeMo 2.0's GPTConfig and NemotronConfig turned cross_entropy_loss_fusion on (base.py and
# nemotron.py at fbbbd2393c, 2025-02-20): Megatron-Core's native fusion
_NEMO_2502_LOSS = "the loss in Megatron-Core's native fusion (NeMo 2.0's default before 25.04)"
_PAGES = {"25.02": "performance_summary.html", "25.04": "archive/25.04-performance-summary.html",
          "25.07": "performance-summary.html"}
_FIRST_B200 = ("25.02 is NeMo's first release with B200 figures: at one layout 25.11 ran Llama 3 8B "
               "18% faster (30,624 against 26,006 tokens/s/GPU) and 405B 6% faster (661 against "
               "625), and the planner describes the later software")
_NEMOTRON15 = ("Nemotron-4 15B is the most optimistic row on both Blackwell systems (B200 in "
               "25.02, GB200 in 25.04) where Nemotron-4 340B and GPT-3 175B of the same tables "
               "are within 15%; its MLP's squared ReLU is priced as GeLU's one elementwise pass, "
               "and what its layers lose is not in the tables")
_NEMO_BLACKWELL_MISS = {
    ("25.02", "N15B"): _FIRST_B200 + "; and " + _NEMOTRON15,
    ("25.07", "70B", "mxfp8"): "25.09 ran this model in MXFP8 with CP 1 instead of 2 at 3,546 "
                               "tokens/s/GPU against these 2,605, and the planner predicts the "
                               "two layouts within a few percent of each other: what CP 2 cost "
                               "MXFP8 in 25.07 is not in the model",
}


def _nemo_blackwell():
    """NeMo 25.02's DGX-B200 table and 25.04's and 25.07's DGX-GB200 tables (each page's first
    table, the part of each stored copy at hand), every dense row whose model the zoo has or
    NeMo's config gives and whose layout no later scored release lists: checked blind, before
    the GB200's clock share (``constants.GB200_PAIRS``) was fitted, at 2 of 10 within 15%."""
    models = {"175B": gpt("gpt3-175B-nemo-perf", 96, 12288, 96, 2048, 51200, "NVIDIA/NeMo "
                          "GPTConfig175B and scripts/performance/llm/pretrain_gpt3_175b.py at "
                          "8cfedd7", dropout=False),
              "70B": MODELS["llama3-70B"], "405B": _L405,
              "N15B": _nemotron("Nemotron4Config15B", 32, 6144, 48, 8, 24576),
              "N340B": _nemotron("Nemotron4Config340B", 96, 18432, 96, 8, 73728)}
    names = {"175B": "GPT3-175B", "70B": "LLAMA3-70B", "405B": "LLAMA3-405B",
             "N15B": "Nemotron-15B", "N340B": "Nemotron-340B"}
    rows = (  # release, gpu, model, GPUs, precision, batch, micro-batch, degrees, tokens/s/GPU
        ("25.02", "B200", "175B", 512, "fp8", 2048, 2, dict(tp=4, pp=4, v=6), 1600),
        ("25.02", "B200", "70B", 64, "fp8", 128, 1, dict(tp=2, pp=4, cp=2, v=5), 3062),
        ("25.02", "B200", "N15B", 64, "fp8", 256, 2, {}, 14760),
        ("25.02", "B200", "N340B", 128, "fp8", 32, 1, dict(tp=8, pp=4, v=12), 602),
        ("25.04", "GB200", "175B", 128, "fp8", 256, 2, dict(tp=4, pp=4, v=12), 1804),
        ("25.04", "GB200", "405B", 128, "fp8", 64, 1, dict(tp=4, pp=8, cp=2, v=8), 665),
        ("25.04", "GB200", "N15B", 64, "fp8", 256, 2, {}, 17809),
        ("25.04", "GB200", "N340B", 128, "fp8", 32, 1, dict(tp=8, pp=4, v=12), 737),
        ("25.07", "GB200", "70B", 64, "fp8", 128, 1, dict(zero_stage=3), 4066),
        ("25.07", "GB200", "70B", 64, "mxfp8", 128, 1, dict(tp=2, pp=4, cp=2, v=5), 2605))
    for release, gpu, size, n, dtype, B, b, degrees, tps in rows:
        yield _nvidia_row(
            f"NeMo {release} {names[size]} {n} {gpu} {dtype.upper()}",
            "NeMo 25.02-25.07 B200/GB200", _NEMO_PAGE.format(release, gpu, _PAGES[release]),
            models[size], gpu, n, B, degrees, b, dtype, tps,
            (f"; FSDP over {n}" if degrees.get("zero_stage") == 3 else "")
            + "; recomputation not in the table, searched"
            + ("; " + _NEMO_2502_LOSS if release == "25.02" else ""),
            loss_kernel="megatron-jit" if release == "25.02" else "triton",
            known_miss=_NEMO_BLACKWELL_MISS.get((release, size, dtype),
                                                _NEMO_BLACKWELL_MISS.get((release, size), "")))


NVIDIA_ROWS = (*_bridge(), *_bridge_blackwell(), *_nemo_2407(), *_nemo_blackwell())

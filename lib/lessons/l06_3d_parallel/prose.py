"""Where the numbers of notebook 06's prose come from (see lessons.common.prose).

Computed entries call only pure functions and constants (the sweep's settings, the model
presets, the planner's records of published runs); nothing here starts ranks. The §3 sweep's
measurements (step times, the Spearman rho) are printed by its code cell, never typed.
"""
import inspect

from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from lessons.l06_3d_parallel import experiments
from lessons.l06_3d_parallel.experiments_clip import clip_rows
from parlab import cost, planner

GPT3 = planner.MODELS["175B"]  # Brown et al. 2020, Table 2.1


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def _emulated_seconds() -> float:
    """T = t_f + t_b: the whole batch through the whole model, as §3's sweep sleeps it."""
    return experiments.T_FWD + experiments.T_BWD


def _ideal_ms() -> float:
    """Every layout's ideal step, T / world, in ms."""
    return 1e3 * _emulated_seconds() / _default(experiments.emulated_sweep, "world")


def _table4_as_printed() -> int:
    """Llama 3's 128k row with Table 4's printed DP = 4: TP x CP x PP x 4 GPUs."""
    run = next(r for r in planner.RUNS if "CP16" in r.name)
    return run.layout["tp"] * run.layout["cp"] * run.layout["pp"] * 4


INTERVIEW = "interview answer"  # the seed text's GPT-3 claim, quoted in §6
LLAMA3 = "Llama 3"  # Dubey et al. 2024, §3.3.2 and Table 4

NUMBERS = [
    # the header
    given("40 min", "reading time"),
    given("20 min", "time for the exercises of §7"),
    # §2 clipping: the max_norm clip_rows() runs with
    computed("Clipping by the global norm", lambda: _default(clip_rows, "max_norm"), "{}"),
    # §3 the emulated sweep's settings
    computed("What is measured", _emulated_seconds, "{:.1f} s"),
    computed("What is measured", _ideal_ms, "{:.0f} ms"),
    computed("What is measured", lambda: experiments.BATCH, "{}"),
    # §4-§5: Llama 3 405B's long-context stage (Dubey et al. 2024, Table 4: 16,384 GPUs,
    # TP 8, CP 16, PP 16, DP printed as 4, sequence 131,072)
    cited("128k", LLAMA3),
    cited("16,384", LLAMA3),
    cited("8 ×", LLAMA3),
    cited("16 ×", LLAMA3),
    cited("16", LLAMA3),
    computed("Table 4 prints DP = 4", _table4_as_printed, "{:,}"),
    # §6 the interview text's GPT-3 claim: 8-way TP x 64-way PP x 64-way DP = 32768 cards,
    # "312 TFLOPS/GPU (52% utilisation)"
    cited("64", INTERVIEW),
    cited("32768", INTERVIEW),
    cited("312 TFLOP/s", INTERVIEW),
    cited("52%", INTERVIEW),
    # ... and its Chinese, quoted as the seed text writes it: "312 TFLOPS/GPU"
    cited("312 TFLOP", INTERVIEW),
    # the 30-second answer's question (its answer, with Narayanan et al.'s numbers, is
    # interview.show("thirty"))
    given("30", "the length of the spoken answer, in seconds", near="Answer in 30 seconds"),
    # exercise 4: GPT-3's shape from the model preset the checker uses
    computed("**4.** GPT-3 175B", lambda: GPT3.n_layers, "{}"),
    computed("**4.** GPT-3 175B", lambda: GPT3.shape.d_model, "{}"),
    computed("**4.** GPT-3 175B", lambda: GPT3.vocab_size, "{}"),
    given("16", "exercise 4's pipeline degree (check_memory(pp=16))", near="**4.** GPT-3 175B"),
    computed("**4.** GPT-3 175B", lambda: cost.zero_memory(1, 1, 0)["optimizer"], "{:.0f} bytes"),
    # references
    shared("bytes_per_param_adam", "16 bytes per parameter", "{:.0f} bytes"),
]


def _convention(key):
    """Llama 3's 128k row counted two ways (``experiments.convention_example``)."""
    return lambda: experiments.convention_example()[key]


def _two_sources(key):
    """MT-NLG's 2240-GPU run as its paper and PaLM's Table 3 count it
    (``experiments.two_sources_example``)."""
    return lambda: experiments.two_sources_example()[key]


NUMBERS += [
    # §4 "Which FLOPs": one predicted step, the attention square counted full and causal,
    # against Table 4's MFU and the planner's tolerance
    computed("Which FLOPs", _convention("published"), "{:.0%}"),
    computed("Which FLOPs", _convention("full"), "{:.0%}"),
    computed("Which FLOPs", _convention("causal"), "{:.0%}"),
    computed("Which FLOPs", lambda: planner.TOLERANCE, "{:.0%}"),
    # ... and two published figures for one run (MT-NLG's own, PaLM's Table 3 MFU)
    computed("MT-NLG's paper", _two_sources("tflops"), "{:.0f} TFLOP/s"),
    computed("MT-NLG's paper", _two_sources("gpus"), "{}"),
    computed("MT-NLG's paper", _two_sources("hfu"), "{:.0%}"),
    computed("MT-NLG's paper", _two_sources("peak"), "{:.0f} TFLOP/s"),
    computed("MT-NLG's paper", _two_sources("palm"), "{:.1%}"),
    computed("MT-NLG's paper", _two_sources("model_share"), "{:.0%}"),
    computed("MT-NLG's paper", _two_sources("converted"), "{:.0%}"),
]

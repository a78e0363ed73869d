"""What an estimate's FLOP figures count, and the same predicted step counted another way.

Two choices make two sources' MFUs differ for the same run and the same seconds:

  model or hardware FLOPs   model FLOPs count the work the model needs (MFU: PaLM,
                            Chowdhery et al. 2022, §4.1; Megatron-LM's count); hardware
                            FLOPs add what recomputation runs again (Narayanan et al. 2021,
                            §5.1, report teraFLOP/s this way; HFU)
  the attention square      the s x s scores counted full (PaLM's 12 L T d, Megatron-LM's
                            count) or causal, the unmasked half a causal kernel computes

An ``Estimate`` states its count (``FLOP_CONVENTION``: model and hardware figures, both
with the square full) and ``flops_as(e, flops, attention)`` gives its throughput and
utilisation in any of the four.
"""

from __future__ import annotations

from .. import cost
from ..validate import check_choice

FLOPS = ("model", "hardware")
ATTENTION_COUNTS = ("full", "causal")
FLOP_CONVENTION = ("mfu and model_tflops_per_gpu: model FLOPs (no recomputation); hfu and "
                   "tflops_per_gpu: hardware FLOPs (recomputation included); both count the "
                   "attention's s x s square full (Megatron-LM's and PaLM's count; a causal "
                   "kernel computes half of it). Other counts: flops_as(flops, attention)")
# a published figure's count, by the metric a source reports (published.PublishedRun.metric)
METRIC_CONVENTION = {"tflops": ("hardware", "full"), "mfu": ("model", "full"),
                     "model_tflops": ("model", "full"), "step_s": None}


def flops_as(e, flops: str = "model", attention: str = "full") -> dict:
    """``e``'s predicted step (its seconds unchanged) counted as ``flops`` ("model" |
    "hardware") with the attention square ``attention`` ("full" | "causal"):
    {"flops", "attention", "flops_per_token", "tflops_per_gpu", "mfu"} -- "mfu" the
    utilisation of the 16-bit peak in that count (model FLOPs: MFU; hardware: HFU)."""
    flops = check_choice("flops", flops, FLOPS)
    attention = check_choice("attention", attention, ATTENTION_COUNTS)
    m = e.model
    per_token = cost.flops_per_token(m.shape, m.n_layers, m.seq_len, vocab_size=m.vocab_size,
                                     count="megatron", causal=attention == "causal",
                                     recompute=e.layout.recompute if flops == "hardware" else "none",
                                     attention=e.layout.attention)
    rate = per_token * e.tokens_per_second / e.n_gpus  # FLOP/s per GPU
    return {"flops": flops, "attention": attention, "flops_per_token": per_token,
            "tflops_per_gpu": rate / 1e12, "mfu": rate / (e.peak_tflops * 1e12)}


def metric_as(e, metric: str, attention: str = "full") -> float:
    """``e``'s figure in a source's ``metric`` ("tflops", "mfu", "model_tflops", "step_s"),
    with the attention square counted ``attention``."""
    conv = METRIC_CONVENTION[check_choice("metric", metric, tuple(METRIC_CONVENTION))]
    if conv is None:
        return e.step_time.total
    x = flops_as(e, conv[0], attention)
    return x["mfu"] if metric == "mfu" else x["tflops_per_gpu"]

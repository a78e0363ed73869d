"""§6's interview answers and the appendix's numbers, as functions of what the notebook
computed; the notebook shows each by naming it (``interview.show("c", ll=ll, ...)``),
closed until the learner clicks (lessons.common.interview)."""

from __future__ import annotations

from lessons.common.interview import Answer, Corner

from . import experiments

GB, TB = 1e9, 1e12


def _a(b405, per_gpu, stall, c405, bw60) -> Answer:
    return Answer("(a) answer", [
        f"Size: 12 B/param (fp32 master weights, AdamW m and v: what a resume needs) x 405e9 = "
        f"{b405['total'] / TB:.2f} TB (<code>cost.checkpoint_bytes</code>). The bf16 weights are a cast of the "
        "master; a framework that saves them too writes 14 B/param.",
        f"Sharded: every rank writes its own shard with DCP (§1), {per_gpu / 1e6:.0f} MB per GPU over 16,384 GPUs, "
        "plus one .metadata file; no rank gathers the model.",
        f"Async: stage to host memory, write in the background (§2: the stall fell to "
        f"{stall['async_s'] / stall['sync_s']:.0%} of a sync save here). A sync save at the 2 TB/s of Llama 3's storage "
        f"would stall {c405:.1f} s; storage that makes it stall {experiments.SLOW_STALL_S:.0f} s (§4's slow case) writes "
        f"{b405['total'] / TB:.2f} TB / {experiments.SLOW_STALL_S:.0f} s = {bw60 / GB:.0f} GB/s.",
        "Resharding on resume: the metadata maps boxes, so the checkpoint loads on another dp or layout (§1: "
        "dp4 -> dp2, equal within 1e-5). Save the data position and the RNG too, or the resumed run differs."],
        "Sharded, async, with the full training state: 12 B/param of it.")


def _b(per16k, ll, lost, fo) -> Answer:
    return Answer("(b) answer", [
        "The whole job stops: every collective waits for the dead rank (§3: torchrun stopped the survivor).",
        f"At Llama 3's rate that is {per16k:.1f} unexpected interruptions per day on 16,384 GPUs, one every "
        f"{ll['job_mtbf_hours']:.1f} h (§4).",
        "Restart from the last good checkpoint (published whole, its checksums holding), on a spare node or a "
        "smaller mesh "
        "(resharding, §1).",
        f"Lost per failure: on average tau/2 + C + R = {ll['young_s'] / 2:.0f} + {ll['checkpoint_s']:.1f} + "
        f"{ll['restart_s']:.0f} = {lost:.0f} s at Young's interval (R assumed); measured here: {fo['redone_steps']} step redone and {fo['lost_seconds']:.1f} s."],
        "The job stops and restarts from the last checkpoint; several times a day at 16k GPUs.")


def _c(ll, b405, slow, R) -> Answer:
    return Answer("(c) answer", [
        f"Young (1974): tau* = sqrt(2 C M). C = {ll['checkpoint_s']:.1f} s ({b405['total'] / TB:.2f} TB at 2 TB/s), M = "
        f"{ll['job_mtbf_hours']:.2f} h: {ll['young_s']:,.0f} s (Daly 2006: {ll['daly_s']:,.0f} s); with a 60 s stall, "
        f"{slow['young_s']:,.0f} s.",
        "It grows only as the square root: halve C (async saves) and tau* shrinks by 1.4x; double the GPUs and "
        "it shrinks by 1.4x too.",
        f"Goodput there: {ll['goodput']:.1%} with R = {R:.0f} s ({slow['goodput']:.1%} with the 60 s stall); Llama 3 "
        "reports > 90% (§4)."],
        "Every sqrt(2 C M): minutes at Llama 3's failure rate with a seconds-long stall, ~20 minutes with a one-minute one.")


def _d(dp_row) -> Answer:
    return Answer("(d) answer", [
        f"Sets the pace: measured here, DP {dp_row['normal_s'] * 1e3:.0f} -> {dp_row['slowed_s'] * 1e3:.0f} ms "
        f"with one rank of 4 50% slower (predicted {dp_row['predicted_s'] * 1e3:.0f} ms) (§5).",
        "DP and TP: step = the slowest rank's compute + communication (<code>cost.synchronous_step</code>). PP: the "
        "slow stage sets the steady state; the formula is an upper bound for 1F1B.",
        "Find it by per-rank step times, replace or drain the node; it fails nothing, so no restart catches it."],
        "The whole synchronous job runs at the slowest rank's speed.")


def _claim(peaks) -> Answer:
    return Answer("claim answer", [
        "The bubble part holds: (P − 1)/(M + P − 1) of the step is idle, and it falls as M grows, under GPipe "
        "and 1F1B alike.",
        "The memory part holds only under GPipe, which runs all M forwards first and holds M micro-batches. "
        "1F1B holds min(P − r, M) on rank r at any M, as measured in "
        "<a href='03_pipeline_parallel.ipynb'>03 · Pipeline parallelism, §5</a>. Rank 0 at P = 4: "
        + "; ".join(f"M = {m}: GPipe {g}, 1F1B {o}" for m, (g, o) in peaks.items())
        + " (<code>cost.pipeline_peak_activations</code>).",
        "Activation checkpointing (recomputation) is another trade and another 'checkpoint': it drops a layer's "
        "activations in forward and recomputes them in backward, memory for compute inside one step. This "
        "notebook's <b>model checkpoints</b> write the training state to storage to survive failures; "
        "recomputation changes no checkpoint's size (12 B/param, §2)."],
        "Half right: the bubble falls with M, but the activation memory rises with M only under GPipe; "
        "1F1B holds min(P − r, M).")


def _numbers(b405, per_gpu, c405, bw60, per16k, ll, lost, R, slow, peaks) -> Answer:
    """The appendix: every number §6's answers use that does not depend on this machine's timing."""
    return Answer("Every number of §6", [
        f"(a) 405B at 12 B/param: {b405['total'] / TB:.2f} TB; per GPU over 16,384: {per_gpu / 1e6:.0f} MB; "
        f"sync at 2 TB/s: {c405:.1f} s; a {experiments.SLOW_STALL_S:.0f} s stall: {bw60 / GB:.0f} GB/s",
        f"(b) unexpected interruptions per day at 16,384 GPUs: {per16k:.2f}; job interrupted every {ll['job_mtbf_hours']:.2f} h",
        f"(b) lost per failure at tau*: tau/2 + C + R = {lost:.0f} s (R = {R:.0f} s assumed)",
        f"(c) C = {ll['checkpoint_s']:.1f} s: tau* Young {ll['young_s']:.0f} s, Daly {ll['daly_s']:.0f} s; "
        f"goodput {ll['goodput']:.1%}; C = {slow['checkpoint_s']:.0f} s: {slow['young_s']:.0f} s, {slow['goodput']:.1%}",
        "claim: micro-batches held on rank 0, P = 4: "
        + "; ".join(f"M = {m}: GPipe {g}, 1F1B {o}" for m, (g, o) in peaks.items())])


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "claim": _claim, "numbers": _numbers})
show = corner.show

"""Where the numbers of notebook 00's prose come from (see lessons.common.prose)."""
import inspect

from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from parlab import cost
from parlab.hardware_presets import NODE_PRESETS

MiB = 1 << 20


def _default(fn, name):
    """A keyword's default value: the prose quotes the knob the code really uses."""
    return inspect.signature(fn).parameters[name].default


def _ring_mib(n):
    """Bytes one rank sends in a ring all-reduce of 1 MiB on n ranks, in MiB (§4's table)."""
    return cost.collective_bytes("all_reduce", MiB, n) / MiB


def _experiments():
    from lessons.l00_collectives import experiments
    return experiments


def _exercises():
    from lessons.l00_collectives import exercises
    return exercises


def _magic_timeout():
    from lessons.common import interactive
    return interactive.DEFAULT_TIMEOUT


NUMBERS = [
    # cell 0: reading and exercise time
    given("45 min", "reading time"),
    given("30 min", "time for the exercises"),
    # §2: the demo's values 10r + i (tens digit = rank, units digit = element)
    given("10", "the demo's values 10r+i: the tens digit names the rank", near="tens digit"),
    # §3, §4: the traced all-reduces use 1 << 18 float32 = 1 MiB (the code cells' numel)
    given("1 MiB", "the size of the traced ring all-reduces (numel 1 << 18 float32)"),
    # §4: ring bytes per rank 2(N-1)/N * S for S = 1 MiB, what the trace counts
    computed("never reaching it", lambda: _ring_mib(2), "{:g} MiB"),
    computed("never reaching it", lambda: _ring_mib(4), "{:g} MiB"),
    computed("never reaching it", lambda: _ring_mib(8), "{:g} MiB"),
    # §4 two levels: the lab's 7B (6.74e9 parameters, 13.5 GB of fp16 gradients)
    shared("7b_params_billion", "Llama-2-7B's shape", "{:.2f}"),
    shared("7b_fp16_weights_gb", "Llama-2-7B's shape", "{:.1f} GB"),
    given("64", "the example's number of nodes (hierarchical_at_scale(nodes=64))",
          near="over 64 nodes of 8 GPUs"),
    # §5: the ping-pong's message sizes and repetitions, the model check's repetitions
    computed("for messages of", lambda: min(_experiments().ALPHA_BETA_SIZES), "{} B"),
    computed("for messages of", lambda: max(_experiments().ALPHA_BETA_SIZES) // MiB, "{} MiB"),
    computed("Each size is sent", lambda: _default(_experiments().measure_alpha_beta, "repeats"), "{}"),
    computed("best and median of", lambda: _default(_experiments().all_reduce_vs_model, "repeats"),
             "{}"),
    # the explorer's NVLink5 reach: a GB200 NVL72 rack
    computed("NVLink5 a", lambda: NODE_PRESETS["GB200-NVL72"].nvlink_domain, "{}"),
    # §6: the %%ranks magic's timeout without --timeout
    computed("without it", _magic_timeout, "{:.0f} s"),
    # §7: DDP's default bucket (PyTorch: bucket_cap_mb=25, counted as MiB), the 7B, IB HDR
    cited("25 MiB", "DDP"),
    shared("7b_fp16_weights_gb", "The case to count", "{:.1f} GB"),
    shared("ib_hdr_gb_s", "The case to count", "{:.0f} GB/s"),
    given("30", "the spoken answer's length", near="Answer in 30 seconds"),
    # §8: the checkers stop a hanging function after their timeout
    computed("A function that hangs",
             lambda: _default(_exercises().check_reduce_scatter, "timeout"), "{:.0f} s"),
    # references: the title of Jeaugey's NVIDIA blog post
    cited("2.4", "Jeaugey"),
]

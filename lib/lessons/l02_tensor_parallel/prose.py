"""Where the numbers of notebook 02's prose come from (see lessons.common.prose)."""
import inspect

from parlab import cost
from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from lessons.l02_tensor_parallel import experiments

G3 = experiments.GPU_MODELS["GPT-3 175B"]
M13 = experiments.GPU_MODELS["13B"]
_EFFICIENCY = inspect.signature(experiments.gpu_scale).parameters["efficiency"].default


def _sp_extra() -> float:
    """What SP's re-gather adds to TP's bytes per block (any shape, any t > 1)."""
    s, h = experiments.SMALL.seq_len, experiments.SMALL.d_model
    tp, sp = (cost.tp_comm_per_layer(experiments.BATCH, s, h, 2, q)["bytes"] for q in (False, True))
    return sp / tp - 1


NUMBERS = [
    given("45 min", "reading time"),
    given("30 min", "time for the exercises"),
    # §2: the message of one f/g collective, b s h fp32 values of the small GPT
    computed("The message is", lambda: cost.tp_comm_per_layer(
        experiments.BATCH, experiments.SMALL.seq_len, experiments.SMALL.d_model, 2,
        bytes_per_value=experiments.FP32)["message_bytes"] / 2 ** 10, "{:g} KiB"),
    computed("Bytes do not go down", _sp_extra, "{:.0%}"),
    # §6: Korthikanti et al.'s activation formula (16-bit values; its replicated 10 sbh)
    cited("16", "Korthikanti", near="16-bit values"),
    cited("10", "Korthikanti", near="the 10 is the replicated"),
    computed("At GPT-3's shape", lambda: G3["d_model"], "{}"),
    computed("At GPT-3's shape", lambda: G3["n_heads"], "{}"),
    computed("Tokens per second of real training steps", lambda: experiments.MEDIUM.d_model, "{}"),
    computed("The GPU-scale model", lambda: _EFFICIENCY, "{:g}"),
    computed("The model's assumptions", lambda: _EFFICIENCY, "{:g}"),
    # §11: the interview answer's claims, quoted to be checked (their verdicts are computed)
    cited("2.8 GB", "interview answer"),
    cited("600 GB/s", "interview answer"),
    cited("2 bytes", "interview answer"),
    cited("48 MB", "interview answer"),
    cited("96 MB", "interview answer"),
    cited("10%", "interview answer"),
    cited("30%", "interview answer"),
    # ... and in Chinese, in the seed's own words (its "5-10%" is read as no number)
    cited("2.8 GB", "面试答案"),
    cited("600 GB/s", "面试答案"),
    cited("48 MB", "面试答案"),
    cited("96 MB", "面试答案"),
    cited("30%", "面试答案"),
    computed("**(d)**", lambda: cost.tp_comm_per_layer(1, G3["seq_len"], G3["d_model"], 8)["message_bytes"]
             / 2 ** 20, "{:g} MiB"),
    given("16", "t across two nodes of 8 GPUs", near="**(h)**"),
    computed("A 13B model", lambda: M13["d_model"], "{}"),
    computed("A 13B model", lambda: M13["n_heads"], "{}"),
    computed("A 13B model", lambda: M13["n_layers"], "{}"),
    # the 30-second answer itself is interview.show("thirty_seconds"): its MFUs are computed there
    given("30", "the answer's length in seconds", near="Answer in 30 seconds"),
    # Your turn: the exercises' shapes and inputs
    given("32", "exercise 1's hidden width (4h, h = 8)", near="Megatron's MLP, forward"),
    given("16", "exercise 3's sequence length", near="Hide the all-gather"),
    given("64", "exercise 5's sequence length", near="Predict the bytes"),
    given("128", "exercise 5's width", near="Predict the bytes"),
    given("25%", "exercise 8's threshold", near="pass 25%"),
]

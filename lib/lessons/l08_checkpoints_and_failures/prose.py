"""Where the numbers of notebook 08's prose come from (see lessons.common.prose)."""
from parlab import cost
from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from . import experiments as E

TB = 1e12


def _per_param(weights: int = 0) -> int:
    return cost.checkpoint_bytes(1, weights=weights)["per_param"]


def _seconds(value) -> str:
    return f"{value:.0f} s"


# the cells that quote the lab's assumed restart time R and slow-storage stall C
_RESTART_CELLS = ("R = 600 s is our", "Llama 3's own storage rate", "(open) With")
_SLOW_CELLS = ("R = 600 s is our", "Llama 3's own storage rate", "with a 60 s stall not even")

NUMBERS = [
    # intro
    given("16,384", "a synchronous job's GPU count, Llama 3's (named in §4)",
          near="Checkpoints and failures at scale"),
    given("16k", "Llama 3's 16,384 GPUs, rounded"),
    given("35 min", "reading time"),
    given("20 min", "time for Your turn"),
    # §2: the stall measurement's model, the bytes per parameter
    given("256", "experiments.MEDIUM's d_model", near="the lab's `MEDIUM` GPT"),
    computed("counts 12 B per parameter", _per_param, "{} B"),
    computed("counts 12 B per parameter", lambda: _per_param(2) - _per_param(), "{} B"),
    computed("counts 12 B per parameter", lambda: _per_param(2), "{} B/param"),
    computed("counts 12 B per parameter", _per_param, "{} B/param"),
    # §2: Narayanan et al.'s 1T checkpoint against the formula
    cited("13.8 TB", "Narayanan et al."),
    cited("1.008", "Narayanan et al."),
    computed("their 1T model's checkpoint", lambda: 13.8e12 / 1.008e12, "{:.1f} B/param"),
    computed("their 1T model's checkpoint", lambda: _per_param(2), "{} B/param"),
    computed("their 1T model's checkpoint", _per_param, "{} B/param"),
    computed("their 1T model's checkpoint", lambda: cost.checkpoint_bytes(1.008e12)["total"] / TB,
             "{:.1f} TB"),
    # §4: Llama 3's counts and storage (Dubey et al. 2024, §3.3.1, §3.3.4, Table 5)
    cited("54", "Llama 3"),
    cited("16,384", "Llama 3"),
    cited("466", "Llama 3"),
    cited("419", "Llama 3"),
    cited("90%", "Llama 3"),
    cited("58.7%", "Llama 3"),
    cited("2 TB/s", "Llama 3"),
    cited("7 TB/s", "Llama 3"),
    computed("R = 600 s is our", lambda: E.checkpoint_size() / TB, "{:.2f} TB"),
    computed("R = 600 s is our", _per_param, "{} B/param"),
    computed("R = 600 s is our", lambda: E.C_TECTONIC, "{:.1f} s"),
    computed("R = 600 s is our", lambda: E.bandwidth_for_stall() / 1e9, "{:.0f} GB/s"),
    *[computed(near, lambda: E.RESTART_S, _seconds) for near in _RESTART_CELLS],
    *[computed(near, lambda: E.SLOW_STALL_S, _seconds) for near in _SLOW_CELLS],
    # §4: the formula's goodput at Young's interval, the numbers the code cell above prints
    computed("Llama 3's own storage rate",
             lambda: E.llama3_check(E.C_TECTONIC, E.RESTART_S)["goodput"], "{:.1%}"),
    computed("Llama 3's own storage rate",
             lambda: E.llama3_check(E.SLOW_STALL_S, E.RESTART_S)["goodput"], "{:.1%}"),
    given("90%", "the goodput target: Llama 3's reported effective training time"),
    # §5
    given("50%", "the straggler's slowdown, a knob of experiments.stragglers"),
    # Your turn: the exercises' inputs
    given("60 s", "exercise 1's checkpoint stall", near="Young's interval,"),
    given("3 h", "exercise 1's job MTBF"),
    given("16,384", "exercise 2's GPU count", near="how many interruptions per day"),
    given("5 years", "exercise 2's MTBF per GPU"),
    given("64", "exercise 3's dp", near="FSDP over dp = 64"),
    given("100,000", "exercise 5's GPU count"),
    computed("(open) With", lambda: E.checkpoint_size() / TB, "{:.2f} TB"),
    cited("2 TB/s", "Llama 3", near="(open) With"),
    given("80%", "exercise 5's goodput target"),
    # references
    cited("17", "Young"),
    cited("22", "Daly"),
    shared("bytes_per_param_adam", "Rajbhandari et al.", "{:.0f} B/param"),
]

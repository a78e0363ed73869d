"""Where the numbers of notebook 04's prose come from (see lessons.common.prose)."""
import inspect

from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from parlab.cost import expert_parallel as moe_cost


def _default(fn, name):
    """A keyword's default value: the prose quotes the knob the code really uses."""
    return inspect.signature(fn).parameters[name].default


def _ex():
    from lessons.l04_expert_parallel import experiments
    return experiments


def _exercises():
    from lessons.l04_expert_parallel import exercises
    return exercises


def _mixtral(key):
    return _ex().MIXTRAL[key]


NUMBERS = [
    # the overview: reading, exercise and run time
    given("40 min", "reading time"),
    given("30 min", "time for the exercises"),
    # §1: the reference run is capped at capacity factor 1.0 (the code cell's moe_config)
    given("1.0", "the capacity factor of the check against one device", near="so there are drops"),
    # §3: the balancers' knobs and the capped runs
    computed("γ = 0.01 here", lambda: _ex().BALANCERS["bias"]["bias_update_rate"], "{:g}"),
    computed("γ = 0.01 here", lambda: _default(_ex().drop_sweep, "measured_cf"), "{:g}"),
    given("30", "training steps of the sweep (drop_sweep(steps=30))", near="γ = 0.01 here"),
    # §5: the emulated expert work per row
    given("0.2 ms", "the emulated time per row (busiest(row_s=2e-4))"),
    # §5: HEAVY's experts against SMALL's
    computed("wider experts", lambda: _ex().HEAVY["d_ff"] / _ex().SMALL.d_ff, "{:.0f}×"),
    # §6: the widget routes 256 tokens; the question asks about capacity factor 1.0
    given("256", "tokens the widget routes (experiments.predict(256, ...))", near="## 6 · Try it"),
    given("1.0", "the capacity factor the question asks about", near="## 6 · Try it"),
    # §7: Mixtral's width; the example's sequence per rank; EP's degree 8 = 8 sequences
    computed("EP vs TP: what each sends", lambda: _mixtral("d_model"), "{}"),
    given("4096", "the example's tokens per rank", near="EP vs TP: what each sends"),
    given("8×", "EP degree 8: eight ranks, eight sequences, where TP's 8 share one",
          near="for 8× the tokens"),
    # §8: DeepSeekMoE §3.1's example: 16 experts top-2 cut in m = 4 -> 64 top-8
    cited("16", "DeepSeekMoE", near="Fine-grained + shared"),
    computed("Fine-grained + shared",
             lambda: moe_cost.fine_grained_experts(16, 2, 4096, 4)["n_experts"], "{}"),
    computed("Fine-grained + shared",
             lambda: moe_cost.fine_grained_experts(16, 2, 4096, 4)["combinations"] / 1e9, "{:.1f}"),
    computed("Fine-grained + shared",
             lambda: moe_cost.fine_grained_experts(16, 2, 4096, 1)["combinations"], "{}"),
    computed("Fine-grained + shared", lambda: moe_cost.expert_choice_coverage(4, 1.0)[0], "{:.0%}"),
    cited("128", "MegaBlocks"),  # §5.1.2: 128 x 128 blocks
    # §9: the interview answer's claims
    cited("10×", "interview answer"),
    cited("1.25", "interview answer"),
    # ... and the same claims in the Chinese interview text's own words ("8×7B", "10 倍")
    cited("8×", "面试答案", near="Mixtral 8×7B"),
    cited("10", "面试答案", near="10 倍"),
    given("30", "the spoken answer's length", near="Answer in 30 seconds"),
    # exercises 4-6: the checkers' inputs
    computed("how many assignments can one expert take",
             lambda: _default(_exercises().check_capacity, "tokens"), "{}"),
    computed("how many assignments can one expert take",
             lambda: _default(_exercises().check_capacity, "n_experts"), "{}"),
    computed("how many assignments can one expert take",
             lambda: _default(_exercises().check_capacity, "capacity_factor"), "{:g}"),
    computed("how many bytes does one rank send",
             lambda: _default(_exercises().check_a2a_bytes, "tokens"), "{}"),
    computed("how many bytes does one rank send",
             lambda: _default(_exercises().check_a2a_bytes, "d_model"), "{}"),
    computed("total and active parameters?", lambda: _mixtral("n_layers"), "{}"),
    computed("total and active parameters?", lambda: _mixtral("d_model"), "{}"),
    computed("total and active parameters?", lambda: _mixtral("d_ff"), "{}"),
    computed("total and active parameters?", lambda: _mixtral("n_heads"), "{}"),
    computed("total and active parameters?", lambda: _mixtral("vocab_size"), "{}"),
    # exercise 8 (the widget's skew and capacity factors), exercise 9 (block sizes)
    given("1.0", "a capacity factor to try in the widget", near="set skew 2"),
    given("2.0", "a capacity factor to try in the widget", near="set skew 2"),
    given("128", "a block size to try in dropless_rows", near="change `block` to 1"),
    # references: T5X / flaxformer's tokens_choose_base.gin
    cited("1.25", "T5X", near="tokens_choose_base.gin"),
    cited("2.0", "T5X", near="tokens_choose_base.gin"),
]

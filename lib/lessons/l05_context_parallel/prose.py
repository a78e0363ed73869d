"""Where the numbers of notebook 05's prose come from (see lessons.common.prose)."""
import inspect

from parlab import cost
from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from lessons.l05_context_parallel import experiments

LONG = experiments.LONG
_LIU = {r["host"]: r for r in experiments.liu_table2_rows()}


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def _imbalance(cp: int = 4) -> float:
    return cost.causal_work_per_rank(cp, "contiguous")["imbalance"]


def _k(positions: int) -> str:
    return f"{positions // 1024}k"


NUMBERS = [
    given("40 min", "reading time"),
    given("20", "time for Your turn, from"),
    given("30 min", "time for Your turn, to"),
    # the long-context shape: LLaMA-2-7B's layer at 131,072 tokens (experiments.LONG)
    computed("At 128k tokens a layer", lambda: _k(LONG["seq_len"])),
    computed("At 128k tokens, LLaMA-2-7B", lambda: _k(LONG["seq_len"])),
    computed("At 128k tokens, LLaMA-2-7B", lambda: LONG["d_model"], "{}"),
    computed("At 128k tokens, LLaMA-2-7B", lambda: experiments.LONG_LAYER.d_ff, "{}"),
    computed("At 128k tokens, LLaMA-2-7B", lambda: LONG["n_heads"], "{}"),
    computed("At 128k tokens, LLaMA-2-7B", lambda: LONG["n_layers"], "{}"),
    cited("16", "Korthikanti", near="bytes in 16 bits"),
    given("16", "the example sequence of §2", near="Contiguous**: rank r holds"),
    # §4: contiguous shards' imbalance 2cp/(cp+1) at cp = 4, and its limit 2
    computed("Every rank of a ring waits", _imbalance, "{:.1f}×"),
    given("2×", "the limit of 2cp/(cp+1) at large cp"),
    computed("Every rank of a ring waits", lambda: _default(experiments.timing_worker, "head_dim"), "{}"),
    computed("Why the call itself is not", _imbalance, "{:.1f}×"),
    # §5: the ring's hiding condition, and Liu et al.'s Table 2 beside it
    computed("The order is fixed by the algorithm", lambda: _default(experiments.ring_hiding, "d_model"), "{}"),
    computed("They agree", lambda: _LIU["A100 NVLink"]["c = F/B (k)"], "{:.2f}k"),
    computed("They agree", lambda: _LIU["A100 InfiniBand"]["c = F/B (k)"], "{:.2f}k"),
    computed("They agree", lambda: _LIU["A100 NVLink"]["s = 6c (k)"], "{:.2f}k"),
    computed("They agree", lambda: _LIU["A100 InfiniBand"]["s = 6c (k)"], "{:.1f}k"),
    cited("1.0k", "Liu et al."),
    cited("24.5k", "Liu et al."),
    cited("6.2k", "Liu et al."),
    cited("149.5k", "Liu et al."),
    cited("12.5 GB/s", "Liu et al."),
    cited("300", "Liu et al.", near="They agree"),
    shared("ib_hdr_gb_s", "They agree", "{:g} GB/s"),
    computed("They agree", lambda: experiments.block_ratios()["liu"], "{:g}×"),
    computed("They agree", lambda: experiments.block_ratios()["lab"], "{:g}×"),
    computed("They agree", lambda: experiments.block_ratios()["grid"], "{:g}×"),
    computed("They agree", lambda: experiments.hiding_block("NVLink3"), "{:,}"),
    computed("They agree", lambda: experiments.hiding_block("IB-HDR"), "{:,}"),
    computed("NVLink alone would hide", lambda: _k(LONG["seq_len"])),
    computed("NVLink alone would hide", lambda: LONG["seq_len"] // experiments.hiding_block("NVLink3"), "{}"),
    computed("NVLink alone would hide", lambda: experiments.hiding_block("NVLink3"), "{:,}"),
    computed("NVLink alone would hide", lambda: experiments.hiding_block("IB-HDR"), "{:,}"),
    computed("NVLink alone would hide", lambda: LONG["seq_len"] // experiments.hiding_block("IB-HDR"), "{}"),
    # §6-§7
    computed("On the right, the formula at the", lambda: _k(LONG["seq_len"])),
    computed("What we measure", lambda: experiments.PROBE["head_dim"], "{}"),
    computed("At the 128k shape (bf16", lambda: _k(LONG["seq_len"])),
    given("30", "the answer's length in seconds", near="Answer in 30 seconds"),
    # Your turn: the exercises' inputs
    given("16", "exercise 1's sequence length", near="which global positions"),
    computed("Ring attention at the 128k shape", lambda: _k(LONG["seq_len"])),
    computed("Ring attention at the 128k shape", lambda: LONG["seq_len"], "{}"),
    computed("Ring attention at the 128k shape", lambda: LONG["d_model"], "{}"),
    given("16", "exercise 6's sequence length", near="**Ring attention**, non-causal"),
    given("1M", "exercise 7's sequence length"),
]

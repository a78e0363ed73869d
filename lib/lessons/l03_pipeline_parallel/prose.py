"""Where the numbers of notebook 03's prose come from (see lessons.common.prose)."""
import inspect

from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from parlab import cost

from .experiments import explore

INTERVIEW = "interview answer"  # the seed text's claims, quoted in §10 (each cell names it)


def _explorer_chunk_forward_ms(v: int = 3) -> float:
    """A chunk's forward in the explorer's live run: its per-rank forward split over v chunks."""
    return inspect.signature(explore).parameters["t_fwd"].default / v * 1e3


NUMBERS = [
    given("60 min", "reading time"),
    given("100%", "the point where idle time passes the ideal time (idle / ideal > 1)",
          near="exceeds 100%"),
    given("16", "the largest M of §5's memory run (M = 4, 8, 16)", near="only under GPipe"),
    # §6: the emulated op times the notebook sets (T6_F, T6_B)
    given("30 ms", "T6_F, §6-7's emulated forward", near="Three numbers per schedule"),
    given("60 ms", "T6_B, §6-7's emulated backward", near="Three numbers per schedule"),
    # §6, the explorer's worst case
    given("12", "the explorer's M in the worst case", near="explorer's worst case"),
    computed("explorer's worst case", lambda: cost.bubble_fraction(2, 12, 3), "{:.1%}"),
    computed("explorer's worst case", _explorer_chunk_forward_ms, "{:g} ms"),
    # §7's exercise and §11's number exercises
    given("24", "M in the exercises (P = 8)"),
    given("256", "d_model of §8's wider model", near="Activation checkpointing"),
    # §10: the interview answer's claims, quoted
    cited("50%", INTERVIEW, near="Claims (from"),
    cited("20%", INTERVIEW, near="Claims (from"),
    cited("4×", INTERVIEW, near="Claims (from"),
    cited("37.5%", INTERVIEW, near="Claims (from"),
    cited("27.3%", INTERVIEW, near="Claims (from"),
    cited("15%", INTERVIEW, near="Claims (from"),
    cited("50%", INTERVIEW, near="**(a)**"),
    cited("20%", INTERVIEW, near="**(a)**"),
    cited("15%", INTERVIEW, near="**(c)**"),
    # (b): the claim's two values are the two normalisations of one bubble, true as numbers
    computed("**(b)**", lambda: cost.bubble_ratio(4, 8), "{:.1%}"),
    computed("**(b)**", lambda: cost.bubble_fraction(4, 8), "{:.1%}"),
    # §11: exercises 5-8 and their answers
    given("0.25", "how to type a share: an example", near="Exercises 5–8"),
    given("25%", "how to type a share: an example", near="Exercises 5–8"),
    computed("Answers to 5–8", lambda: cost.bubble_fraction(8, 24), "{:.3f}"),
    computed("Answers to 5–8", lambda: cost.bubble_fraction(8, 24, 3), "{:.3f}"),
    given("0.1", "exercise 7's target share (10%)", near="Answers to 5–8"),
    computed("Answers to 5–8", lambda: cost.min_micro_batches(8, 0.10), "{}"),
]

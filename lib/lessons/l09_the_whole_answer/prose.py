"""Where the numbers of notebook 09's prose come from (see lessons.common.prose). The
answers, follow-ups and claims table are rendered from ``facts()`` by code; the markdown
keeps only what a reader needs to start, the lab's 7B, the sources it cites and the
lesson's own choices."""
from lessons.common.prose import cited, computed, given, shared  # noqa: F401

NUMBERS = [
    # cell 0, objectives and time
    given("30", "the 30-second answer's length", near="Learning objectives"),
    given("30 min", "reading time"),
    given("15 min", "time for the drill and Your turn"),
    given("30", "the 30-second answer's length", near="Where the code is"),
    given("30", "the 30-second answer's length", near="The 30-second answer"),
    # §4: the lab's 7B, defined once (Llama's 7B shape, cost.MODEL_PRESETS["7B"])
    shared("7b_params_billion", "LLaMA-7B's shape", "{:.2f}"),
    # §5: the interview text's own figure, quoted to be judged
    cited("96 MB", "interview text"),
    # §6: the 1T model as Narayanan et al. ran it (SC 2021, Table 1: t = 8, p = 64, n = 3072)
    cited("64", "Narayanan et al.", near="Three jobs side by side"),
    cited("3072", "Narayanan et al.", near="Three jobs side by side"),
    given("1024", "the walk-through's middle job: 175B on 1024 A100s (the cell below runs it)",
          near="Three jobs side by side"),
    cited("64", "Narayanan et al.", near="Read the 1T line"),
    cited("3072", "Narayanan et al.", near="Read the 1T line"),
    # §7: the drill's examples of what it accepts
    given("1500 MB", "an example of the unit conversion the drill accepts"),
    given("12.5", "an example of a share typed without its % sign"),
    given("12.5%", "the same share typed with its % sign"),
    # §8 and the open questions: the checker's largest job, the open questions' inputs
    given("3072", "the checker's largest job: the 1T model on 3,072 A100s, as Narayanan et al. ran it",
          near="Your turn"),
    given("64", "open question (a)'s cluster: 64 H100s", near="Open questions"),
    given("16,384", "open question (b)'s cluster: Llama 3 405B's 16,384 H100s (Dubey et al. 2024, §3.3)",
          near="Open questions"),
    # §9: PaLM's Table 3 (Chowdhery et al. 2022): GPT-3's own training run at 21.3% MFU
    cited("21.3%", "Chowdhery"),
]

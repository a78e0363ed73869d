"""Where each number in a notebook's prose comes from.

A markdown cell cannot call code, so a number typed into prose can drift from what the lab
computes. Each lesson folder therefore lists the numbers its notebook's markdown quotes, in
its ``prose.py`` (``NUMBERS``), each as one of three kinds:

  computed(near, value, fmt)  the lab computes it: ``value()`` (a ``parlab.cost`` call, a
                              planner result, a shared figure below), printed with ``fmt``,
                              must read exactly as the prose has it, in the cell that
                              contains the words ``near``
  cited(text, source)         a constant quoted from a paper or a datasheet: ``source`` (an
                              author, a paper, a vendor) must be named in the same cell
  given(text, why)            a number the lesson chooses: an example's input, a knob, a
                              reading time

``check(notebook)`` reads the notebook and returns what disagrees: a number in the prose that
no entry accounts for, a computed number whose code now prints something else, an entry whose
number the prose no longer has. The test suite runs it on every notebook, so an edit of the
prose or of the code that makes them disagree fails there.

Which numbers are read: any with a decimal point or a thousands comma, any with a unit (%,
×, bytes, FLOP/s, seconds...), and any integer of 10 or more; not single digits without a
unit (a P of 4), nor section, table, figure and exercise numbers, years, arXiv ids, model
names (7B, 1T), or anything inside ``$math$``, ``code`` or a link's address.

``SHARED`` holds the figures more than one notebook quotes (7B's parameter count and its
training states, the A100's memory and peak, the link speeds of the lab's cluster), defined
once, over ``parlab.cost.MODEL_PRESETS`` and ``parlab.hardware_presets``: notebooks quote them
through ``shared(name, near, fmt)``, so they cannot disagree with each other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from parlab import cost
from parlab.hardware_presets import GPU_PRESETS, LINK_PRESETS

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"

_UNIT = (r"(?:%|×(?!\s*\d)|x\b(?!\s*\d)|[kKM]\b|GB/s|TB/s|MB/s|Gb/s|GiB|MiB|KiB|GB|MB|TB|KB|PB|"
         r"[TP]FLOP/s|TFLOPs?|PFLOPs?|FLOPs?|ms|µs|us|ns|s\b|min\b|h\b|hours?\b|days?\b|"
         r"years?\b|B/param|bytes?\b|B\b)")
NUMBER = re.compile(r"(?<![\w§.\-/#^])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)(\s?" + _UNIT + r")?")
# words after which a number names a place, not a quantity
_REFERENCE = re.compile(r"(?:§|Tables?|Figures?|Fig\.|Eq\.|Equations?|Exercises?|[Nn]otebooks?|"
                        r"Steps?|Sections?|Parts?|Appendix|Drill|Questions?|[Ff]ollow-ups?|→|"
                        r"Algorithm|Listing|Lemma|Theorem|version|v|torch|PyTorch|Python)\s*$")
_SKIP = [re.compile(p, re.S | re.M) for p in (
    r"\$\$.*?\$\$", r"\$[^$\n]*\$", r"`[^`]*`", r"\]\([^)]*\)", r"https?://\S+",
    r"\b\d{4}\.\d{4,5}(?:v\d)?\b",  # arXiv ids
    r"\b\d+(?:\.\d+)?[BT]\b(?!/)",  # model names: 7B, 175B, 1T (bytes have a space: 12 B)
    r"\b(?:19|20)\d\d[a-z]?\b",  # years
    r"^\s*#+\s*[\d.]*", r"^\s*\d+\.\s", r"<[^>]+>")]  # headings' section numbers, list items


def normal(text: str) -> str:
    """One spelling per number: no space between a number and its unit, 'x' written '×'."""
    text = text.replace("\u202f", " ").replace("\u00a0", " ").replace("\u2009", " ")
    text = re.sub(r"(?<=\d)x\b", "×", text)
    return re.sub(r"(?<=\d)\s+(?=\D)", "", text).strip()


def numbers(markdown: str) -> list[str]:
    """The numbers of one markdown cell that must be accounted for, normalised."""
    for pattern in _SKIP:
        markdown = pattern.sub(lambda m: " " * len(m.group(0)), markdown)
    found = []
    for m in NUMBER.finditer(markdown):
        digits, unit = m.group(1), m.group(2)
        if _REFERENCE.search(markdown[max(0, m.start() - 20):m.start()]):
            continue
        if "." in digits or "," in digits or unit or int(digits) >= 10:
            found.append(normal(m.group(0)))
    return found


@dataclass(frozen=True)
class Entry:
    kind: str  # "computed", "cited", "given"
    near: str  # words of the cell the number sits in ("" for anywhere in the notebook)
    text: Callable[[], str] | str  # the number as the prose prints it, or how to compute it
    why: str = ""  # cited: the source named in the cell; given: what the number is
    figure: str = ""  # the SHARED figure it quotes, if any

    def expected(self) -> str:
        return normal(self.text() if callable(self.text) else self.text)


def computed(near: str, value: Callable[[], float], fmt: str | Callable = "{}") -> Entry:
    """A number the lab computes: ``value()`` formatted by ``fmt`` (a format string or a
    function) must appear in the cell containing ``near``."""
    if not near:
        raise ValueError("near: a computed number names words of the cell it sits in")
    render = fmt.format if isinstance(fmt, str) else fmt
    return Entry("computed", near, lambda: render(value()))


def cited(text: str, source: str, near: str = "") -> Entry:
    """A constant quoted from ``source``, which the same cell must name."""
    if not source:
        raise ValueError("source: a cited number names where it comes from")
    return Entry("cited", near, text, source)


def given(text: str, why: str, near: str = "") -> Entry:
    """A number the lesson chooses (an input, an example, a reading time)."""
    if not why:
        raise ValueError("why: say what the given number is")
    return Entry("given", near, text, why)


# ---- figures more than one notebook quotes, defined once -------------------------------
GB = 1e9
SEVEN_B = cost.MODEL_PRESETS["7B"]  # Llama-2-7B's shape: 6.74e9 parameters, not 7e9
A100 = GPU_PRESETS["A100-SXM4-80GB"]  # the interview's "4 A100s (80 GB)", Megatron's runs

SHARED: dict[str, Callable[[], float]] = {
    "7b_params_billion": lambda: SEVEN_B.n_params / 1e9,
    # mixed-precision Adam's 16 bytes per parameter (Rajbhandari et al. 2020, §3.1: 2 + 2 + 12)
    "7b_train_states_gb": lambda: cost.zero_memory(SEVEN_B.n_params, 1, 0)["total"] / GB,
    "7b_fp16_weights_gb": lambda: 2 * SEVEN_B.n_params / GB,
    "bytes_per_param_adam": lambda: cost.zero_memory(1, 1, 0)["total"],
    "a100_memory_gb": lambda: A100.memory_gb,
    "a100_bf16_tflops": lambda: A100.peak_tflops["bf16"],  # dense, no 2:4 sparsity
    # the lab's cluster: a DGX A100's NVLink3 and one HDR InfiniBand card per GPU
    "nvlink3_gb_s": lambda: LINK_PRESETS["NVLink3"].gb_per_s_per_direction,
    "ib_hdr_gb_s": lambda: LINK_PRESETS["IB-HDR"].gb_per_s_per_direction,
}


def shared(name: str, near: str, fmt: str | Callable = "{}") -> Entry:
    """A figure of ``SHARED``, quoted in the cell containing ``near``."""
    if name not in SHARED:
        raise ValueError(f"name: {name!r} is not a shared figure ({', '.join(SHARED)})")
    render = fmt.format if isinstance(fmt, str) else fmt
    return Entry("computed", near, lambda: render(SHARED[name]()), figure=name)


# ---- the check ---------------------------------------------------------------------------
def markdown_cells(notebook: str | Path) -> list[tuple[int, str]]:
    path = Path(notebook)
    if not path.exists():
        path = next(NOTEBOOKS.glob(f"{notebook}_*.ipynb"))
    cells = json.loads(path.read_text())["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def registry(number: str) -> list[Entry]:
    """The ``NUMBERS`` of notebook ``number``'s lesson folder."""
    import importlib
    from lessons import FOLDERS
    if number not in FOLDERS:
        raise ValueError(f"number: {number!r} is not a notebook ({', '.join(FOLDERS)})")
    return list(importlib.import_module(f"lessons.{FOLDERS[number]}.prose").NUMBERS)


def _cites(cell: str, source: str) -> bool:
    return all(word.lower() in cell.lower() for word in source.split(" & "))


def check(cells: list[tuple[int, str]], entries: list[Entry]) -> list[str]:
    """What disagrees between the prose ``cells`` and the ``entries`` that account for its
    numbers; an empty list when every number is accounted for and right."""
    problems, used = [], set()
    resolved = []
    for e in entries:
        try:
            resolved.append((e, e.expected()))
        except Exception as err:  # a computed entry whose code fails is a finding too
            problems.append(f"{e.kind} number near {e.near!r} fails to compute: {err!r}")
    for i, text in cells:
        for token in numbers(text):
            match = [k for k, (e, want) in enumerate(resolved) if want == token
                     and (not e.near or e.near in text)
                     and (e.kind != "cited" or _cites(text, e.why))]
            if match:
                used.update(match)
                continue
            hint = ""
            for e, want in resolved:
                if e.kind == "computed" and e.near in text:
                    hint = f" (the code near {e.near!r} prints {want!r})"
                    break
            problems.append(f"cell {i}: {token!r} is not accounted for{hint}: "
                            f"computed, cited with its source in the cell, or given?")
    for k, (e, want) in enumerate(resolved):
        if k in used:
            continue
        if e.near and not any(e.near in text for _, text in cells):
            problems.append(f"{e.kind} {want!r}: no cell says {e.near!r} any more")
        elif e.kind == "cited" and not any(want in numbers(t) for _, t in cells):
            problems.append(f"cited {want!r} ({e.why}): not in the prose any more")
        elif e.kind == "cited":
            problems.append(f"cited {want!r}: the cell that quotes it does not name {e.why!r}")
        else:
            problems.append(f"{e.kind} {want!r}" + (f" near {e.near!r}" if e.near else "")
                            + ": the prose does not say it (changed, or the code moved?)")
    return problems


def check_notebook(number: str) -> list[str]:
    return check(markdown_cells(number), registry(number))


if __name__ == "__main__":  # python -m lessons.common.prose 02: what a notebook's prose lacks
    import sys
    for n in sys.argv[1:] or ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09"]:
        try:
            found = check_notebook(n)
        except ModuleNotFoundError:
            found = [f"{i}: {t}" for i, c in markdown_cells(n) for t in numbers(c)]
            print(f"{n}: no prose.py yet; its numbers:")
        print(f"{n}: {len(found)} to settle", *found, sep="\n  ")

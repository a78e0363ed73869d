"""Every number in a notebook's prose is accounted for by its lesson's ``prose.py``: computed
(and equal to what the code prints now), cited (its source named in the same cell) or given.
Planted edits of the prose and of the code must both be caught."""

from __future__ import annotations

import json
import re

import pytest
import paths
from lessons import FOLDERS
from lessons.common import prose

NUMBERS = sorted(FOLDERS)


def test_numbers_reads_quantities_not_places():
    cell = ("See §3 and Table 2 of Narayanan et al. (2021, arXiv 2104.04473): a 7B model at "
            "P = 4 holds 46.9% MFU, 108.4 GB, 4 × the bytes, 1,280 slots, 640 tokens, `0.5` "
            "and $2^{-8}$ and a mesh of 2 × 2 × 2; [link](https://x.org/12.5).")
    assert prose.numbers(cell) == ["46.9%", "108.4GB", "4×", "1,280", "640"]


def test_check_accepts_a_registry_that_accounts_for_everything():
    cells = [(0, "About 45 min."), (3, "A DGX gives 46.9% MFU; Liu et al. quote 12.5 GB/s.")]
    entries = [prose.given("45 min", "reading time"),
               prose.computed("DGX gives", lambda: 0.4690, "{:.1%}"),
               prose.cited("12.5 GB/s", "Liu et al.")]
    assert prose.check(cells, entries) == []


def test_check_catches_a_number_nobody_accounts_for():
    found = prose.check([(2, "It takes 81 GB/s.")], [])
    assert len(found) == 1 and "'81GB/s'" in found[0] and "cell 2" in found[0]


def test_check_catches_a_citation_without_its_source():
    found = prose.check([(0, "The card gives 12.5 GB/s.")], [prose.cited("12.5 GB/s", "Liu et al.")])
    assert found and all("12.5GB/s" in f for f in found)


def test_check_catches_a_stale_entry():
    found = prose.check([(0, "Nothing here.")], [prose.given("45 min", "reading time")])
    assert found == ["given '45min': the prose does not say it (changed, or the code moved?)"]


def test_bad_entries_are_refused():
    for make in (lambda: prose.computed("", lambda: 1.0), lambda: prose.cited("1 GB", ""),
                 lambda: prose.given("1 GB", ""), lambda: prose.shared("8B_params", "x")):
        with pytest.raises(ValueError):
            make()
    with pytest.raises(ValueError, match="number"):
        prose.registry("10")


@pytest.mark.parametrize("number", NUMBERS)
def test_prose_numbers_agree_with_their_sources(number):
    problems = prose.check_notebook(number)
    assert not problems, f"notebook {number}'s prose:\n  " + "\n  ".join(problems)


def _planted(number):
    """The notebook's first computed entry, and its cell with the number edited by one in
    its last digit (what a hand edit of the prose, or a forgotten one, leaves)."""
    cells = prose.markdown_cells(number)
    for e in prose.registry(number):
        if e.kind != "computed":
            continue
        want = e.expected()
        for i, text in cells:
            if e.near in text and want in map(prose.normal, prose.numbers(text)):
                return e, i, want
    pytest.skip(f"notebook {number} quotes no computed number")


def _bump(token: str) -> str:
    digits = re.findall(r"\d", token)
    last = token.rindex(digits[-1])
    return token[:last] + str((int(token[last]) + 3) % 10) + token[last + 1:]


@pytest.mark.parametrize("number", NUMBERS)
def test_a_planted_prose_edit_is_caught(number):
    entry, index, want = _planted(number)
    cells = prose.markdown_cells(number)
    edited = []
    for i, text in cells:
        if i == index:  # rewrite the number in the prose as a careless edit would
            raw = next(m.group(0) for m in prose.NUMBER.finditer(text) if prose.normal(m.group(0)) == want)
            text = text.replace(raw, _bump(raw))
        edited.append((i, text))
    problems = prose.check(edited, prose.registry(number))
    assert any(want in p for p in problems), problems


@pytest.mark.parametrize("number", NUMBERS)
def test_a_planted_code_change_is_caught(number):
    entry, index, want = _planted(number)
    moved = prose.Entry("computed", entry.near, lambda: _bump(want))  # the code now prints this
    entries = [moved if e is entry else e for e in prose.registry(number)]
    problems = prose.check(prose.markdown_cells(number), entries)
    assert problems, f"notebook {number}: changing the code behind {want!r} went unnoticed"


# ---- one definition per shared figure ----------------------------------------------------
# literals that restate a shared figure: 7B's parameter count, the A100's peak and memory
# handed to a memory plan, the cluster's links
RESTATED = re.compile(r"(?<![\w.])(?:7e9|7\.0e9|6\.7e9|6\.74e9|6\.738e9|300e9|25e9|12\.5e9|112e9|"
                      r"108e9|312e12|312\.0e12)(?![\w.])"
                      r"|(?:memory_plan|max_micro_batch)\([^)]*,\s*(?:80|80\.0|40|40\.0)\s*[,)]")


def _restated(lines):
    return [n for n, line in enumerate(lines, 1) if RESTATED.search(line.split("#")[0])]


def test_the_restated_rule_bites():
    assert _restated(["peak = 312e12", "cost.memory_plan('7B', 4, 80.0, stage=1)",
                      "n = 7e9  # 7B", "bw = 25e9"]) == [1, 2, 3, 4]
    assert _restated(["peak = A100.peak_tflops['bf16'] * 1e12", "timeout=300.0", "x = 1.25e9"]) == []


def test_lessons_take_shared_figures_from_their_one_definition():
    sources = {str(p.relative_to(paths.LIB)): p.read_text().splitlines()
               for p in sorted((paths.LIB / "lessons").rglob("*.py"))}
    for nb in sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):  # and the notebooks' code
        for i, c in enumerate(json.loads(nb.read_text())["cells"]):
            if c["cell_type"] == "code":
                sources[f"{nb.name} cell {i}"] = "".join(c["source"]).splitlines()
    hits = [f"{where}:{n}: {lines[n - 1].strip()}" for where, lines in sources.items()
            for n in _restated(lines)]
    assert not hits, ("figures defined in parlab.cost.MODEL_PRESETS / parlab.hardware_presets "
                      "(see lessons.common.prose.SHARED) typed again:\n  " + "\n  ".join(hits))


SEVEN_B_STATES = re.compile(r"16 ?(?:bytes|B)(?: per |/)param|training states", re.I)


def _unshared_7b_states(cells, entries):
    """GB figures within 10% of 7B's weights or training states, in cells about them, that no
    shared() entry accounts for (a GPU's 80 GB in the same cell is left alone)."""
    quoting = [e for e in entries if e.figure.startswith("7b_")]
    sizes = [prose.SHARED[k]() for k in ("7b_train_states_gb", "7b_fp16_weights_gb")]
    return [(i, t) for i, text in cells if "7B" in text and SEVEN_B_STATES.search(text)
            for t in prose.numbers(text) if t.endswith("GB")
            and any(abs(float(t[:-2].replace(",", "")) / s - 1) < 0.1 for s in sizes)
            and not any(e.expected() == t and e.near in text for e in quoting)]


@pytest.mark.parametrize("number", NUMBERS)
def test_notebooks_quote_7b_from_one_definition(number):
    """07 had 112 GB (7e9 parameters) where 01 and 09 had 108 GB (6.74e9): a GB figure in a
    cell about 7B's training states comes from SHARED, so every notebook prints the same."""
    bad = _unshared_7b_states(prose.markdown_cells(number), prose.registry(number))
    assert not bad, f"notebook {number}: 7B figures typed, not quoted from prose.SHARED: {bad}"


def test_a_7b_figure_typed_by_hand_is_caught():
    cells = [(5, "A 7B model's training states at 16 bytes per parameter: 112 GB.")]
    assert _unshared_7b_states(cells, [prose.given("112 GB", "7e9 x 16")]) == [(5, "112GB")]
    right = prose.shared("7b_train_states_gb", "training states", "{:.0f} GB")
    assert _unshared_7b_states([(5, cells[0][1].replace("112", "108"))], [right]) == []
    assert prose.SHARED["7b_params_billion"]() == pytest.approx(6.738, abs=1e-3)  # Llama-2-7B
    assert prose.SHARED["bytes_per_param_adam"]() == 16  # ZeRO §3.1: 2 + 2 + (4 + 4 + 4)

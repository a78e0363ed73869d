"""The EN <-> 中文 glossary: docs/glossary.md is generated from lessons.common.glossary and kept in
sync, each term complete in both languages and found either way, and every notebook links it."""

import json
import re

import pytest
import paths

from lessons.common import glossary, i18n

DOC = paths.ROOT / "docs" / "glossary.md"


def test_docs_glossary_is_the_generated_one():
    assert DOC.read_text(encoding="utf-8") == glossary.markdown(), \
        "docs/glossary.md is stale: python -m lessons.common.glossary > docs/glossary.md"


def test_every_term_is_complete_distinct_and_placed():
    terms = glossary.TERMS
    assert len(terms) >= 40
    notebooks = {p.name[:2] for p in paths.NOTEBOOKS.glob("*.ipynb")}
    for name in ("en", "zh"):
        seen = [getattr(t, name).lower() for t in terms]
        assert len(seen) == len(set(seen)), f"a {name} term twice"
    for t in terms:
        assert all((t.en, t.zh, t.mean_en, t.mean_zh)), t
        assert re.search(r"[\u4e00-\u9fff]", t.zh + t.mean_zh), t.en
        assert "|" not in t.en + t.zh + t.mean_en + t.mean_zh, t.en  # it would split the table
        assert set(t.notebooks.split(", ")) <= notebooks, t
        assert i18n.numbers(t.mean_en) == i18n.numbers(t.mean_zh), t.en
    for must in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "bubble",
                 "micro-batch", "ZeRO-3", "FSDP", "ring attention", "Ulysses", "capacity factor",
                 "MFU", "goodput", "checkpoint", "straggler"):
        assert glossary.find(must), must


def test_find_both_ways_and_meaning_follows_the_language():
    assert [t.en for t in glossary.find("气泡")] == ["bubble", "zero bubble (ZB-H2)"]
    assert any(t.zh.startswith("流水线并行") for t in glossary.find("pipeline parallelism"))
    bubble = glossary.find("BUBBLE")[0]
    assert glossary.meaning(bubble, "zh") == bubble.mean_zh
    assert glossary.meaning(bubble, "en") == bubble.mean_en
    with pytest.raises(ValueError, match="text='' must name a term"):
        glossary.find("  ")
    with pytest.raises(ValueError, match="lang='fr' must be one of en, zh"):
        glossary.meaning(bubble, "fr")


@pytest.mark.parametrize("nb", sorted(paths.NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name[:2])
def test_every_notebook_links_the_glossary_up_front(nb):
    first = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]
    assert first["cell_type"] == "markdown" and "(../docs/glossary.md)" in "".join(first["source"])

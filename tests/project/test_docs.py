"""The README and docs/ point at things that exist: every relative link in README.md,
docs/*.md and the notebooks' markdown names a file that is there, and a #section of a
Markdown file names one of its headings (as GitHub makes anchors of them)."""

from __future__ import annotations

import json
import re

import pytest

import paths

ROOT = paths.ROOT
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(md) -> set[str]:
    text = md.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a '# comment' in a code block is no heading
    return {anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def _sources():
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield md, md.read_text(encoding="utf-8")
    for nb in sorted(paths.NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        yield nb, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("source, text", list(_sources()), ids=lambda v: getattr(v, "name", ""))
def test_relative_links_resolve(source, text):
    bad = []
    for target in LINK.findall(text):
        path, _, section = target.partition("#")
        dest = (source.parent / path).resolve() if path else source
        if not dest.exists():
            bad.append(f"{target}: no {path}")
        elif section and dest.suffix == ".md" and section not in anchors(dest):
            bad.append(f"{target}: no heading '{section}' in {dest.name}")
    assert not bad, f"{source.name}: " + "; ".join(bad)


def test_anchor_is_githubs():
    assert anchor("Our strategies next to PyTorch's own") == "our-strategies-next-to-pytorchs-own"
    assert anchor("Measured on a real GPU: the GPU report") == "measured-on-a-real-gpu-the-gpu-report"


def test_readme_links_every_doc():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [d.name for d in (ROOT / "docs").glob("*.md") if f"docs/{d.name}" not in readme]
    assert not missing, f"docs not linked from the README: {missing}"


WORDS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six"))}


def test_the_exercise_counts_in_the_docs_are_the_notebooks():
    """docs/exercises.md says how many checked exercises each notebook has, and the count
    is the checkers its cells call (it once promised four everywhere; 09 has one)."""
    counts = {}
    for nb in sorted(paths.NOTEBOOKS.glob("0*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        counts[nb.name[:2]] = len(set(re.findall(r"\bcheck_\w+", code)))  # called or passed
    text = " ".join((ROOT / "docs" / "exercises.md").read_text(encoding="utf-8").split())
    m = re.search(r"at least (\w+) in each of 00–08 and (\w+) in 09", text)
    assert m, "docs/exercises.md no longer says how many exercises each notebook has"
    least, capstone = WORDS[m.group(1)], WORDS[m.group(2)]
    assert min(v for k, v in counts.items() if k != "09") == least, counts
    assert counts["09"] == capstone, counts

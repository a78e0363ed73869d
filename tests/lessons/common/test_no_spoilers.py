"""No answer is visible before the learner asks, read from the committed notebooks without a
browser: the text of every hidden answer (the interview corners' lessons/*/interview.py,
read from their source, and notebook 09's answers and follow-ups, computed) appears in no
notebook's markdown, no code cell's source and no committed output outside a closed
<details>. An appendix of spoilers ships with no output, and no code cell hands viz.answer
the text of an answer. The browser test reads the same from the page
(tests/browser/your_turn.py)."""

from __future__ import annotations

import ast
import copy
import html
import importlib
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LESSONS = ROOT / "lib" / "lessons"


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _plain(text: str) -> str:
    """Text as read: tags dropped, entities decoded, white space collapsed."""
    return _words(html.unescape(re.sub(r"<[^<>]{0,300}>", " ", text)))


_CJK = re.compile(r"[\u3400-\u9fff]")


def _fragments(text: str, least: int = 24) -> list[str]:
    """Sentences (or clauses) of an answer long enough that finding one elsewhere means
    the answer is shown, not that two texts share a phrase: in English 24 characters and
    four words, in Chinese (clauses cut at 。；！？，：) 10 characters of Chinese."""
    parts = re.split(r"(?<=[.!?;])\s+|(?<=[。；！？，：])", _plain(text))
    return [p.strip() for p in parts
            if (len(p) >= least and len(p.split()) >= 4 and re.search(r"[A-Za-z]{4}", p))
            or len(_CJK.findall(p)) >= 10]


def _keys(tree: ast.AST) -> set[int]:
    """Strings that name data rather than say something: subscripts' keys (also inside an
    f-string's placeholders), comparisons' operands and the arguments of a call other than
    Answer's (``experiments.gpu_scale("13B", ...)``)."""
    inside = [n.slice for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
    inside += [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    inside += [a for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") != "Answer"
               for a in n.args + [k.value for k in n.keywords] if isinstance(a, ast.Constant)]
    return {id(m) for n in inside for m in ast.walk(n)}


def _literal_parts(tree: ast.AST, skip: set[int] = frozenset()) -> list[str]:
    """Every string literal in ``tree``, and the literal parts of every f-string: each a
    piece of text as written, with no placeholder's value in it (and no key)."""
    skip = skip | _keys(tree)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            out += [v.value for v in node.values if isinstance(v, ast.Constant)]
            skip = skip | {id(v) for v in node.values}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def _summaries(tree: ast.AST) -> set[int]:
    """An Answer's summary shows before the click: it is no spoiler."""
    return {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", None) == "Answer" and n.args}


@lru_cache(maxsize=None)
def hidden_texts() -> tuple[str, ...]:
    """The fragments of every hidden answer the lessons hold."""
    texts = []
    for path in sorted(LESSONS.glob("l*/interview.py")):
        tree = ast.parse(path.read_text())
        texts += _literal_parts(tree, _docstrings(tree) | _summaries(tree))
    for path in sorted(LESSONS.glob("l*/text.py")):
        # an answer's lines and verdict ("b.1", "b.verdict"), both languages; its summary
        # ("b") shows before the click; a field cuts a sentence in two (its value is not known)
        for key, texts_ in getattr(importlib.import_module(f"lessons.{path.parent.name}.text"),
                                   "INTERVIEW", {}).items():
            if "." in key:
                texts += [p for v in texts_.values() for p in re.split(r"\{[^{}]*\}", v)]
    from lessons.l09_the_whole_answer import answers, followups
    for lang in answers.LANGS:
        texts.append(answers.thirty_second(lang))
        texts += [s for s, _ in answers.three_minute(lang)]
    for lang in answers.LANGS:  # 09's follow-ups, answered in both languages
        for f in followups.follow_ups(lang):
            texts += [s for s, _ in f["answer"]] + [f["verdict"]]
    found = []
    for t in texts:
        found += [f for f in _fragments(t) if f not in found]
    return tuple(found)


def _without_closed_details(text: str) -> str:
    """An HTML output as shown before a click: each closed <details> down to its summary
    (innermost first, so nested ones go too)."""
    closed = re.compile(r"<details(?![^>]*\bopen\b)[^>]*>(.*?)</details>", re.S)
    inner = re.compile(r"<details(?:(?!<details).)*?</details>", re.S)
    while True:
        m = next((m for m in inner.finditer(text) if closed.fullmatch(m.group(0))), None)
        if m is None:
            return text
        summary = re.search(r"<summary.*?</summary>", m.group(0), re.S)
        text = text[:m.start()] + (summary.group(0) if summary else "") + text[m.end():]


def _output_text(o: dict) -> str:
    if o.get("output_type") == "stream":
        return "".join(o.get("text", ""))
    data = o.get("data", {})
    parts = ["".join(data.get(k, "")) for k in ("text/plain", "text/markdown")]
    parts.append(_without_closed_details("".join(data.get("text/html", ""))))
    return " ".join(parts)


def _code_strings(source: str) -> str:
    """A code cell's string literals joined as Python joins them (a sentence split over two
    literals reads whole), and its raw text too."""
    try:
        parts = _literal_parts(ast.parse(source))
    except SyntaxError:  # a magic or a learner's half-typed line: the raw text still counts
        parts = []
    return source + " " + " ".join(parts)


def visible(nb: dict) -> list[tuple[str, str]]:
    """(where, text as read) for everything a notebook shows before a click."""
    out = []
    for i, c in enumerate(nb["cells"]):
        src = "".join(c["source"])
        if c["cell_type"] == "code":
            out.append((f"cell {i} (code)", _plain(_code_strings(src))))
            out += [(f"cell {i} (committed output)", _plain(_output_text(o)))
                    for o in c.get("outputs", [])]
        else:
            out.append((f"cell {i} ({c['cell_type']})", _plain(src)))
    return out


def spoilers(nb: dict) -> list[str]:
    hidden = hidden_texts()
    return [f"{where}: {f!r}" for where, text in visible(nb) for f in hidden if f in text]


def literal_answers(nb: dict) -> list[int]:
    """Code cells that hand viz.answer text of their own (beyond its summary)."""
    cells = []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(c["source"]))
        except SyntaxError:
            continue
        for call in ast.walk(tree):
            if (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "answer"
                    and any(_fragments(" ".join(_literal_parts(a)))
                            for a in call.args[1:] + [k.value for k in call.keywords])):
                cells.append(i)
                break
    return cells


def appendix_outputs(nb: dict) -> list[int]:
    """Code cells with committed output under a markdown cell that calls them spoilers."""
    bad, under = [], False
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "markdown":
            under = "spoiler" in "".join(c["source"]).lower()
        elif under and c.get("outputs"):
            bad.append(i)
    return bad


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_hidden_texts_are_collected():
    hidden = hidden_texts()
    # 07's (b) verdict-free answer, 08's claim verdict and 09's follow-ups are all in
    assert "Cost: 4 B/param (Kahan's buffer: 2)." in hidden
    assert any(f.startswith("Half right: the bubble falls with M") for f in hidden)
    assert len(hidden) > 100


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_answer_shows_before_a_click(path):
    nb = _load(path)
    assert not spoilers(nb), f"{path.name}: answer text visible before a click:\n  " + \
        "\n  ".join(spoilers(nb)[:20])
    assert not appendix_outputs(nb), \
        f"{path.name}: a spoilers appendix ships with outputs in cells {appendix_outputs(nb)}"
    cells = literal_answers(nb)
    assert not cells, (f"{path.name}: cells {cells} hand viz.answer an answer's text; "
                       f"move it into the lesson's interview.py (lessons.common.interview)")


# -- the checks can fail: spoilers planted in copies of real notebooks ------------------------

def _code_cell(source: str, outputs: list | None = None) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": outputs or [],
            "execution_count": None}


def test_an_answer_literal_in_a_code_cell_is_caught():
    from lessons.l07_mixed_precision import interview
    nb = copy.deepcopy(_load(ROOT / "notebooks" / "07_mixed_precision.ipynb"))
    # §8 (b) as English lines, rendered with the numbers the notebook passes (its §2 runs),
    # written into a cell as the literals of a viz.answer call
    losses = {"fp32": 2.7975, "bf16": 2.8209, "master": 2.7967, "kahan": 2.7970, "stochastic": 2.7951}
    mw = {k: {"losses": [v], "vanished": [0.1253]} for k, v in losses.items()}
    a = interview.corner.answer("b", ln={"unchanged": 1.0}, mw=mw)
    assert a.lines and not any(_CJK.search(line) for line in a.lines)  # the default language
    nb["cells"].insert(45, _code_cell(f"viz.answer({a.summary!r}, {a.lines!r})"))
    found = spoilers(nb)
    assert found and all(f.startswith("cell 45 (code)") for f in found), found
    assert "Cost: 4 B/param (Kahan's buffer: 2)." in " ".join(found)
    assert literal_answers(nb) == [45]


def test_a_committed_appendix_output_is_caught():
    nb = copy.deepcopy(_load(ROOT / "notebooks" / "08_checkpoints_and_failures.ipynb"))
    at = next(i for i, c in enumerate(nb["cells"]) if "interview.show(\"numbers\"" in "".join(c["source"]))
    # the appendix's print-out as it used to ship, pinned
    nb["cells"][at]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [
        "(b) unexpected interruptions per day at 16,384 GPUs: 7.76; job interrupted every 3.09 h\n"]}]
    assert any(f.startswith(f"cell {at} (committed output)") for f in spoilers(nb))
    assert appendix_outputs(nb) == [at]


def test_an_answer_in_markdown_or_an_open_fold_out_is_caught_and_a_closed_one_is_not():
    verdict = "The whole synchronous job runs at the slowest rank's speed."
    closed = f"<details><summary><b>(d) answer</b> (click to open)</summary><p><b>{verdict}</b></p></details>"
    html_out = lambda h: {"output_type": "execute_result", "metadata": {},  # noqa: E731
                          "data": {"text/html": [h], "text/plain": ["<IPython.core.display.HTML object>"]}}
    assert spoilers({"cells": [_code_cell("x", [html_out(closed)])]}) == []
    assert spoilers({"cells": [_code_cell("x", [html_out(closed.replace("<details>", "<details open>"))])]})
    assert spoilers({"cells": [{"cell_type": "markdown", "metadata": {}, "source": f"So: {verdict}"}]})

"""The shape of the two packages: what a learner relies on when reading them.

- ``parlab`` is the library: it never imports the lessons, nor plotly, ipywidgets or
  IPython (every one of its modules imports with those blocked), so ranks, torchrun and a
  user's own training script stay light;
- ``lessons`` holds what exists to teach; within it only figures, widgets, the shared
  ``viz`` and the %%ranks magic import the front-ends, so the experiments and checkers
  that the tests call directly import without them;
- no import cycles between the modules of either, lazy imports inside functions included;
- no source file past 450 lines: a file that grows past it is split by meaning (about 300
  is what a file that reads in one sitting usually has; the cap is not a size to pack to).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import paths

LIB = paths.LIB
MAX_LINES = 450
FRONT_ENDS = ("plotly", "ipywidgets", "IPython")


def modules(package: str | None = None) -> dict[str, Path]:
    """Dotted module name -> file, for every module of parlab and lessons (or of one)."""
    out = {}
    for pkg in [package] if package else ["parlab", "lessons"]:
        for path in sorted((LIB / pkg).rglob("*.py")):
            parts = list(path.relative_to(LIB).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def may_import_front_ends(name: str) -> bool:
    """Only the lessons' drawing and widget modules (and the magic) import front-ends."""
    if not name.startswith("lessons."):
        return False
    leaf = name.rsplit(".", 1)[-1]
    return (leaf in ("figures", "widgets", "interactive")
            or leaf.startswith(("figures_", "widgets_"))
            or name == "lessons.common.viz" or name.startswith("lessons.common.viz."))


def _import_blocked(names: list[str], blocked: tuple) -> subprocess.CompletedProcess:
    code = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        BLOCKED = {blocked!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"{{name}} is blocked: it must not be imported here")
        sys.meta_path.insert(0, Block())
        failed = []
        for name in {names!r}:
            try:
                importlib.import_module(name)
            except Exception as e:  # noqa: BLE001  (report every module, not just the first)
                failed.append(f"{{name}}: {{type(e).__name__}}: {{e}}")
        print("\\n".join(failed))
        sys.exit(1 if failed else 0)
        """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(LIB)), timeout=180)


def test_the_library_imports_without_the_lessons_or_front_ends():
    names = [n for n in modules("parlab") if n != "parlab.__main__"]
    res = _import_blocked(names, ("lessons",) + FRONT_ENDS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(names) > 60  # the check really ran over the package


def test_the_lessons_experiments_and_checkers_import_without_front_ends():
    names = [n for n in modules("lessons")
             if not may_import_front_ends(n) and n != "lessons.__main__"]
    res = _import_blocked(names, FRONT_ENDS)
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(names) > 40


def test_the_import_check_can_fail():
    # a module that does import a blocked package is reported (the checks above mean something)
    res = _import_blocked(["lessons.common.viz"], FRONT_ENDS)
    assert res.returncode == 1 and "lessons.common.viz: ImportError" in res.stdout


def _imports(name: str, path: Path, known: dict) -> set[str]:
    """Modules of ``known`` that ``name`` imports, anywhere in the file (lazy imports too)."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import sub` imports the submodule pkg.sub
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            # importing the package you live in runs nothing new (it is already loading)
            if t and t != name and not name.startswith(t + "."):
                out.add(t)
    return out


def test_the_library_never_names_the_lessons_in_an_import():
    # lazy imports inside functions too, which the import check above never runs
    known = modules()
    wrong = {n: sorted(t for t in _imports(n, p, known) if t.split(".")[0] == "lessons")
             for n, p in modules("parlab").items()}
    assert not {n: t for n, t in wrong.items() if t}


def test_no_import_cycles():
    known = modules()
    graph = {n: _imports(n, p, known) for n, p in known.items()}
    cycles, state = [], {}

    def visit(n, stack):
        state[n] = "open"
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m, stack + [m])
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(modules()))
def test_source_files_stay_readable_in_one_sitting(name):
    lines = modules()[name].read_text().count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines (> {MAX_LINES}): split it by meaning"

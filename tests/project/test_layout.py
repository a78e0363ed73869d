"""The shape of the package: what a learner relies on when reading it.

- the core and every algorithm file import neither plotly, ipywidgets nor IPython
  (only figures / widgets, a figures_<section> split off one, and the %%ranks magic
  do), so ranks and torchrun stay light;
- no import cycles between parlab's modules, lazy imports inside functions included;
- no source file over 400 lines.
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
PKG = LIB / "parlab"
MAX_LINES = 400
FRONT_ENDS = ("plotly", "ipywidgets", "IPython")


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of parlab."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(LIB).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def may_import_front_ends(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return (leaf in ("figures", "widgets", "interactive") or name == "lessons.common.viz"
            or leaf.startswith(("figures_", "widgets_"))  # a strategy's figures, split by section
            or name.startswith("lessons.common.viz."))


def test_core_imports_without_plotly_ipywidgets_ipython():
    names = [n for n in modules() if not may_import_front_ends(n) and n != "parlab.__main__"]
    code = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        BLOCKED = {FRONT_ENDS!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"{{name}} is blocked: the core must not import it")
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
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(LIB)), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(names) > 20  # the check really ran over the package


def _imports(name: str, path: Path, known: dict) -> set[str]:
    """parlab modules that ``name`` imports, anywhere in the file (lazy imports too)."""
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
    assert lines <= MAX_LINES, f"{name} has {lines} lines (> {MAX_LINES}): split it"

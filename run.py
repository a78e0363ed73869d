#!/usr/bin/env python3
"""Set up the lab and run it. Needs only Python >= 3.10.

    python3 run.py lab          create .venv, install, open JupyterLab on your own copies of
                                the notebooks (in work/; notebooks/ stays as shipped)
    python3 run.py lab --reset  the same, after moving your copies to work/backup-<time>/
    python3 run.py lab --lang zh   the same, with the lessons in Chinese (中文): drills,
                                glossary, 09's answers (PARLAB_LANG, which the kernels inherit)
    python3 run.py html [NN..]  execute the notebooks (all, or those named: 03 05) and write
                                them with their figures as HTML pages to build/, which read
                                offline (plotly.js and MathJax in build/assets/) and print
                                with every fold-out open
    python3 run.py progress     my record, one page: exercises passed, the drill by topic,
                                questions due for review, figures measured on this machine,
                                CV lines (--lang zh for 中文, --html PATH for a page)
    python3 run.py test         create .venv, install the lab and the test tools, run the
                                whole test suite (unit tests and every notebook)
    python3 run.py setup        create .venv and install what a learner needs, nothing else
    python3 run.py setup --test      the same, and the test tools
    python3 run.py setup --dry-run   say which torch build it would install and the
                                commands it would run; run none of them

What is installed: the lab's package (lib/parlab, lib/lessons) with its extra "lab", whose
pins are requirements.txt (torch, numpy, jupyterlab, ipywidgets, plotly, MathJax); `test` and
`setup --test` add the extra "test", pinned in requirements-test.txt (pytest, hypothesis,
nbval, ...). pyproject.toml reads both extras from those files: the pins live there only.

Extra arguments go to JupyterLab or pytest: `python3 run.py test -k ring -x`.
As root, `lab` adds JupyterLab's --allow-root.

Environment:
    PARLAB_VENV=path       where the virtualenv lives (default: .venv here)
    PARLAB_TORCH_CPU       unset (default): on Linux, PyTorch's CPU-only build from
                           download.pytorch.org (~200 MB instead of the multi-GB CUDA build
                           PyPI serves) when nvidia-smi finds no NVIDIA GPU, PyPI's CUDA
                           build when it finds one; 1: the CPU build regardless; 0: PyPI's
                           build regardless (CUDA on Linux)
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import venv

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.abspath(os.environ.get("PARLAB_VENV", os.path.join(ROOT, ".venv")))
REQUIREMENTS = os.path.join(ROOT, "requirements.txt")  # the extra "lab": a learner's pins
TEST_REQUIREMENTS = os.path.join(ROOT, "requirements-test.txt")  # the extra "test"
BIN = os.path.join(VENV, "Scripts" if os.name == "nt" else "bin")
PY = os.path.join(BIN, "python.exe" if os.name == "nt" else "python")
STAMP = os.path.join(VENV, ".parlab-installed")
NOTEBOOKS = os.path.join(ROOT, "notebooks")
WORK = os.path.join(ROOT, "work")  # the learner's copies (gitignored)
BUILD = os.path.join(ROOT, "build")  # run.py html's pages (gitignored)


def sh(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


# ------------------------------------------------------------------------------
# setup: which torch build, then pip
# ------------------------------------------------------------------------------

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def find_nvidia_gpu(which=shutil.which, run=subprocess.run,
                    proc: str = "/proc/driver/nvidia/gpus") -> tuple[bool, str]:
    """Whether this machine has an NVIDIA GPU, and how that was found out, without torch
    (it is what is about to be installed). Asks ``nvidia-smi -L``, which lists one line
    per GPU; without nvidia-smi (a container given the GPU but not the tools), the
    driver's own list under /proc. A failing or hanging nvidia-smi counts as no GPU: the
    CUDA build would find none either."""
    exe = which("nvidia-smi")
    if exe is None:
        try:
            if os.listdir(proc):
                return True, f"{proc} lists {len(os.listdir(proc))}"
        except OSError:
            pass
        return False, "nvidia-smi absent"
    try:
        r = run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, "nvidia-smi -L did not answer in 30 s"
    except OSError as e:
        return False, f"nvidia-smi could not run: {e}"
    gpus = [ln for ln in (r.stdout or "").splitlines() if ln.startswith("GPU ")]
    if r.returncode != 0:
        return False, f"nvidia-smi -L exited with {r.returncode}"
    if not gpus:
        return False, "nvidia-smi -L lists none"
    return True, f"nvidia-smi -L lists {len(gpus)}"


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def torch_build(env: str | None, gpu: tuple[bool, str] | None,
                platform: str = sys.platform) -> tuple[bool, str | None]:
    """``(cpu, line)``: whether to install torch from PyTorch's CPU index, and the one
    line that says why (None: nothing worth saying). ``env`` is PARLAB_TORCH_CPU (None:
    unset); ``gpu`` is ``find_nvidia_gpu()``'s answer (only asked when ``env`` is unset).
    Only Linux needs the choice: there PyPI's torch is the multi-GB CUDA build, while on
    macOS and Windows PyPI's torch is already CPU-only."""
    value = (env or "").strip().lower()
    if value in _ON:
        return True, "PARLAB_TORCH_CPU=1: installing the CPU build of torch"
    if value in _OFF:
        return False, ("PARLAB_TORCH_CPU=0: installing PyPI's torch"
                       + (" (the CUDA build)" if platform.startswith("linux") else ""))
    if value:
        sys.exit(f"PARLAB_TORCH_CPU={env!r}: set it to 1 (the CPU build of torch), 0 (PyPI's, "
                 "the CUDA build on Linux), or leave it unset to choose by the GPU")
    if not platform.startswith("linux"):
        return False, None
    found, how = gpu
    if found:
        return False, (f"NVIDIA GPU found ({how}): installing the CUDA build of torch; "
                       "PARLAB_TORCH_CPU=1 forces the CPU build")
    return True, (f"no NVIDIA GPU found ({how}): installing the CPU build of torch; "
                  "PARLAB_TORCH_CPU=0 forces the CUDA build")


def installed_torch(venv_dir: str = VENV) -> str | None:
    """The torch version installed in ``venv_dir`` (``2.13.0+cpu``), read from its
    dist-info folder's name, so without starting the venv's Python; None: none there."""
    hits = [h for where in (("lib", "python*", "site-packages"), ("Lib", "site-packages"))
            for h in glob.glob(os.path.join(venv_dir, *where, "torch-*.dist-info"))]
    return os.path.basename(hits[0])[len("torch-"):-len(".dist-info")] if hits else None


def install_commands(cpu: bool, py: str = PY, requirements: str = REQUIREMENTS,
                     installed: str | None = None, platform: str = sys.platform,
                     test: bool = False) -> list[list[str]]:
    """The pip commands of an install: the lab's package, editable, with its extra "lab"
    (requirements.txt's pins), and with ``test`` its extra "test" too. The CPU build of
    torch first, from PyTorch's index, at requirements.txt's pin: the package's install
    then finds torch satisfied and leaves it. --no-deps: torch's own dependencies come
    with the package's install, from PyPI like the rest, so PyTorch's index is asked for
    torch alone. Where download.pytorch.org cannot
    be reached, pip's own find-links or extra indexes (a wheel folder) still answer,
    after pip's retries.

    ``installed``: the torch already in the venv (``installed_torch()``). On Linux the
    CPU build says so in its version (``+cpu``); when that is not the build chosen, pip
    would still call the pin satisfied (2.13.0+cpu satisfies ==2.13.0), so the chosen
    build is installed over it with --force-reinstall: PARLAB_TORCH_CPU=0 or 1 switch an
    existing venv too."""
    with open(requirements) as f:
        torch_pin = next(line.strip() for line in f if line.startswith("torch=="))
    switch = (installed is not None and platform.startswith("linux")
              and ("+cpu" in installed) != cpu)
    force = ["--force-reinstall"] if switch else []
    cmds = []
    if cpu:
        cmds.append([py, "-m", "pip", "install", "--no-deps", *force, torch_pin,
                     "--index-url", CPU_INDEX])
    elif switch:
        cmds.append([py, "-m", "pip", "install", "--no-deps", *force, torch_pin])
    cmds.append([py, "-m", "pip", "install", "-e", ".[lab,test]" if test else ".[lab]"])
    return cmds


def stamp_lines(cpu: bool, test: bool, requirements: str = REQUIREMENTS,
                test_requirements: str = TEST_REQUIREMENTS) -> list[str]:
    """What an install writes to the stamp file, one line per extra: its name and a hash of
    its pins (and of the torch build for "lab": CPU or not), so that a change of either
    installs again."""
    def digest(path: str, extra: bytes = b"") -> str:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read() + extra).hexdigest()
    lines = ["lab " + digest(requirements, b"1" if cpu else b"")]
    if test:
        lines.append("test " + digest(test_requirements))
    return lines


def installed_already(stamp: str, wanted: list[str]) -> bool:
    """Whether the stamp file names every line of ``wanted``: a learner's install after the
    test install is there already; the test install after a learner's is not."""
    try:
        with open(stamp) as f:
            have = set(f.read().splitlines())
    except OSError:
        return False
    return set(wanted) <= have


def setup(dry_run: bool = False, test: bool = False) -> None:
    if sys.version_info < (3, 10):
        sys.exit(f"Python >= 3.10 is needed, this is {sys.version.split()[0]}")
    env = os.environ.get("PARLAB_TORCH_CPU")
    asks_gpu = not (env or "").strip() and sys.platform.startswith("linux")
    gpu = find_nvidia_gpu() if asks_gpu else None
    cpu, line = torch_build(env, gpu)
    wanted = stamp_lines(cpu, test)
    installed = installed_already(STAMP, wanted)
    if dry_run:
        print((line or "installing PyPI's torch") + " (dry run: nothing is run)")
        if installed:
            print(f"{VENV} holds this install already: setup would do nothing")
            return
        if not os.path.exists(PY):
            print(f"would create virtualenv {VENV}")
        for cmd in install_commands(cpu, installed=installed_torch(), test=test):
            print("would run:", " ".join(cmd))
        return
    if not os.path.exists(PY):
        print(f"creating virtualenv {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if installed:
        return  # already installed from these pins, with this torch build
    if line:
        print(line, flush=True)
    for cmd in install_commands(cpu, installed=installed_torch(), test=test):
        sh(*cmd)
    with open(STAMP, "w") as f:
        f.write("\n".join(wanted) + "\n")


# ------------------------------------------------------------------------------
# lab: JupyterLab on the learner's copies
# ------------------------------------------------------------------------------

def prepare_work(reset: bool = False, notebooks: str = NOTEBOOKS, work: str = WORK) -> dict:
    """Copy every notebook not yet in ``work`` there; keep the copies already there.

    With ``reset``, first move the learner's copies (and JupyterLab's checkpoints of
    them) to ``work/backup-<time>/``: nothing is deleted. Returns ``{"copied": names,
    "kept": names, "backup": folder or None}``.
    """
    os.makedirs(work, exist_ok=True)
    backup = None
    if reset:
        mine = sorted(f for f in os.listdir(work)
                      if f.endswith(".ipynb") or f == ".ipynb_checkpoints")
        if mine:
            backup = os.path.join(work, "backup-" + time.strftime("%Y%m%d-%H%M%S"))
            n = 1
            while os.path.exists(backup):
                n += 1
                backup = os.path.join(work, f"backup-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            os.makedirs(backup)
            for f in mine:
                shutil.move(os.path.join(work, f), os.path.join(backup, f))
    copied, kept = [], []
    for src in sorted(glob.glob(os.path.join(notebooks, "*.ipynb"))):
        name = os.path.basename(src)
        if os.path.exists(os.path.join(work, name)):
            kept.append(name)
        else:
            shutil.copy2(src, os.path.join(work, name))
            copied.append(name)
    return {"copied": copied, "kept": kept, "backup": backup}


def first_notebook(notebooks: str = NOTEBOOKS) -> str:
    """The notebook to start with: the first by name (00_collectives.ipynb)."""
    return os.path.basename(sorted(glob.glob(os.path.join(notebooks, "*.ipynb")))[0])


def lab_args(extra: list[str], euid: int | None = None, work: str = WORK,
             start: str | None = None) -> list[str]:
    """The JupyterLab command line: serve ``work`` and open ``start`` (default: the first
    notebook) in it rather than a bare Launcher; as root add --allow-root (JupyterLab
    refuses to start as root without it, and containers often run as root).

    ``start`` goes in LabApp.default_url: the URL the browser opens and the one the server
    prints (the one to click in a container with no browser). ServerApp.default_url would
    not do: LabApp sets its own over it. A default_url in ``extra`` is the learner's, kept."""
    if euid is None:
        euid = os.geteuid() if hasattr(os, "geteuid") else -1
    args = [PY, "-m", "jupyter", "lab", "--notebook-dir", work]
    if not any("default_url" in a for a in extra):
        start = first_notebook() if start is None else start
        args.append("--LabApp.default_url=/lab/tree/" + urllib.parse.quote(start))
    args += extra
    if euid == 0 and "--allow-root" not in extra:
        args.append("--allow-root")
    return args


# the lessons' languages (lessons.common.i18n.LANGS; run.py imports nothing of the lab's)
LANGS = ("en", "zh")


def take_lang(extra: list[str], environ=os.environ) -> list[str]:
    """``--lang CODE`` (or ``--lang=CODE``) taken out of ``extra`` and put in
    ``environ["PARLAB_LANG"]``, which JupyterLab's kernels inherit and the lessons read at
    import; the rest of ``extra`` is returned for JupyterLab. An unknown code exits naming
    the choices."""
    rest, i = [], 0
    while i < len(extra):
        a = extra[i]
        if a == "--lang" or a.startswith("--lang="):
            code = a.partition("=")[2] if "=" in a else (extra[i + 1] if i + 1 < len(extra) else "")
            i += 1 if "=" in a else 2
            if code not in LANGS:
                sys.exit(f"--lang {code}: lang={code!r} must be one of {', '.join(LANGS)}")
            environ["PARLAB_LANG"] = code
            continue
        rest.append(a)
        i += 1
    return rest


def lab(extra: list[str]) -> None:
    reset = "--reset" in extra
    extra = [a for a in extra if a != "--reset"]
    done = prepare_work(reset=reset)
    rel = os.path.relpath(WORK, os.getcwd())
    if done["backup"]:
        print(f"Your previous copies were moved to {done['backup']}", flush=True)
    if done["copied"]:
        print(f"Copied to {rel}/: {', '.join(done['copied'])}", flush=True)
    print(f"Opening JupyterLab in {WORK}: your own copies of the notebooks (notebooks/ stays as "
          f"shipped; a notebook added there later is copied on the next start).\n"
          f"To start over from fresh copies: python3 run.py lab --reset (your copies are moved "
          f"to {rel}/backup-<time>/, not deleted).", flush=True)
    # read-only copies of the sections notebook 09 links to (lessons.common.readcopy), written
    # beside the copies while JupyterLab starts; only those whose notebook changed
    subprocess.Popen([PY, "-m", "lessons", "read-copies", "--out", os.path.join(WORK, "read")],
                     stdout=subprocess.DEVNULL, start_new_session=True)
    args = lab_args(extra)
    os.execv(args[0], args)


# ------------------------------------------------------------------------------
# html: static pages with the figures, for reading ahead or printing
# ------------------------------------------------------------------------------

STATIC_NOTE = ("*Static copy, executed by `python3 run.py html` on {date} in {secs:.0f} s on "
               "this machine. The figures are live (hover, zoom), but sliders and buttons "
               "(widgets) do nothing here: open the notebook in JupyterLab (`python3 run.py "
               "lab`) to use them. Printing opens every fold-out.*")
WIDGET_NOTE = ('<p style="color:#777"><i>[an interactive widget: it works in JupyterLab '
               '(<code>python3 run.py lab</code>), not in this static page]</i></p>')
# Shared by every page, beside them in build/: plotly.js (~4.8 MB), MathJax and the lab's
# stylesheet are copied there once instead of inlined in each page or fetched from a CDN, so
# pages stay small and read offline. Paths are relative, so build/ can be moved or zipped whole.
ASSETS = "assets"
# MathJax 2.7 as jupyter-server-mathjax ships it: one combined config (TeX in, HTML-CSS out
# with the STIX-Web fonts, which Chromium loads from file:// pages)
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
# A closed <details> prints closed and CSS cannot open it: open every fold-out before
# printing, and close again those it opened after. Newer browsers also open them from CSS
# (::details-content), for printing paths that fire no beforeprint.
PRINT_SUPPORT = """<style type="text/css">
@media print {
  details::details-content { content-visibility: visible; display: contents; }
  .modebar-container { display: none !important; }
  .jp-Cell, .plotly-graph-div { break-inside: avoid; }
}
</style>
<script>
(function () {
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      d.open = true;
      opened.push(d);
    });
  });
  window.addEventListener("afterprint", function () {
    opened.splice(0).forEach(function (d) { d.open = false; });
  });
})();
</script>"""
# The package ships MathJax's STIX-Web fonts only: left to itself MathJax asks for its TeX
# fonts, finds no file, and draws with the system's fonts (upright letters). A MathJax
# object set before MathJax.js loads is its configuration.
MATHJAX_FONTS = ('<script>window.MathJax = {"HTML-CSS": {availableFonts: [], '
                 'webFont: "STIX-Web", imageFont: null}};</script>\n')
# nbconvert's lab page, less require.js (a CDN fetch, needed only by widget state, which
# static_outputs drops), plus MathJax's fonts and the print support
PAGE_TEMPLATE = ("{%- extends 'index.html.j2' -%}\n"
                 "{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}\n"
                 "{%- block html_head_js_mathjax -%}{% raw %}" + MATHJAX_FONTS + "{% endraw %}"
                 "{{ super() }}{%- endblock html_head_js_mathjax -%}\n"
                 "{%- block html_head_css -%}{% raw %}" + PRINT_SUPPORT
                 + "{% endraw %}{%- endblock html_head_css -%}\n")


def select_notebooks(names: list[str], notebooks: str = NOTEBOOKS) -> list[str]:
    """``[]`` -> every notebook; ``["03", "05_context"]`` -> those whose name starts so."""
    every = sorted(glob.glob(os.path.join(notebooks, "*.ipynb")))
    if not names:
        return every
    chosen = []
    for n in names:
        hits = [p for p in every if os.path.basename(p).startswith(n.removesuffix(".ipynb"))]
        if not hits:
            sys.exit(f"no notebook named {n!r}; there are: "
                     + ", ".join(os.path.basename(p)[:-6] for p in every))
        chosen += [p for p in hits if p not in chosen]
    return chosen


def _write_whole(path: str, text: str) -> None:
    """Write ``text`` beside ``path`` and rename it into place: an interrupted write is
    never taken for a finished asset."""
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".part", path)


def write_assets(build: str) -> dict[str, str]:
    """Copy plotly.js and MathJax into ``build/assets/`` unless a copy of the same version
    is there, and return their URLs relative to the pages: ``{"plotly": ..., "mathjax":
    ...}``. Each is written beside its final name and renamed, so an interrupted copy is
    never taken for a finished one."""
    import importlib.util
    import plotly.offline

    assets = os.path.join(build, ASSETS)
    os.makedirs(assets, exist_ok=True)
    plotly_name = f"plotly-{plotly.offline.get_plotlyjs_version()}.min.js"
    plotly_path = os.path.join(assets, plotly_name)
    if not os.path.exists(plotly_path):
        _write_whole(plotly_path, plotly.offline.get_plotlyjs())

    spec = importlib.util.find_spec("jupyter_server_mathjax")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        sys.exit("MathJax is missing: jupyter-server-mathjax is in requirements.txt; "
                 "python3 run.py setup installs it")
    static = os.path.join(list(spec.submodule_search_locations)[0], "static")
    with open(os.path.join(static, "MathJax.js"), encoding="utf-8") as f:
        version = re.search(r'MathJax\.version="([^"]+)"', f.read()).group(1)
    mathjax = f"mathjax-{version}"
    if not os.path.isdir(os.path.join(assets, mathjax)):
        part = os.path.join(assets, mathjax + ".part")
        shutil.rmtree(part, ignore_errors=True)
        shutil.copytree(static, part)
        os.replace(part, os.path.join(assets, mathjax))
    return {"plotly": f"{ASSETS}/{plotly_name}",
            "mathjax": f"{ASSETS}/{mathjax}/MathJax.js?config={MATHJAX_CONFIG}"}


def share_styles(page: str, build: str, min_chars: int = 10_000) -> str:
    """Move each large ``<style>`` block of ``page`` (JupyterLab's theme, ~260 KB, the same
    in every page) into ``build/assets/style-<hash>.css`` and link that instead, in place, so
    the cascade keeps its order."""
    def link(m):
        css = m.group(1)
        if len(css) < min_chars:
            return m.group(0)
        name = f"style-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
        path = os.path.join(build, ASSETS, name)
        if not os.path.exists(path):
            _write_whole(path, css)
        return f'<link rel="stylesheet" href="{ASSETS}/{name}"/>'
    return re.sub(r'<style type="text/css">(.*?)</style>', link, page, flags=re.S)


def static_outputs(nb, plotly_url: str) -> None:
    """Make an executed notebook readable as a page: plotly figures as HTML that load
    plotly.js from ``plotly_url`` (once per page), widgets as a note saying where they
    work."""
    import plotly.io as pio
    first = True
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.plotly.v1+json" in data:
                fig = data["application/vnd.plotly.v1+json"]
                html = pio.to_html(fig, config=fig.get("config"), include_plotlyjs=False,
                                   full_html=False, validate=False)
                if first:
                    html = f'<script src="{plotly_url}"></script>' + html
                    first = False
                out["data"] = {"text/html": html}
            elif "application/vnd.jupyter.widget-view+json" in data:
                out["data"] = {"text/html": WIDGET_NOTE}
    nb.metadata.pop("widgets", None)  # no widget state: the page loads no widget code


def page_exporter(mathjax_url: str):
    """nbconvert's exporter for the pages: the lab template with PAGE_TEMPLATE's changes,
    MathJax from ``mathjax_url``."""
    import jinja2
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", template_file="parlab_page.html.j2",
                        extra_loaders=[jinja2.DictLoader({"parlab_page.html.j2":
                                                          PAGE_TEMPLATE})],
                        mathjax_url=mathjax_url)


def build_html(paths: list[str], build: str = BUILD, timeout: int = 600) -> list[str]:
    """Execute each notebook (in a scratch folder beside ``build``'s pages, never in
    notebooks/) and write ``build/<name>.html``, which loads plotly.js, MathJax and the lab's
    stylesheet from ``build/assets/`` (write_assets, share_styles). Returns one line per
    notebook that failed, naming the cell; the others are written regardless."""
    import nbformat
    from nbclient import NotebookClient

    os.makedirs(build, exist_ok=True)
    urls = write_assets(build)
    exporter = page_exporter(urls["mathjax"])
    # plotly figures leave only their JSON in the notebook; static_outputs renders them
    os.environ["PLOTLY_RENDERER"] = "plotly_mimetype"
    # the kernels' environment: 09's section links go to the sections of these pages
    kernel_env = dict(os.environ, PARLAB_LINKS="pages")
    failures = []
    for path in paths:
        name = os.path.basename(path)[:-len(".ipynb")]
        nb = nbformat.read(path, as_version=4)
        scratch = os.path.join(build, f".run-{name}")
        os.makedirs(scratch, exist_ok=True)
        current = {"index": None}
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": scratch}},
                                on_cell_execute=lambda cell, cell_index:
                                current.update(index=cell_index))
        print(f"executing {name} ...", flush=True)
        t0, failed = time.perf_counter(), None
        try:
            client.execute(env=kernel_env)
        except Exception as e:  # a cell raised or timed out, or the kernel died
            i = current["index"]
            first = (nb.cells[i].source.strip().splitlines() or [""])[0] if i is not None else ""
            failed = (f"{name}: cell {i + 1 if i is not None else '?'} ({first[:60]!r}) "
                      f"failed: {_last_line(str(e))}")
            failures.append(failed)
            print("  " + failed, flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        secs = time.perf_counter() - t0
        note = STATIC_NOTE.format(date=time.strftime("%Y-%m-%d %H:%M"), secs=secs)
        if failed:
            note += f"\n\n**This run failed:** {failed}. The cells after it did not run."
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note))
        static_outputs(nb, urls["plotly"])
        body, _ = exporter.from_notebook_node(nb)
        body = share_styles(body, build)
        out = os.path.join(build, name + ".html")
        with open(out, "w", encoding="utf-8") as f:
            f.write(body)
        print(f"  wrote {os.path.relpath(out)} ({secs:.0f} s)", flush=True)
    return failures


def _last_line(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the kernel's colours
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):  # nbclient's message ends with the exception line
        if not ln.startswith((" ", "-")):
            return ln.strip()[:200]
    return (lines[-1].strip() if lines else "")[:200]


def html(names: list[str]) -> None:
    failures = build_html(select_notebooks(names))
    # one page per topic to revise from, every number from parlab.cost (lessons.common.cheatsheet)
    from lessons.common.cheatsheet import write_all
    write_all(BUILD, write_assets(BUILD)["mathjax"])
    print(f"wrote the cheat sheets: {os.path.relpath(os.path.join(BUILD, 'cheatsheets.html'))}")
    if failures:
        sys.exit("failed:\n  " + "\n  ".join(failures))
    print(f"done: open the pages in {os.path.relpath(BUILD)}/ in a browser")


# ------------------------------------------------------------------------------

def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("lab", "test", "setup", "html", "_html", "progress"):
        sys.exit(__doc__)
    command, extra = sys.argv[1], sys.argv[2:]
    if command == "_html":  # html, inside the virtualenv (nbconvert, plotly)
        return html(extra)
    if command == "setup":
        unknown = [a for a in extra if a not in ("--dry-run", "--test")]
        if unknown:
            sys.exit(f"setup takes only --test and --dry-run, not {' '.join(unknown)}")
        return setup(dry_run="--dry-run" in extra, test="--test" in extra)
    if command == "lab":  # a bad --lang is refused before anything is installed
        extra = take_lang(extra)
    setup(test=command == "test")
    if command == "lab":
        lab(extra)
    elif command == "html":
        os.execv(PY, [PY, os.path.abspath(__file__), "_html", *extra])
    elif command == "progress":  # the lessons read the record (lessons.common.record)
        os.execv(PY, [PY, "-m", "lessons", "progress", *extra])
    elif command == "test":
        # pytest settings (test paths, nbval, timeouts) live in pyproject.toml
        os.chdir(ROOT)
        os.execv(PY, [PY, "-m", "pytest", *extra])


if __name__ == "__main__":
    main()

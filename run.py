#!/usr/bin/env python3
"""Set up the lab and run it. Needs only Python >= 3.10.

    python3 run.py lab     create .venv, install, open the notebooks in JupyterLab
    python3 run.py test    create .venv, install, run the whole test suite
                           (unit tests and every notebook under nbval)

Extra arguments go to JupyterLab or pytest: `python3 run.py test -k ring -x`.

Environment:
    PARLAB_VENV=path       where the virtualenv lives (default: .venv here)
    PARLAB_TORCH_CPU=1     install PyTorch's CPU-only build from download.pytorch.org
                           (~200 MB instead of the multi-GB CUDA build PyPI serves on Linux)
"""

import hashlib
import os
import subprocess
import sys
import venv

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.abspath(os.environ.get("PARLAB_VENV", os.path.join(ROOT, ".venv")))
REQUIREMENTS = os.path.join(ROOT, "requirements.txt")
BIN = os.path.join(VENV, "Scripts" if os.name == "nt" else "bin")
PY = os.path.join(BIN, "python.exe" if os.name == "nt" else "python")
STAMP = os.path.join(VENV, ".parlab-installed")


def sh(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def setup() -> None:
    if sys.version_info < (3, 10):
        sys.exit(f"Python >= 3.10 is needed, this is {sys.version.split()[0]}")
    if not os.path.exists(PY):
        print(f"creating virtualenv {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    with open(REQUIREMENTS, "rb") as f:
        wanted = hashlib.sha256(f.read() + os.environ.get("PARLAB_TORCH_CPU", "").encode())
    wanted = wanted.hexdigest()
    if os.path.exists(STAMP) and open(STAMP).read() == wanted:
        return  # already installed from this requirements.txt
    if os.environ.get("PARLAB_TORCH_CPU"):
        torch_pin = next(line.strip() for line in open(REQUIREMENTS)
                         if line.startswith("torch=="))
        sh(PY, "-m", "pip", "install", torch_pin, "--index-url",
           "https://download.pytorch.org/whl/cpu")
    sh(PY, "-m", "pip", "install", "-r", REQUIREMENTS)
    with open(STAMP, "w") as f:
        f.write(wanted)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("lab", "test", "setup"):
        sys.exit(__doc__)
    command, extra = sys.argv[1], sys.argv[2:]
    setup()
    if command == "lab":
        os.execv(PY, [PY, "-m", "jupyter", "lab", "--notebook-dir", os.path.join(ROOT, "notebooks"),
                      *extra])
    elif command == "test":
        # pytest settings (test paths, nbval, timeouts) live in pyproject.toml
        os.chdir(ROOT)
        os.execv(PY, [PY, "-m", "pytest", *extra])


if __name__ == "__main__":
    main()

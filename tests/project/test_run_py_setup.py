"""run.py setup and lab without installing or starting anything: which torch build (GPU
found or not x PARLAB_TORCH_CPU unset/0/1), the pip commands that follow from it (a
learner's install, or the test install), the stamp that makes setup idempotent, the pins
kept in one place, the GPU probe with a fake nvidia-smi, and the JupyterLab command that
opens notebook 00."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest
import paths

ROOT = str(paths.ROOT)


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("parlab_run_py_setup",
                                                  os.path.join(ROOT, "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GPU = (True, "nvidia-smi -L lists 1")
NO_GPU = (False, "nvidia-smi absent")


@pytest.mark.parametrize("env, gpu, cpu", [
    (None, NO_GPU, True), (None, GPU, False),
    ("", NO_GPU, True), ("", GPU, False),  # PARLAB_TORCH_CPU= (empty) is unset
    ("0", NO_GPU, False), ("0", GPU, False),
    ("1", NO_GPU, True), ("1", GPU, True),
])
def test_torch_build_by_gpu_and_env(run, env, gpu, cpu):
    got, line = run.torch_build(env, gpu, platform="linux")
    assert got is cpu
    if env in (None, ""):
        if cpu:
            assert line == ("no NVIDIA GPU found (nvidia-smi absent): installing the CPU build "
                            "of torch; PARLAB_TORCH_CPU=0 forces the CUDA build")
        else:
            assert line.startswith("NVIDIA GPU found (nvidia-smi -L lists 1)")
            assert "PARLAB_TORCH_CPU=1" in line
    else:
        assert line.startswith(f"PARLAB_TORCH_CPU={env}:")
    assert "\n" not in line


def test_torch_build_env_spellings_and_a_bad_value(run):
    assert run.torch_build("true", None, platform="linux")[0] is True
    assert run.torch_build(" OFF ", None, platform="linux")[0] is False
    with pytest.raises(SystemExit, match="PARLAB_TORCH_CPU='maybe'"):
        run.torch_build("maybe", NO_GPU, platform="linux")


def test_torch_build_off_linux_keeps_pypi_torch(run):
    # PyPI's torch for macOS and Windows is CPU-only already: nothing to choose
    assert run.torch_build(None, None, platform="darwin") == (False, None)
    assert run.torch_build("1", None, platform="win32")[0] is True  # still forced on request


def _requirements(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# pins\ntorch==2.13.0\nnumpy==2.4.6\n")
    return str(req)


def test_install_commands(run, tmp_path):
    req = _requirements(tmp_path)
    lab = ["py", "-m", "pip", "install", "-e", ".[lab]"]
    cpu = run.install_commands(True, py="py", requirements=req, platform="linux")
    assert cpu == [["py", "-m", "pip", "install", "--no-deps", "torch==2.13.0",
                    "--index-url", "https://download.pytorch.org/whl/cpu"], lab]
    assert run.install_commands(False, py="py", requirements=req) == [lab]
    # the test install: the same, with the extra "test"
    assert run.install_commands(True, py="py", requirements=req, platform="linux",
                                test=True) == [cpu[0], lab[:-1] + [".[lab,test]"]]
    # the build already there is the one chosen: pip is left to call it satisfied
    same = run.install_commands(True, py="py", requirements=req, installed="2.13.0+cpu",
                                platform="linux")
    assert same == cpu
    assert run.install_commands(False, py="py", requirements=req, installed="2.13.0",
                                platform="linux") == [lab]
    # the other build is there: the chosen one goes over it (pip would call it satisfied)
    to_cpu = run.install_commands(True, py="py", requirements=req, installed="2.13.0",
                                  platform="linux")
    assert "--force-reinstall" in to_cpu[0] and "--index-url" in to_cpu[0]
    to_cuda = run.install_commands(False, py="py", requirements=req, installed="2.13.0+cpu",
                                   platform="linux")
    assert to_cuda[0] == ["py", "-m", "pip", "install", "--no-deps", "--force-reinstall",
                          "torch==2.13.0"]
    assert to_cuda[1] == lab
    # macOS's CPU wheels carry no +cpu: no switch read into it
    assert run.install_commands(True, py="py", requirements=req, installed="2.13.0",
                                platform="darwin") == cpu


def test_stamp_makes_setup_idempotent_per_extra(run, tmp_path):
    req, test_req = _requirements(tmp_path), tmp_path / "requirements-test.txt"
    test_req.write_text("pytest==9.2.0\n")
    lines = lambda cpu, test: run.stamp_lines(cpu, test, req, str(test_req))  # noqa: E731
    stamp = tmp_path / "stamp"
    assert not run.installed_already(str(stamp), lines(True, False))  # nothing installed yet
    stamp.write_text("\n".join(lines(True, True)) + "\n")  # the test install
    assert run.installed_already(str(stamp), lines(True, True))
    assert run.installed_already(str(stamp), lines(True, False))  # lab after test: nothing
    assert not run.installed_already(str(stamp), lines(False, False))  # the other torch build
    stamp.write_text("\n".join(lines(True, False)) + "\n")  # a learner's install
    assert run.installed_already(str(stamp), lines(True, False))
    assert not run.installed_already(str(stamp), lines(True, True))  # test adds its tools
    test_req.write_text("pytest==9.3.0\n")  # a changed pin installs again
    stamp.write_text("\n".join(lines(True, True)) + "\n")
    test_req.write_text("pytest==9.2.0\n")
    assert not run.installed_already(str(stamp), lines(True, True))
    stamp.write_text(lines(True, False)[0].split()[1])  # an older stamp: a bare hash
    assert not run.installed_already(str(stamp), lines(True, False))


PIN = re.compile(r"^([A-Za-z0-9_.-]+)==[0-9][0-9A-Za-z.+]*$")


def _pins(path):
    lines = [ln.strip() for ln in open(path) if ln.strip() and not ln.startswith("#")]
    assert all(PIN.match(ln) for ln in lines), (path, lines)  # plain pins: pyproject reads them
    return {PIN.match(ln).group(1).lower(): ln for ln in lines}


def test_pins_are_kept_once(run):
    """The learner's pins in requirements.txt, the test tools' in requirements-test.txt;
    pyproject.toml's extras are those files, Binder reads requirements.txt, and no package
    is pinned twice."""
    lab, test = _pins(run.REQUIREMENTS), _pins(run.TEST_REQUIREMENTS)
    assert set(lab) == {"torch", "numpy", "jupyterlab", "ipywidgets", "plotly", "jupyter-server-mathjax"}
    assert {"pytest", "pytest-timeout", "hypothesis", "nbval"} <= set(test)
    assert test["transformers"] == "transformers==4.57.6"
    assert not set(lab) & set(test)
    toml = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert 'lab = { file = ["requirements.txt"] }' in toml
    assert 'test = { file = ["requirements-test.txt"] }' in toml
    assert "==" not in toml  # no pin copied into pyproject.toml
    binder = open(os.path.join(ROOT, "binder", "requirements.txt")).read()
    assert "-r ../requirements.txt" in binder and "==" not in binder
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert "playwright" not in lab and "playwright" not in test and "PLAYWRIGHT_VERSION=" in ci


def test_installed_torch_reads_the_dist_info(run, tmp_path):
    assert run.installed_torch(str(tmp_path)) is None
    (tmp_path / "lib" / "python3.11" / "site-packages" / "torch-2.13.0+cpu.dist-info").mkdir(
        parents=True)
    assert run.installed_torch(str(tmp_path)) == "2.13.0+cpu"


class _Done:
    def __init__(self, returncode, stdout):
        self.returncode, self.stdout = returncode, stdout


def test_find_nvidia_gpu_with_a_fake_nvidia_smi(run, tmp_path):
    empty = tmp_path / "gpus"
    absent = run.find_nvidia_gpu(which=lambda _: None, proc=str(tmp_path / "none"))
    assert absent == (False, "nvidia-smi absent")
    empty.mkdir()
    assert run.find_nvidia_gpu(which=lambda _: None, proc=str(empty))[0] is False
    (empty / "0000:01:00.0").mkdir()  # the driver's list, in a container without the tools
    assert run.find_nvidia_gpu(which=lambda _: None, proc=str(empty))[0] is True

    def smi(code, out):
        return lambda cmd, **kw: _Done(code, out)
    which = lambda _: "/usr/bin/nvidia-smi"  # noqa: E731
    two = "GPU 0: NVIDIA H100 (UUID: GPU-1)\nGPU 1: NVIDIA H100 (UUID: GPU-2)\n"
    assert run.find_nvidia_gpu(which, smi(0, two)) == (True, "nvidia-smi -L lists 2")
    assert run.find_nvidia_gpu(which, smi(9, "")) == (False, "nvidia-smi -L exited with 9")
    assert run.find_nvidia_gpu(which, smi(0, "No devices found.\n"))[0] is False

    def hangs(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])
    assert run.find_nvidia_gpu(which, hangs)[0] is False


@pytest.mark.parametrize("test", [False, True])
def test_setup_dry_run_says_the_build_and_runs_nothing(tmp_path, test):
    env = {**os.environ, "PARLAB_VENV": str(tmp_path / "venv"), "PARLAB_TORCH_CPU": "1"}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "run.py"), "setup", "--dry-run"]
                       + (["--test"] if test else []),
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("PARLAB_TORCH_CPU=1: installing the CPU build of torch "
                        "(dry run: nothing is run)")
    assert any("--index-url https://download.pytorch.org/whl/cpu" in ln for ln in lines)
    assert lines[-1].endswith("pip install -e " + (".[lab,test]" if test else ".[lab]"))
    assert not (tmp_path / "venv").exists()


def test_setup_refuses_an_unknown_flag(tmp_path):
    env = {**os.environ, "PARLAB_VENV": str(tmp_path / "venv")}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "run.py"), "setup", "--tests"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "setup takes only --test and --dry-run" in r.stderr
    assert not (tmp_path / "venv").exists()


def test_lab_opens_the_first_notebook(run, tmp_path):
    assert run.first_notebook() == "00_collectives.ipynb"
    args = run.lab_args([], euid=1000, work=str(tmp_path))
    assert args[1:5] == ["-m", "jupyter", "lab", "--notebook-dir"]
    # LabApp's, not ServerApp's: JupyterLab sets ServerApp.default_url to its own /lab
    assert "--LabApp.default_url=/lab/tree/00_collectives.ipynb" in args
    # a default_url of the learner's wins
    mine = run.lab_args(["--LabApp.default_url=/lab/tree/03.ipynb"], euid=1000)
    assert [a for a in mine if "default_url" in a] == ["--LabApp.default_url=/lab/tree/03.ipynb"]
    spaced = run.lab_args([], euid=1000, start="my notes.ipynb")
    assert "--LabApp.default_url=/lab/tree/my%20notes.ipynb" in spaced

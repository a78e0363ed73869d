"""run.py setup and lab without installing or starting anything: which torch build (GPU
found or not x PARLAB_TORCH_CPU unset/0/1), the pip commands that follow from it, the
GPU probe with a fake nvidia-smi, and the JupyterLab command that opens notebook 00."""

import importlib.util
import os
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
    cpu = run.install_commands(True, py="py", requirements=req, platform="linux")
    assert cpu == [["py", "-m", "pip", "install", "--no-deps", "torch==2.13.0",
                    "--index-url", "https://download.pytorch.org/whl/cpu"],
                   ["py", "-m", "pip", "install", "-r", req]]
    assert run.install_commands(False, py="py", requirements=req) == [
        ["py", "-m", "pip", "install", "-r", req]]
    # the build already there is the one chosen: pip is left to call it satisfied
    same = run.install_commands(True, py="py", requirements=req, installed="2.13.0+cpu",
                                platform="linux")
    assert same == cpu
    assert run.install_commands(False, py="py", requirements=req, installed="2.13.0",
                                platform="linux") == [["py", "-m", "pip", "install", "-r", req]]
    # the other build is there: the chosen one goes over it (pip would call it satisfied)
    to_cpu = run.install_commands(True, py="py", requirements=req, installed="2.13.0",
                                  platform="linux")
    assert "--force-reinstall" in to_cpu[0] and "--index-url" in to_cpu[0]
    to_cuda = run.install_commands(False, py="py", requirements=req, installed="2.13.0+cpu",
                                   platform="linux")
    assert to_cuda[0] == ["py", "-m", "pip", "install", "--no-deps", "--force-reinstall",
                          "torch==2.13.0"]
    assert to_cuda[1] == ["py", "-m", "pip", "install", "-r", req]
    # macOS's CPU wheels carry no +cpu: no switch read into it
    assert run.install_commands(True, py="py", requirements=req, installed="2.13.0",
                                platform="darwin") == cpu


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


def test_setup_dry_run_says_the_build_and_runs_nothing(tmp_path):
    env = {**os.environ, "PARLAB_VENV": str(tmp_path / "venv"), "PARLAB_TORCH_CPU": "1"}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "run.py"), "setup", "--dry-run"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("PARLAB_TORCH_CPU=1: installing the CPU build of torch "
                        "(dry run: nothing is run)")
    assert any("--index-url https://download.pytorch.org/whl/cpu" in ln for ln in lines)
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

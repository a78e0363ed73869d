"""The Slurm example in docs/usage.md names every CLI command, and tools/slurm/parlab.sbatch
builds the torchrun line it promises: run here against stand-in `srun` and `scontrol` that
print what they were asked, with the environment Slurm would set."""
import os
import re
import subprocess
from pathlib import Path

import paths
from clis import COMMANDS

ROOT = paths.ROOT
SCRIPT = ROOT / "tools" / "slurm" / "parlab.sbatch"


def _slurm_section() -> str:
    text = (ROOT / "docs" / "usage.md").read_text()
    start = text.index("**On a Slurm cluster**")
    return text[start:text.index("In your own code:", start)]


def test_every_command_has_a_slurm_line():
    section = _slurm_section()
    named = set(re.findall(r"parlab\.sbatch ([\w-]+)", section))
    named |= set(re.findall(r"python -m (?:parlab|lessons) ([\w-]+)", section))
    if "MODULE=lessons.l08_checkpoints_and_failures.elastic_worker" in section:
        named.add("failover")  # its Slurm form runs the worker that `failover` starts
    assert set(COMMANDS) <= named, f"no Slurm line for {sorted(set(COMMANDS) - named)}"


def _run(tmp_path, args, **env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # stand-ins: scontrol names two nodes, srun prints the command it would start on each
    (bin_dir / "scontrol").write_text("#!/bin/sh\nprintf 'node7\\nnode8\\n'\n")
    (bin_dir / "srun").write_text('#!/bin/sh\necho "srun $*"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    base = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "node[7-8]",
            "SLURM_NNODES": "2", "SLURM_JOB_ID": "4242", "SLURM_GPUS_ON_NODE": "8"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={**base, **env}, timeout=30)


def test_the_script_starts_one_torchrun_per_node(tmp_path):
    r = _run(tmp_path, ["dp", "--variant", "bucketed"])
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith("srun torchrun "), line
    for part in ("--nnodes 2", "--nproc-per-node 8", "--rdzv-id 4242", "--rdzv-backend c10d",
                 "--rdzv-endpoint node7:29500", "--max-restarts 0", "-m parlab dp --variant bucketed"):
        assert part in line, (part, line)


def test_restarts_and_gpus_per_node_can_be_set(tmp_path):
    r = _run(tmp_path, ["zero"], MAX_RESTARTS="3", GPUS_PER_NODE="4")
    assert r.returncode == 0, r.stderr
    assert "--max-restarts 3" in r.stdout and "--nproc-per-node 4" in r.stdout, r.stdout


def test_another_entry_point_runs_with_module(tmp_path):
    r = _run(tmp_path, ["--steps", "8", "--dir", "/shared/x"], MODULE="lessons.l08_checkpoints_and_failures.elastic_worker",
             MAX_RESTARTS="1")
    assert r.returncode == 0, r.stderr
    assert "--max-restarts 1" in r.stdout
    assert r.stdout.rstrip().endswith("-m lessons.l08_checkpoints_and_failures.elastic_worker --steps 8 --dir /shared/x"), r.stdout


def test_without_a_command_it_says_how_to_use_it(tmp_path):
    r = _run(tmp_path, [])
    assert r.returncode == 2 and "usage: sbatch" in r.stderr

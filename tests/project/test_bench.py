"""The benchmarks' smoke modes run end to end and print their tables (no timing is asserted:
performance figures come from full runs, see docs/measurements.md)."""
import subprocess
import sys
from pathlib import Path

import pytest
import paths

ROOT = paths.ROOT


@pytest.mark.timeout(240)
@pytest.mark.parametrize("bench, expect", [
    ("data_parallel", "ours / DDP"),
    ("zero", "FSDP2"),
    ("pipeline", "ours / torch"),
    ("tensor_parallel", "DTensor + SP"),
    ("expert_parallel", "torch's autograd all-to-all"),
])
def test_quick_mode_prints_its_table(bench, expect):
    out = subprocess.run([sys.executable, "-m", f"bench.{bench}", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=200)
    assert out.returncode == 0, out.stderr[-3000:]
    table = [line for line in out.stdout.splitlines() if line.startswith("|")]
    assert len(table) >= 3 and expect in out.stdout, out.stdout[-3000:]

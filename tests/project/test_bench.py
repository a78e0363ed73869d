"""The benchmarks' smoke modes run end to end and print their tables (no timing is asserted:
performance figures come from full runs, see docs/measurements.md). Each runs in this
process, on the rank pools the other tests use, as ``python -m bench.<name> --quick``
would."""
import importlib
import sys

import pytest

import paths

ROOT = str(paths.ROOT)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("bench, expect", [
    ("data_parallel", "ours / peer"),
    ("zero", "FSDP2"),
    ("pipeline", "ours / torch"),
    ("tensor_parallel", "DTensor + SP"),
    ("expert_parallel", "torch's autograd all-to-all"),
])
def test_quick_mode_prints_its_table(bench, expect, capsys, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)  # the ranks import bench.<name> by name too
    importlib.import_module(f"bench.{bench}").main(["--quick"])
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) >= 3 and expect in out, out[-3000:]

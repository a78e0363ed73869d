"""`python -m parlab gpu-report`: what can be checked without a GPU.

On a CPU the command must skip every GPU section with its reason and exit 0; the
measuring code itself runs here at toy sizes on the CPU (the same functions the GPU
sections call with device="cuda"), and the report's text and JSON are checked on a
synthetic report in which every section succeeded.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch

from parlab import cost
from parlab.gpu_report import (activations, attention_dropout, common, matmul, multi_gpu,
                               report, training)
from parlab.gpu_report import GPU_SECTIONS, SECTIONS, main
from parlab.model import Block, GPTConfig
import paths

ROOT = paths.ROOT
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
TINY = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)


# --- the command on a machine without a GPU -------------------------------------------

@no_gpu
def test_cpu_report_skips_every_gpu_section_and_exits_0(tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    for name in GPU_SECTIONS:
        assert f"{name}: skipped: no CUDA GPU" in out
    assert "0 sections measured, 6 skipped, 0 failed" in out
    rep = json.loads(path.read_text())
    assert tuple(rep) == SECTIONS
    assert rep["device"]["status"] == "ok" and rep["device"]["quick"] is True
    assert rep["device"]["gpu_count"] == 0 and rep["device"]["gpus"] == []
    for name in GPU_SECTIONS:
        assert rep[name]["status"] == "skipped" and "is_available() is False" in rep[name]["reason"]
    assert not list(tmp_path.glob("*.tmp"))  # written atomically


@no_gpu
def test_only_marks_the_others_not_selected(capsys):
    assert main(["--only", "matmul", "model", "--no-compile"]) == 0
    out = capsys.readouterr().out
    assert "matmul: skipped: no CUDA GPU" in out
    assert "activation_memory: skipped: not selected (--only matmul model)" in out


@pytest.mark.parametrize("argv, message", [
    (["--json", "/no/such/dir/r.json"], "error: --json /no/such/dir/r.json: directory /no/such/dir does not exist"),
    (["--json", "."], "error: --json . is a directory"),
])
def test_bad_json_path_is_refused_before_measuring(argv, message, capsys):
    with pytest.raises(SystemExit, match=f"^{message}"):
        main(argv)
    assert "device:" not in capsys.readouterr().out  # nothing ran


@pytest.mark.parametrize("argv", [["--only", "bogus"], ["--quick", "yes"], ["--frobnicate"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and "usage:" in capsys.readouterr().err


# --- skip reasons -------------------------------------------------------------------

def test_plan_skips_by_gpu_count_and_nccl():
    one = {"no_gpu_reason": None, "gpu_count": 1, "nccl_available": True}
    reasons = report.plan(one)
    assert [n for n, why in reasons.items() if why is None] == ["matmul", "attention_dropout", "model",
                                                                "activation_memory"]
    assert reasons["nccl"] == reasons["strategies"] == "needs >= 2 GPUs with NCCL, one per rank (found 1)"
    assert report.plan({**one, "gpu_count": 8}) == dict.fromkeys(GPU_SECTIONS)
    assert "is_nccl_available() is False" in report.plan({**one, "gpu_count": 2, "nccl_available": False})["nccl"]
    none = report.plan({"no_gpu_reason": "no CUDA GPU (x)", "gpu_count": 0, "nccl_available": False})
    assert set(none.values()) == {"no CUDA GPU (x)"}
    only = report.plan({**one, "gpu_count": 2}, only=("model",))
    assert only["model"] is None and only["matmul"] == "not selected (--only model)"


def test_cuda_reason(monkeypatch):
    if not torch.cuda.is_available():
        assert "torch.cuda.is_available() is False" in common.cuda_reason()

    def broken():
        raise RuntimeError("driver too old\nmore detail")
    monkeypatch.setattr(torch.cuda, "is_available", broken)
    assert common.cuda_reason() == "no usable CUDA GPU (RuntimeError: driver too old)"


def test_fp8_reason():
    assert matmul.fp8_reason((9, 0), True) is None and matmul.fp8_reason((8, 9), True) is None
    assert matmul.fp8_reason((8, 0), True) == ("fp8 tensor cores need compute capability >= 8.9 "
                                              "(Ada, Hopper); this GPU is 8.0")
    assert "has no torch._scaled_mm" in matmul.fp8_reason((9, 0), False)
    assert matmul.fp8_reason(None, True) == "no CUDA GPU"


def test_a_failing_section_is_recorded_not_raised():
    rec = common.run_section(lambda: 1 / 0)
    assert rec["status"] == "error" and rec["reason"] == "ZeroDivisionError: division by zero"
    assert "ZeroDivisionError" in rec["traceback"] and rec["seconds"] >= 0
    assert common.run_section(lambda: {"x": 1})["status"] == "ok"


# --- FLOP and MFU arithmetic ----------------------------------------------------------

def test_flops():
    assert matmul.gemm_flops(2, 3, 4) == 48
    assert common.tflops(2e12, 2.0) == 1.0
    model = training.build(TINY, "cpu")
    n = model.num_params(include_embeddings=False)
    assert n == model.num_params() - 64 * 32 - 16 * 32  # wte and wpe out, lm_head in
    assert training.flops_per_token(model) == 6 * n + 12 * 2 * 16 * 32  # PaLM: 6N + 12 L T d


def test_full_model_is_about_one_billion_parameters():
    c = training.FULL["config"]
    with torch.device("meta"):
        per_layer = sum(p.numel() for p in Block(c).parameters())
    total = c.n_layers * per_layer + 2 * c.vocab_size * c.d_model + c.seq_len * c.d_model + 2 * c.d_model
    assert 0.95e9 < total < 1.1e9
    assert c.d_model // c.n_heads == 128  # FlashAttention's favourite head size


def test_model_speed_and_mfu_on_cpu():
    setup = {"config": TINY, "batch_size": 4, "warmup": 1, "steps": 2}
    rec = training.measure(setup, "cpu", peak_flops=1e12, compile_=False)
    eager = rec["runs"]["eager"]
    assert eager["status"] == "ok" and eager["tokens_per_step"] == 4 * 16
    assert math.isclose(eager["mfu"], eager["tokens_per_s"] * rec["flops_per_token"] / 1e12)
    assert rec["best"] == "eager" and rec["runs"]["compiled"]["reason"] == "--no-compile"
    assert any("eager    batch 4:" in line and "MFU" in line for line in training.lines(rec))


@pytest.mark.parametrize("when", ["first call", "torch.compile"])
def test_compile_failure_is_recorded_and_eager_still_reported(monkeypatch, when):
    def broken(model):
        def call(*a, **k):
            raise RuntimeError("inductor: no C compiler")
        return call() if when == "torch.compile" else call
    monkeypatch.setattr(torch, "compile", broken)
    setup = {"config": TINY, "batch_size": 2, "warmup": 1, "steps": 1}
    rec = training.measure(setup, "cpu", peak_flops=None)
    assert rec["runs"]["compiled"] == {"status": "error", "reason": "RuntimeError: inductor: no C compiler"}
    assert rec["best"] == "eager" and rec["mfu"] is None
    assert "  compiled error: RuntimeError: inductor: no C compiler" in training.lines(rec)


def test_memory_plan_for_the_measured_model():
    model = training.build(TINY, "cpu")
    plan = training.memory_plan(model, batch_size=4, gpu_bytes=80e9)
    n = model.num_params()
    assert (plan["params"], plan["grads"], plan["optimizer"]) == (4 * n, 4 * n, 8 * n)
    assert plan["activations"] == cost.activation_memory(16, 4, 32, 4, 2, "selective")


def test_attention_dropout_section_on_cpu(monkeypatch):
    # the same code the GPU runs, at toy sizes: rows per sequence, their ratio, the median
    monkeypatch.setattr(attention_dropout, "QUICK_SEQS", (8, 16))
    monkeypatch.setattr(attention_dropout, "TOKENS", 32)
    monkeypatch.setattr(attention_dropout, "HEADS", 2)
    monkeypatch.setattr(attention_dropout, "HEAD_DIM", 8)
    rec = common.run_section(attention_dropout.section, True, "cpu")
    assert rec["status"] == "ok" and [r["seq"] for r in rec["rows"]] == [8, 16]
    assert [r["batch"] for r in rec["rows"]] == [4, 2] and rec["dropout_p"] == 0.1
    for r in rec["rows"]:
        assert r["ratio"] == pytest.approx(r["seconds_dropout"] / r["seconds_plain"])
        assert r["tflops_plain"] > 0 and r["dtype"] == "float32"
    assert rec["dropout_factor"] == pytest.approx(sum(r["ratio"] for r in rec["rows"]) / 2)
    assert len(attention_dropout.lines(rec)) == 4


def test_attention_flops_and_shapes():
    # 2 b s^2 h d forward (half the square of QK^T and PV), 2.5 times that backward
    assert attention_dropout.causal_flops(2, 1024, 16, 128) == 3.5 * 2 * 2 * 1024 ** 2 * 16 * 128
    with pytest.raises(ValueError, match="seq=3000 must divide tokens=16384"):
        attention_dropout.measure(3000, "cpu")


def test_matmul_section_on_cpu(monkeypatch):
    monkeypatch.setattr(matmul, "QUICK_SIZES", (32, 64))
    rec = common.run_section(matmul.section, True, "cpu")
    assert rec["status"] == "ok" and [r["n"] for r in rec["rows"]] == [32, 64]
    assert rec["skipped_dtypes"] == {"fp8": "no CUDA GPU"} and rec["preset"] is None
    assert rec["best_tflops"]["bf16"] == max(r["tflops"] for r in rec["rows"]) > 0


# --- activation memory -----------------------------------------------------------------

@pytest.mark.parametrize("kind, recompute", [("math", "none"), ("checkpointed", "selective")])
def test_saved_bytes_of_one_layer_match_the_lab_count(kind, recompute):
    """fp32 on the CPU, the lab's exact count (Korthikanti's plus LayerNorm statistics and
    the causal mask) is what autograd keeps, byte for byte."""
    s, b, h, a = 16, 8, 32, 4
    got = activations.measure_layer(s, b, h, a, kind, "cpu", torch.float32)
    want = activations.predicted(s, b, h, a, recompute, bytes_per_value=4)
    assert got["allocator_bytes"] is None  # the CUDA allocator is not here
    assert got["saved_bytes"] == want["lab_bytes"]
    assert want["korthikanti_dropout"] is False  # the lab's layer has no dropout


def test_sdpa_keeps_no_scores():
    s, b, h, a = 64, 2, 32, 4
    math_ = activations.measure_layer(s, b, h, a, "math", "cpu", torch.float32)["saved_bytes"]
    sdpa = activations.measure_layer(s, b, h, a, "sdpa", "cpu", torch.float32)["saved_bytes"]
    selective = activations.predicted(s, b, h, a, "selective", 4)["lab_bytes"]
    assert selective <= sdpa < math_


def test_activation_section_on_cpu(monkeypatch):
    monkeypatch.setattr(activations, "QUICK_SHAPES", ((16, 2),))
    monkeypatch.setattr(activations, "D_MODEL", 32)
    rec = activations.section(True, "cpu")
    assert [r["attention"] for r in rec["rows"]] == ["math", "checkpointed", "sdpa"]
    assert all(r["allocator_vs_korthikanti"] is None and r["saved_bytes"] > 0 for r in rec["rows"])
    assert len(activations.lines(rec)) == 4


# --- multi-GPU sections: their arithmetic, and their code on gloo ------------------------

def test_bus_bandwidth_rows():
    rows = multi_gpu.add_bandwidths([{"op": "all_reduce", "bytes": 1e9, "seconds": 0.01},
                                     {"op": "all_gather", "bytes": 1e9, "seconds": 0.01}], 4, 450.0)
    assert rows[0]["algbw_gb_s"] == pytest.approx(100.0)
    assert rows[0]["busbw_gb_s"] == pytest.approx(150.0)  # x 2(n-1)/n
    assert rows[1]["busbw_gb_s"] == pytest.approx(75.0)  # x (n-1)/n
    assert rows[0]["fraction_of_link"] == pytest.approx(150 / 450)


def test_collective_sizes_split_evenly():
    for n in (2, 3, 8):
        for name in multi_gpu.OPS:
            _, S = multi_gpu._op(name, 1 << 20, n, "cpu")
            assert S % (4 * n) == 0 and abs(S - (1 << 20)) < 4 * n


@pytest.mark.parametrize("n", [2, 4, 8])
def test_every_strategy_case_fits_power_of_two_gpu_counts(n):
    cases = multi_gpu.cases(n)
    assert [c["strategy"] for c in cases] == ["data_parallel", "zero", "pipeline_parallel", "tensor_parallel"]
    for c in cases:
        c["run"].check(n)
        c["peer_run"].check(n)


def test_strategy_and_collective_workers_run_on_gloo(monkeypatch):
    monkeypatch.setattr(multi_gpu, "CONFIG", TINY)
    monkeypatch.setattr(multi_gpu, "STEPS", 2)
    keep = multi_gpu.cases
    monkeypatch.setattr(multi_gpu, "cases", lambda n: [c for c in keep(n) if c["strategy"] == "data_parallel"])
    rec = multi_gpu.strategies_section(2)
    row = rec["rows"][0]
    assert row["status"] == "ok" and row["equal"] and row["tokens_per_s"] > 0, row
    assert row["ratio_vs_peer"] == pytest.approx(row["tokens_per_s"] / row["peer_tokens_per_s"])
    from parlab import launch
    rows = launch(multi_gpu.nccl_worker, 2, [1 << 12], ("all_reduce",), 1, 2)[0]
    assert rows[0]["op"] == "all_reduce" and rows[0]["bytes"] == 1 << 12 and rows[0]["seconds"] > 0


# --- text and JSON of a report in which every section succeeded --------------------------

def _full_report(monkeypatch) -> dict:
    monkeypatch.setattr(matmul, "QUICK_SIZES", (32,))
    monkeypatch.setattr(activations, "QUICK_SHAPES", ((16, 2),))
    monkeypatch.setattr(activations, "D_MODEL", 32)
    dev = report.device_section(True)
    dev.update(gpu_count=2, gpus=[{"index": i, "name": "NVIDIA H200", "memory_gb": 139.8, "capability": "9.0",
                                   "preset": "H200-SXM-141GB"} for i in range(2)],
               preset={"name": "H200-SXM-141GB", "peak_tflops": {"bf16": 989.5, "fp8": 1979.0}})
    model = training.measure({"config": TINY, "batch_size": 2, "warmup": 1, "steps": 1}, "cpu", 989.5e12, False)
    nccl = {"world_size": 2, "link": "NVLink4", "link_gb_s_per_direction": 450.0,
            "rows": multi_gpu.add_bandwidths([{"op": "all_reduce", "bytes": 1 << 30, "seconds": 0.005}], 2, 450.0),
            "best_busbw_gb_s": {"all_reduce": 214.7}}
    strategies = {"world_size": 2, "backend": "nccl", "steps": 6, "batch_size": 16, "rows": [
        {"strategy": "zero", "ours": "ZeRO-3", "peer": "FSDP2", "status": "ok", "equal": True,
         "max_differences": {"loss": 0.0, "grad": 1e-8, "param": 1e-7}, "tokens_per_s": 1e5,
         "peer_tokens_per_s": 9e4, "ratio_vs_peer": 1.11},
        {"strategy": "tensor_parallel", "ours": "Megatron TP", "peer": "torch DTensor TP",
         "status": "skipped", "reason": "tp=3 must divide n_heads=8"}]}
    monkeypatch.setattr(attention_dropout, "QUICK_SEQS", (16,))
    monkeypatch.setattr(attention_dropout, "TOKENS", 32)
    monkeypatch.setattr(attention_dropout, "HEADS", 2)
    monkeypatch.setattr(attention_dropout, "HEAD_DIM", 8)
    return {"device": dev, "matmul": common.run_section(matmul.section, True, "cpu"),
            "attention_dropout": common.run_section(attention_dropout.section, True, "cpu"),
            "model": {"status": "ok", "seconds": 1.0, **model},
            "activation_memory": {"status": "ok", "seconds": 1.0, **activations.section(True, "cpu")},
            "nccl": {"status": "ok", "seconds": 1.0, **nccl},
            "strategies": {"status": "ok", "seconds": 1.0, **strategies}}


def test_text_and_headline_of_a_full_report(monkeypatch):
    rep = _full_report(monkeypatch)
    text = "\n".join(line for name in SECTIONS for line in report.section_lines(name, rep[name]))
    assert "GPUs: 2 x NVIDIA H200 (140 GiB, sm 9.0); preset H200-SXM-141GB" in text
    assert "all_reduce" in text and "busbw   214.7 GB/s (48%)" in text
    assert "zero               ZeRO-3: equal to one device True" in text
    assert "tensor_parallel    skipped: tp=3 must divide n_heads=8" in text
    head = report.headline(rep)
    assert head[0] == f"device: NVIDIA H200, torch {torch.__version__}"
    assert head[1].startswith("matmul: bf16 ") and "of 989.5)" in head[1]
    assert head[2].startswith("attention_dropout: SDPA with dropout 0.1 takes x")
    assert head[3].startswith("model: GPT 0.00B, eager: ") and "MFU" in head[3]
    assert head[4] == "activation_memory: allocator / Korthikanti not measured (no CUDA allocator)"
    assert head[5] == "nccl: best busbw all_reduce 215 GB/s"
    assert head[6] == "strategies: zero equal, tensor_parallel skipped"


def test_headline_of_allocator_ratios(monkeypatch):
    rep = _full_report(monkeypatch)
    for r, x in zip(rep["activation_memory"]["rows"], (1.031, 1.0, 1.0)):
        r["allocator_vs_korthikanti"], r["allocator_bytes"] = x, 1000
    assert report.headline(rep)[4] == ("activation_memory: allocator / Korthikanti math x1.03, "
                                       "checkpointed x1.00, sdpa x1.00")
    assert "x1.031" in "\n".join(activations.lines(rep["activation_memory"]))


def test_json_is_strict(tmp_path, monkeypatch):
    rep = _full_report(monkeypatch)
    rep["model"]["mfu"] = float("nan")
    report.write_json(rep, tmp_path / "r.json")
    back = json.loads((tmp_path / "r.json").read_text())  # no NaN token: strict JSON parsers read it
    assert tuple(back) == SECTIONS and back["model"]["mfu"] is None
    assert common.json_safe({"a": (1, float("inf")), 2: torch.float32}) == {"a": [1, None], "2": "torch.float32"}


def test_device_script_is_valid_bash():
    script = ROOT / "tools" / "gpu_check.sh"
    text = script.read_text()
    assert "gpu-report --quick --json" in text and "gpu-report --json" in text
    subprocess.run(["bash", "-n", str(script)], check=True)


# --- the command in parlab's CLI -------------------------------------------------------

@no_gpu
def test_cli_gpu_report_on_cpu(tmp_path, capsys):
    from parlab.__main__ import main as cli
    cli(["gpu-report", "--quick", "--json", str(tmp_path / "q.json")])  # exit status 0: no SystemExit
    out = capsys.readouterr().out
    assert out.startswith("device: torch") and "strategies: skipped: no CUDA GPU" in out
    assert tuple(json.loads((tmp_path / "q.json").read_text())) == SECTIONS


def test_cli_refuses_a_bad_json_path():
    from parlab.__main__ import main as cli
    with pytest.raises(SystemExit, match="^error: --json /no/such/dir/r.json: directory /no/such/dir"):
        cli(["gpu-report", "--json", "/no/such/dir/r.json"])


def test_a_failed_section_makes_the_exit_status_1(monkeypatch, capsys):
    from parlab.__main__ import main as cli
    monkeypatch.setattr(report, "plan", lambda dev, only=None: {**dict.fromkeys(GPU_SECTIONS, "not here"),
                                                               "matmul": None})
    monkeypatch.setattr(report, "_runners", lambda *a: {"matmul": lambda: 1 / 0})
    with pytest.raises(SystemExit) as e:
        cli(["gpu-report"])
    assert e.value.code == 1
    out = capsys.readouterr().out
    assert "matmul: error: ZeroDivisionError: division by zero" in out
    assert "0 sections measured, 5 skipped, 1 failed: matmul" in out


def test_a_compiled_module_that_refuses_bool_is_still_measured(monkeypatch):
    """torch 2.11's OptimizedModule raises TypeError on len() (so on bool()); the H200 run
    of this report once lost its compiled figures to `forward or model`."""
    class Refuses:
        def __init__(self, model):
            self.model = model

        def __len__(self):
            raise TypeError("GPT does not support len()")

        def __call__(self, *a, **k):
            return self.model(*a, **k)

    monkeypatch.setattr(torch, "compile", Refuses)
    setup = {"config": TINY, "batch_size": 2, "warmup": 1, "steps": 1}
    rec = training.measure(setup, "cpu", peak_flops=None)
    assert rec["runs"]["compiled"]["status"] == "ok", rec["runs"]["compiled"]

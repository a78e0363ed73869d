"""Notebook 07's parts against references: formats against torch.finfo and the FP8 paper's
table, MixedAdamW against torch's AdamW, DynamicLossScaler against torch's GradScaler (a
planted overflow included), bf16 sums on real ranks against the replay and Higham's bound,
fp8 fake quantization, bytes per parameter against cost. Each has a planted bug it catches."""

from __future__ import annotations

import math

import pytest
import torch

from parlab import cost
from parlab.model import GPT, reference_optimizer
from parlab.precision import (DynamicLossScaler, MixedAdamW, apply_fp8, fake_quantize, format_table,
                              round_stochastic, ulp)
from parlab.precision import communication as cm
from lessons.l07_mixed_precision import experiments as E
from parlab.precision.fp8 import AmaxHistory, Fp8Linear, fp8_weight_copies

pytestmark = pytest.mark.timeout(120)


# --- formats -------------------------------------------------------------------------------

def test_formats_match_torch_and_the_fp8_paper():
    rows = {r["format"]: r for r in format_table()}
    assert rows["e4m3"]["max"] == 448 and rows["e5m2"]["max"] == 57344  # Micikevicius 2022, Table 1
    assert rows["e4m3"]["smallest_subnormal"] == 2 ** -9 and rows["e5m2"]["smallest_subnormal"] == 2 ** -16
    assert rows["fp16"]["smallest_subnormal"] == 2 ** -24 and rows["fp16"]["smallest_normal"] == 2 ** -14
    assert rows["bf16"]["smallest_normal"] == rows["fp32"]["smallest_normal"]  # same exponent
    for name, r in rows.items():
        assert r["u"] == cost.unit_roundoff(name)
        sub = torch.tensor(r["smallest_subnormal"], dtype=torch.float64)
        assert sub.to(dict(fp32=torch.float32, bf16=torch.bfloat16, fp16=torch.float16,
                           e4m3=torch.float8_e4m3fn, e5m2=torch.float8_e5m2)[name]).float().item() > 0


@pytest.mark.parametrize("fmt, dt", [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)])
def test_cost_ulp_is_the_gap_to_the_next_value(fmt, dt):
    for v in (1.0, 0.02, 3.0, 1e-3, 700.0):
        x = torch.tensor(v).to(dt)
        nxt = torch.nextafter(x, torch.tensor(math.inf, dtype=dt))
        assert cost.ulp(x.item(), fmt) == (nxt - x).item() == ulp(x, fmt).item()
        # just under half an ulp vanishes; just over it does not
        t = cost.vanishing_update(x.item(), fmt, "up")
        assert (x.double() + 0.99 * t).to(dt) == x and (x.double() + 1.01 * t).to(dt) != x


@pytest.mark.parametrize("fmt, dt", [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)])
def test_cost_vanishing_update_is_what_torch_rounds_back_on_both_sides(fmt, dt):
    # powers of two (1.0: the gap below is half the gap above), their negatives, values
    # inside a binade, the smallest normal and zero; torch rounds to nearest, ties to even
    tiny = torch.finfo(dt).smallest_normal
    for v in (1.0, 0.5, 4.0, 1.5, 0.03, 1 + 2 ** -7, tiny, 2 * tiny, 0.0, -1.0, -0.25, -3.0):
        x = torch.tensor(v, dtype=torch.float64).to(dt)
        for direction, sign in (("up", 1), ("down", -1)):
            t = cost.vanishing_update(x.item(), fmt, direction)
            nxt = torch.nextafter(x, torch.tensor(sign * math.inf, dtype=dt))
            assert t == abs(nxt.double() - x.double()).item() / 2, (v, direction)
            assert (x.double() + sign * 0.99 * t).to(dt) == x, (v, direction)
            assert (x.double() + sign * 1.01 * t).to(dt) == nxt, (v, direction)
    one = torch.tensor(1.0, dtype=torch.float64)
    assert (one - 0.002).to(torch.bfloat16).item() == 0.99609375  # > 2^-9 down: moved
    assert (one - 2 ** -9).to(torch.bfloat16).item() == 1.0  # the tie: 1.0 is even
    assert (one + 2 ** -8).to(torch.bfloat16).item() == 1.0  # the tie above, too
    assert cost.vanishing_update(1.0, "bf16", "down") == 2 ** -9 != cost.ulp(1.0, "bf16") / 2


def test_stochastic_rounding_is_unbiased_and_picks_a_neighbour():
    x = torch.full((200_000,), 1.0 + 2 ** -9)  # a quarter of the way from 1 to the next bf16
    r = round_stochastic(x, torch.Generator().manual_seed(0)).float()
    assert set(r.unique().tolist()) == {1.0, 1.0 + 2 ** -7}
    assert abs(r.mean().item() - x[0].item()) < 2e-5
    assert x.to(torch.bfloat16).float().mean().item() == 1.0  # nearest rounding: biased


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="fmt"):
        cost.unit_roundoff("fp12")
    with pytest.raises(ValueError, match="recipe"):
        cost.training_bytes_per_param("int4")
    with pytest.raises(ValueError, match="n_terms"):
        cost.summation_error_bound(0, "bf16")
    with pytest.raises(ValueError, match="mode"):
        MixedAdamW([torch.zeros(2, requires_grad=True)], mode="fp64")
    with pytest.raises(ValueError, match="growth_interval"):
        DynamicLossScaler(growth_interval=0)
    with pytest.raises(ValueError, match="block"):
        fake_quantize(torch.randn(3, 5), block=(2, 2))


# --- master weights ------------------------------------------------------------------------

def _train(opt_factory, steps=4, convert=None):
    model = GPT(E.SMALL)
    opt = opt_factory(model.parameters())
    for s in range(steps):
        x, y = E._batch(s)
        opt.zero_grad()
        model(x, y)[1].backward()
        opt.step()
    return model


def test_mixed_adamw_fp32_equals_torch_adamw():
    ours = _train(lambda p: MixedAdamW(p, lr=1e-3, mode="fp32"))
    ref = _train(lambda p: reference_optimizer(p, 1e-3))
    diff = max((a - b).abs().max().item() for a, b in zip(ours.parameters(), ref.parameters()))
    assert diff < 1e-5  # float rounding of the same formula in another order


class _NoBiasCorrection(MixedAdamW):  # planted bug: Adam without bias correction
    def _update(self, i, w, g):
        b1, b2 = self.betas
        self.m[i].lerp_(g, 1 - b1)
        self.v[i].mul_(b2).addcmul_(g, g, value=1 - b2)
        return -self.lr * self.m[i] / (self.v[i].sqrt() + self.eps)


def test_planted_adam_bug_is_caught():
    ours = _train(lambda p: _NoBiasCorrection(p, lr=1e-3, mode="fp32"))
    ref = _train(lambda p: reference_optimizer(p, 1e-3))
    assert max((a - b).abs().max().item() for a, b in zip(ours.parameters(), ref.parameters())) > 1e-4


def test_master_copy_follows_fp32_adamw_and_bf16_loses_layernorm_updates():
    model = GPT(E.SMALL)
    fp32 = [p.detach().clone().requires_grad_() for p in model.parameters()]
    ref = reference_optimizer(fp32, 1e-3)
    opt = MixedAdamW(model.parameters(), lr=1e-3, mode="master")
    for s in range(3):
        model.zero_grad()
        model(*E._batch(s))[1].backward()
        for q, p in zip(fp32, model.parameters()):
            q.grad = p.grad.clone()  # the same gradients: the master must follow AdamW
        ref.step()
        opt.step()
    assert max((m - q).abs().max().item() for m, q in zip(opt.master, fp32)) < 1e-6
    assert all(torch.equal(p, m.to(torch.bfloat16).float()) for p, m in zip(model.parameters(), opt.master))
    rows = {r["parameter"]: r for r in E.vanished_by_layer(steps=2, lr=1e-3)}
    assert rows["blocks.0.ln1.weight"]["unchanged"] == 1.0  # |update| ~ lr < ulp(1)/2 = 2^-8


def test_kahan_and_stochastic_keep_small_updates_that_nearest_rounding_drops():
    w0 = torch.ones(4096)
    out = {}
    for mode in ("bf16", "kahan", "stochastic"):
        p = w0.clone().requires_grad_()
        opt = MixedAdamW([p], lr=1e-3, mode=mode)
        for _ in range(50):
            p.grad = -torch.ones_like(p)  # Adam: every step moves +lr
            opt.step()
        out[mode] = p.detach().mean().item()
    assert out["bf16"] == 1.0  # 50 updates of 1e-3, each below 2^-8: all lost
    assert abs(out["kahan"] - 1.05) < 2 ** -7 and abs(out["stochastic"] - 1.05) < 2e-3


# --- loss scaling --------------------------------------------------------------------------

def test_dynamic_loss_scaler_equals_torch_gradscaler_with_a_planted_overflow():
    r = E.scaler_vs_torch(steps=8, overflow_at=3, growth_interval=2)
    assert r["ours"]["scales"] == r["torch"]["scales"]
    assert r["ours"]["skipped"] == r["torch"]["skipped"] == [3]
    assert r["param_diff"] == 0.0
    assert r["ours"]["scales"] == [1024, 1024, 2048, 2048, 1024, 1024, 2048, 2048]


class _NoSkip(DynamicLossScaler):  # planted bug: steps on an overflow
    @torch.no_grad()
    def step(self, optimizer):
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        self.found_inf = not all(torch.isfinite(g).all() for g in grads)
        for g in grads:
            g.mul_(1.0 / self.scale_value)
        optimizer.step()
        return True


class _NoUnscale(DynamicLossScaler):  # planted bug: forgets to divide by the scale
    @torch.no_grad()
    def step(self, optimizer):
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        self.found_inf = not all(torch.isfinite(g).all() for g in grads)
        if not self.found_inf:
            for g in grads:
                g.mul_(2.0)
            optimizer.step()
        return not self.found_inf


@pytest.mark.parametrize("bug", [_NoSkip, _NoUnscale])
def test_planted_scaler_bugs_are_caught(bug):
    r = E.scaler_vs_torch(steps=6, overflow_at=3, growth_interval=2, scaler_cls=bug)
    assert not (r["param_diff"] == 0.0 and r["ours"]["skipped"] == r["torch"]["skipped"])


def test_underflow_counts():
    g = torch.tensor([1e-9, 1e-6, 1e-3, 1e5, 0.0])
    u = E.underflow(g)
    assert u == {"zero": 0.25, "subnormal": 0.25, "overflow": 0.25, "below_normal": 0.5}
    assert E.underflow(g, scale=2.0 ** 10)["zero"] == 0.0


# --- communication -------------------------------------------------------------------------

def test_bf16_sums_on_real_ranks_replay_and_stay_within_the_bound():
    errs = E.reduction_errors((2, 4))
    for n, e in errs.items():
        assert e["ring = replay"]
        bound = cost.summation_error_bound(n, "bf16")
        for k in ("ring bf16", "gloo bf16", "reduce-scatter bf16"):
            assert e[k]["max"] <= bound, (n, k)
        assert e["reduce-scatter fp32 accumulate"]["max"] <= cost.unit_roundoff("bf16") * 1.001
    four = errs[4]
    assert four["reduce-scatter fp32 accumulate"]["mean"] < four["reduce-scatter bf16"]["mean"]
    # planted: a bound with fp16's unit roundoff is too tight for what bf16 measured
    assert four["ring bf16"]["max"] > (4 - 1) * cost.unit_roundoff("fp16")


def test_replay_large_worlds_grows_and_fp32_accumulation_does_not():
    rows = {r["world_size"]: r for r in E.replayed_errors((2, 16, 256), numel=1024)}
    assert rows[256]["bf16 mean"] > 3 * rows[2]["bf16 mean"]
    assert all(r["fp32-accumulated max"] <= cost.unit_roundoff("bf16") * 1.001 for r in rows.values())
    assert all(r["bf16 max"] <= r["bound"] for r in rows.values())


def test_fully_shard_reduce_scatters_in_its_compute_dtype():
    r = E.fsdp_reduce_dtype(2)
    assert r["fp32"]["reduce_dtype"] == ["float32"] and r["bf16"]["reduce_dtype"] == ["bfloat16"]
    assert r["fp32"]["grad_error"] < 1e-5 < r["bf16"]["grad_error"] < 0.1
    assert r["bf16"]["bytes_sent"] * 2 == r["fp32"]["bytes_sent"] > 0


# --- fp8 -----------------------------------------------------------------------------------

def test_fake_quantize_per_tensor_and_per_block():
    x = torch.randn(4, 256, generator=torch.Generator().manual_seed(0))
    q = fake_quantize(x, "e4m3")
    s = 448 / x.abs().max()
    assert torch.equal(q, (x * s).to(torch.float8_e4m3fn).float() / s)
    assert (q.abs().max() - x.abs().max()).abs() < 1e-6  # amax maps to 448 exactly
    rows = {(r["outlier"], r["scaling"]): r for r in E.outlier_errors((1e2, 1e5))}
    # fp8 is floating point: a 100x outlier costs the other channels nothing; a 1e5x one
    # pushes them below e4m3's normals, and only per-block scaling spares them
    assert abs(rows[1e2, "per tensor"]["error, other channels"]
               - rows[1e2, "per block"]["error, other channels"]) < 0.005
    assert rows[1e5, "per block"]["error, other channels"] < 0.1 < rows[1e5, "per tensor"]["error, other channels"]


def test_delayed_scaling_clamps_a_tensor_that_grew():
    hist = AmaxHistory(4)
    small = torch.ones(8)
    hist.scale_amax(small)
    big = torch.full((8,), 4.0)
    q = fake_quantize(big, "e4m3", scale_amax=hist.scale_amax(big))
    assert q.max().item() == 1.0  # scaled by last step's amax: 4 * 448 clamps to 448
    assert hist.scale_amax(big).item() == 4.0


def test_fp8_linear_forward_is_the_quantized_gemm_and_gradients_flow():
    lin = torch.nn.Linear(128, 64)
    f = Fp8Linear(lin)
    x = torch.randn(2, 5, 128, requires_grad=True)
    y = f(x)
    want = fake_quantize(x.detach(), "e4m3") @ fake_quantize(lin.weight.detach(), "e4m3").t() + lin.bias
    assert torch.allclose(y, want, atol=1e-5)
    y.sum().backward()
    assert x.grad is not None and lin.weight.grad is not None
    model = apply_fp8(GPT(E.SMALL))
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    model(*E._batch(0))
    assert all(t.dtype == torch.float8_e4m3fn for t in fp8_weight_copies(model))


def test_fp8_training_tracks_fp32():
    r = E.fp8_runs(steps=6)
    assert max(abs(a - b) for a, b in zip(r["fp8 current"], r["fp32"])) < 0.02


# --- bytes per parameter --------------------------------------------------------------------

def test_bytes_per_param_measured_equals_cost():
    m = E.bytes_per_param()
    assert m["fp32"]["total"] == cost.training_bytes_per_param("fp32")["total"] == 16
    assert m["bf16_mixed"]["total"] == cost.training_bytes_per_param("bf16_mixed")["total"] == 16
    assert m["bf16_mixed"]["total"] * 7e9 == cost.zero_memory(7e9, 1, 0)["total"]
    want = cost.training_bytes_per_param("fp8_mixed", m["gemm_fraction"])["total"]
    assert abs(m["fp8_mixed"]["total"] - want) < 1e-9
    assert cost.training_bytes(7e9, "bf16_mixed")["total"] == 112e9

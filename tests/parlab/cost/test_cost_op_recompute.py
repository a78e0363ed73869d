"""recompute="op": torchtitan's per-operator selective checkpointing in the cost model -- which
matmuls it runs again (checked against torch's own selective checkpointing on a Llama block),
the FLOPs, activations and time that follow, and where it is refused."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                    create_selective_checkpoint_contexts)

from parlab import cost, planner

LLAMA8 = planner.MODELS["llama3-8B"].shape
GPT = cost.LayerShape(4096, 32, dropout=False)
H100 = cost.Device(989.5e12, 3.35e12, 132, 0.7, 0.32, 0.6, 1979e12)


# --- which matmuls: torch's selective checkpointing with torchtitan's policy -------------------

class LlamaBlock(nn.Module):
    """A Llama block as torchtitan writes it: seven separate matmuls (wq, wk, wv, wo; w1, w3,
    w2), RMSNorm, grouped-query attention by SDPA, SwiGLU."""

    def __init__(self, h=64, heads=4, kv_heads=2, f=96):
        super().__init__()
        d = h // heads
        self.heads, self.kv_heads, self.d = heads, kv_heads, d
        self.wq, self.wk = nn.Linear(h, heads * d, bias=False), nn.Linear(h, kv_heads * d, bias=False)
        self.wv, self.wo = nn.Linear(h, kv_heads * d, bias=False), nn.Linear(heads * d, h, bias=False)
        self.w1, self.w3 = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)
        self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)

    def forward(self, x):
        b, s, _ = x.shape
        y = self.n1(x)
        q = self.wq(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.wk(y).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        v = self.wv(y).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, -1))
        y = self.n2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


_SAVE = {torch.ops.aten.mm.default,
         torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
         torch.ops.aten._scaled_dot_product_efficient_attention.default,
         torch.ops.aten._scaled_dot_product_flash_attention.default}


def _op_policy(meta):
    # torchtitan's rule (parallelize_llama.py at 9dec370): save attention and the matmuls,
    # except every second matmul, counted afresh in each forward
    def policy(ctx, func, *args, **kwargs):
        key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        save = func in _SAVE and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


class _MatmulFlops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func == torch.ops.aten.mm.default:
            (m, k), n = args[0].shape, args[1].shape[1]
            self.flops += 2 * m * n * k
        return out


def _backward_mm_flops(block, x, policy):
    from collections import defaultdict
    if policy is None:
        out = block(x)
    else:
        out = checkpoint(block, x, use_reentrant=False, context_fn=lambda: (
            create_selective_checkpoint_contexts(policy(defaultdict(int)))))
    with _MatmulFlops() as count:
        out.sum().backward()
    return count.flops


@pytest.mark.parametrize("policy_bug", [False, True])
def test_the_matmuls_torch_recomputes_are_op_recomputed(policy_bug):
    torch.manual_seed(0)
    h, heads, kv_heads, f, tokens = 64, 4, 2, 96, 2 * 16
    block = LlamaBlock(h, heads, kv_heads, f)
    x = torch.randn(2, 16, h, requires_grad=True)
    plain = _backward_mm_flops(block, x, None)

    def broken(meta):  # a planted bug: the counter never advances, every matmul is saved
        inner = _op_policy(meta)
        return lambda ctx, func, *a, **k: (CheckpointPolicy.MUST_SAVE
                                           if func == torch.ops.aten.mm.default
                                           else inner(ctx, func, *a, **k))
    redone = _backward_mm_flops(block, x, broken if policy_bug else _op_policy) - plain
    shape = cost.LayerShape(h, heads, kv_heads, d_ff=f, mlp="swiglu", biases=False,
                            dropout=False, rope=True)
    share = cost.op_recomputed(shape)
    widths = {"qkv": h * (shape.q + 2 * shape.kv), "proj": shape.q * h, "fc1": 2 * h * f,
              "fc2": f * h}
    want = sum(2 * tokens * share[k] * w for k, w in widths.items())
    if policy_bug:
        assert redone != want
    else:
        assert redone == want  # K, the output projection and the up projection, exactly


# --- what follows from it -----------------------------------------------------------------

def test_op_recomputed_for_llama_and_gpt():
    s = cost.op_recomputed(LLAMA8)
    assert s == {"qkv": 1024 / (4096 + 2048), "proj": 1.0, "fc1": 0.5, "fc2": 0.0}
    assert cost.op_recomputed(GPT) == {"qkv": 1 / 3, "proj": 1.0, "fc1": 0.0, "fc2": 1.0}
    with pytest.raises(ValueError, match="recompute='op'"):
        cost.op_recomputed(cost.LayerShape(4096, 32, 8, d_ff=14336, mlp="swiglu", n_experts=8))


def test_flops_add_the_recomputed_matmuls():
    h, q, kv, f, L, S = 4096, 4096, 1024, 14336, 32, 8192
    none = cost.flops_per_token(LLAMA8, L, S, vocab_size=128256, count="megatron")
    op = cost.flops_per_token(LLAMA8, L, S, vocab_size=128256, count="megatron", recompute="op")
    assert op - none == pytest.approx(2 * L * h * (kv + q + f))  # 36.5% of the matmuls' forward
    assert (op - none) / (2 * L * h * (q + 2 * kv + q + 3 * f)) == pytest.approx(19456 / 53248)
    full = cost.flops_per_token(LLAMA8, L, S, vocab_size=128256, count="megatron", recompute="full")
    assert none < op < full
    with pytest.raises(ValueError, match="recompute='op' needs count='megatron'"):
        cost.flops_per_token(8e9, L, S, 4096, recompute="op")


@pytest.mark.parametrize("tp, sp", [(1, False), (8, True), (4, False)])
def test_activations_against_megatrons_kinds(tp, sp):
    kw = dict(layer=LLAMA8, attention="fused", tp=tp, sequence_parallel=sp)
    got = {r: cost.activation_memory(8192, 2, recompute=r, **kw) for r in cost.RECOMPUTE_KINDS}
    assert got["none"] > got["op"] > got["full"] and got["none"] > got["selective"]
    # with sequence parallelism the down projection's output, a full-width partial sum on
    # every rank, outweighs what selective keeps; without TP op keeps less
    assert (got["op"] > got["selective"]) == (tp == 8)


def test_activations_by_hand():
    # tp 1: the input 2h, Q, V, the gate and the down projection's output 2(q + kv + f + h),
    # attention's output 2q and its fp32 statistics 4a, per token
    h, q, kv, f, a = 4096, 4096, 1024, 14336, 32
    got = cost.activation_memory(8192, 2, recompute="op", layer=LLAMA8, attention="fused")
    assert got == 2 * 8192 * (2 * h + 2 * (q + kv + f + h) + 2 * q + 4 * a)
    # tp 8 with sequence parallelism: the input and the two reduce-scatters' outputs split,
    # the down projection's partial sum whole on every rank
    got = cost.activation_memory(8192, 2, recompute="op", layer=LLAMA8, attention="fused",
                                 tp=8, sequence_parallel=True)
    per = 2 * h / 8 + 2 * (q + kv + f) / 8 + 2 * h + 2 * q / 8 + 4 * a / 8 + 4 * h / 8
    assert got == pytest.approx(2 * 8192 * per)


def test_op_is_refused_where_it_is_not_modelled():
    with pytest.raises(ValueError, match="recompute='op'"):
        cost.activation_memory(2048, 1, 4096, 32, recompute="op")   # Korthikanti's GPT layer
    with pytest.raises(ValueError, match="recompute='op'"):
        cost.activation_memory(2048, 1, recompute="op", layer=LLAMA8, attention="materialized")
    with pytest.raises(ValueError, match="recompute"):
        cost.memory_plan("7B", 8, 80.0, 3, "op")  # the presets' planner keeps Megatron's three


def test_layer_time_redoes_the_matmuls_and_the_elementwise():
    kw = dict(shape=LLAMA8, micro_batch=2, seq_len=8192, device=H100)
    t = {r: cost.layer_time(recompute=r, **kw) for r in cost.RECOMPUTE_KINDS}
    none, op = t["none"], t["op"]
    share = cost.op_recomputed(LLAMA8)
    gemms = sum(share.get(n, 0) * H100.gemm(m, nn_, k, c)
                for n, m, nn_, k, c in cost.layer_gemms(LLAMA8, 2 * 8192))
    ew = none["forward"] - none["gemm_forward"] - none["attention_forward"]
    assert op["recompute"] == pytest.approx(gemms + ew)
    assert op["backward"] - none["backward"] == pytest.approx(op["recompute"])
    assert t["selective"]["backward"] < op["backward"] < t["full"]["backward"]
    assert op["forward"] == none["forward"]
    parts = sum(op["parts"].values())
    assert parts == pytest.approx(op["forward"] + op["backward"])


def test_the_planner_takes_op_but_does_not_search_it():
    lay = planner.Layout(zero_stage=3, micro_batch=2, recompute="op", attention="fused")
    assert lay.recompute == "op"
    with pytest.raises(ValueError, match="recompute"):
        planner.Layout(recompute="sac")
    p = planner.plan("llama3-8B", 8, "H100", global_batch=16)
    assert {c.estimate.layout.recompute for c in p.ranked} <= set(cost.RECOMPUTE)


def test_plan_on_a_pytorch_stack_searches_op_instead_of_selective():
    small = {"n_layers": 8, "d_model": 1024, "n_heads": 16, "seq_len": 4096}
    kw = dict(global_batch=64, tps=(1, 2))
    torch_ = planner.plan(small, 8, "H100", stack="torch-compile", **kw)
    seen = {c.estimate.layout.recompute for c in torch_.ranked}
    assert seen <= {"none", "op", "full"}
    default = planner.plan(small, 8, "H100", **kw)
    assert {c.estimate.layout.recompute for c in default.ranked} <= set(cost.RECOMPUTE)
    # where memory is short, op is what a PyTorch stack falls back on before full: a 7B at
    # 16k tokens a GPU keeps ~73 GB of activations without recomputation, ~35 GB with op
    long = {"n_layers": 32, "d_model": 4096, "n_heads": 32, "seq_len": 16384}
    tight = planner.plan(long, 8, "H100", global_batch=8, tps=(1,), pps=(1,), cps=(1,),
                         stack="torch-compile")
    assert tight.best.estimate.layout.recompute == "op"
    megatron = planner.plan(long, 8, "H100", global_batch=8, tps=(1,), pps=(1,), cps=(1,))
    assert megatron.best.estimate.layout.recompute in ("selective", "full")
    # a MoE has no "op" (its experts' grouped GEMMs are not matmuls to torchtitan's counter)
    moe = planner.plan("mixtral-8x7B", 64, "H100", global_batch=64, stack="torch-compile",
                       tps=(8,), eps=(8,))
    assert moe.ranked and all(c.estimate.layout.recompute != "op" for c in moe.ranked)


def test_selective_with_a_fused_kernel_recomputes_no_matmul():
    # Korthikanti's selective recomputes the attention core (a third of the attention term);
    # with a fused kernel the planner's selective recomputes the norms and the activation
    # instead (layer_time, activation_memory), and the FLOP count agrees
    kw = dict(vocab_size=128256, count="megatron")
    none = cost.flops_per_token(LLAMA8, 32, 8192, **kw)
    core = cost.flops_per_token(LLAMA8, 32, 8192, recompute="selective", **kw)
    fused = cost.flops_per_token(LLAMA8, 32, 8192, recompute="selective", attention="fused", **kw)
    assert fused == none < core
    assert core - none == pytest.approx(4 * 32 * 8192 * LLAMA8.q)  # 12 L T q / 3
    with pytest.raises(ValueError, match="attention"):
        cost.flops_per_token(LLAMA8, 32, 8192, attention="flash", **kw)

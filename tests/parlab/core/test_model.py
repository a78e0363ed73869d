"""Tests for the reference model (parlab.model) and its data (parlab.data)."""

import math
import time

import pytest
import torch

from parlab.data import MarkovData, get_batch, local_batch
from parlab.model import (GPT, Block, GPTConfig, init_module_, init_tensor, loss_fn, max_differences,
                          reference_train)

@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matmuls: one intra-op thread is fastest, and with two threads on a
    busy 2-core machine OpenMP spinning makes training ~20x slower.  (The thread
    count also changes fp32 results in the last bits.)"""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


SMALL = GPTConfig(vocab_size=32, seq_len=16, d_model=32, n_heads=4, n_layers=2)


def params(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


# ----------------------------------------------------------------------------- config

def test_config_defaults_and_d_ff():
    c = GPTConfig()
    assert (c.vocab_size, c.seq_len, c.d_model, c.n_heads, c.n_layers, c.bias) == (64, 64, 64, 4, 4, True)
    assert c.d_ff == 256 and c.head_dim == 16
    assert GPTConfig(d_ff=100).d_ff == 100


@pytest.mark.parametrize("kwargs, words", [
    (dict(n_heads=3), ["n_heads=3", "d_model=64"]),
    (dict(vocab_size=0), ["vocab_size=0"]),
    (dict(n_layers=-1), ["n_layers=-1"]),
    (dict(d_ff=0), ["d_ff=0"]),
    (dict(seq_len=0), ["seq_len=0"]),
])
def test_config_errors(kwargs, words):
    with pytest.raises(ValueError) as e:
        GPTConfig(**kwargs)
    for w in words:
        assert w in str(e.value)


# ----------------------------------------------------------------------------- init

def test_same_seed_same_params_different_seed_different():
    a, b, c = params(GPT(SMALL, seed=0)), params(GPT(SMALL, seed=0)), params(GPT(SMALL, seed=1))
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[n], b[n]) for n in a)
    # every random weight changes with the seed (constant ones do not)
    for n in a:
        if n.endswith("weight") and ".ln" not in n and not n.startswith("ln"):
            assert not torch.equal(a[n], c[n]), n


def test_global_rng_has_no_effect_and_is_not_consumed():
    torch.manual_seed(123)
    a = params(GPT(SMALL, seed=5))
    torch.manual_seed(999)
    state = torch.get_rng_state()
    b = params(GPT(SMALL, seed=5))
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert torch.equal(state, torch.get_rng_state())


def test_every_param_equals_init_tensor():
    m = GPT(SMALL, seed=7)
    for n, p in m.named_parameters():
        assert p.dtype == torch.float32
        assert torch.equal(p.detach(), init_tensor(n, p.shape, 7, SMALL.n_layers)), n


def test_parameter_names():
    m = GPT(GPTConfig(n_layers=1))
    assert [n for n, _ in m.named_parameters()] == [
        "wte.weight", "wpe.weight",
        "blocks.0.ln1.weight", "blocks.0.ln1.bias",
        "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias",
        "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias",
        "blocks.0.ln2.weight", "blocks.0.ln2.bias",
        "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc1.bias",
        "blocks.0.mlp.fc2.weight", "blocks.0.mlp.fc2.bias",
        "ln_f.weight", "ln_f.bias", "lm_head.weight"]
    assert m.blocks[0].attn.qkv.weight.shape == (192, 64)
    assert m.lm_head.bias is None
    no_bias = GPT(GPTConfig(n_layers=1, bias=False))
    assert not any(n.endswith("bias") for n, _ in no_bias.named_parameters())


def test_init_rules():
    cfg = GPTConfig(n_layers=4)
    m = GPT(cfg)
    sd = dict(m.named_parameters())
    assert torch.equal(sd["blocks.1.ln2.weight"], torch.ones(64))
    assert torch.equal(sd["ln_f.bias"], torch.zeros(64))
    assert torch.equal(sd["blocks.3.mlp.fc1.bias"], torch.zeros(256))
    assert sd["wte.weight"].std().item() == pytest.approx(0.02, rel=0.1)
    assert sd["blocks.0.attn.qkv.weight"].std().item() == pytest.approx(0.02, rel=0.05)
    small = 0.02 / math.sqrt(2 * cfg.n_layers)
    assert sd["blocks.0.attn.proj.weight"].std().item() == pytest.approx(small, rel=0.05)
    assert sd["blocks.2.mlp.fc2.weight"].std().item() == pytest.approx(small, rel=0.05)
    # lm_head is not tied to wte
    assert m.lm_head.weight is not m.wte.weight
    assert not torch.equal(m.lm_head.weight, m.wte.weight)
    with pytest.raises(ValueError, match="blocks.0.attn.foo"):
        init_tensor("blocks.0.attn.foo", (3,), 0, 4)


def test_layer_built_standalone_matches():
    cfg = GPTConfig()
    ref = GPT(cfg, seed=3)
    name = "blocks.2.mlp.fc1.weight"
    assert torch.equal(init_tensor(name, (cfg.d_ff, cfg.d_model), 3, cfg.n_layers),
                       ref.get_parameter(name).detach())
    # a "pipeline stage" holding blocks 2 and 3 only
    torch.manual_seed(0)
    stage = [init_module_(Block(cfg), f"blocks.{i}.", 3, cfg.n_layers) for i in (2, 3)]
    for i, blk in zip((2, 3), stage):
        for n, p in blk.named_parameters():
            assert torch.equal(p, ref.blocks[i].get_parameter(n)), (i, n)
    # and it computes the same thing as the reference's blocks
    x = torch.randn(2, 8, cfg.d_model)
    assert torch.equal(stage[1](stage[0](x)), ref.blocks[3](ref.blocks[2](x)))


# ----------------------------------------------------------------------------- forward

def test_forward_shapes_and_composition():
    m = GPT(SMALL)
    idx, targets = get_batch(0, 3, 10, vocab_size=SMALL.vocab_size)
    logits, loss = m(idx, targets)
    assert logits.shape == (3, 10, SMALL.vocab_size) and loss.shape == ()
    assert m(idx)[1] is None
    x = m.embed(idx)
    assert x.shape == (3, 10, SMALL.d_model)
    for b in m.blocks:
        x = b(x)
    assert torch.equal(m.head(x), logits)
    assert torch.equal(loss_fn(logits, targets), loss)
    with pytest.raises(ValueError, match="seq_len=16"):
        m(torch.zeros(1, 17, dtype=torch.long))


def test_loss_at_init_near_uniform():
    cfg = GPTConfig()
    x, y = get_batch(0, 8, cfg.seq_len)
    _, loss = GPT(cfg)(x, y)
    assert abs(loss.item() - math.log(cfg.vocab_size)) < 0.1


def test_causal():
    m = GPT(SMALL, seed=1)
    idx = get_batch(0, 2, 16, vocab_size=SMALL.vocab_size)[0]
    t = 9
    idx2 = idx.clone()
    idx2[:, t] = (idx[:, t] + 1) % SMALL.vocab_size
    with torch.no_grad():
        a, b = m(idx)[0], m(idx2)[0]
    assert torch.equal(a[:, :t], b[:, :t])
    assert not torch.allclose(a[:, t:], b[:, t:])  # the test can see a change


def test_qkv_layout_q_k_v_heads_contiguous():
    """qkv output is [q | k | v], each d wide, head h at columns [h*hd, (h+1)*hd)."""
    cfg = GPTConfig(d_model=32, n_heads=4)
    attn = GPT(cfg, seed=2).blocks[0].attn
    d, hd, T = cfg.d_model, cfg.head_dim, 6
    x = torch.randn(1, T, d)
    W, bias = attn.qkv.weight.detach(), attn.qkv.bias.detach()
    heads = []
    for h in range(cfg.n_heads):
        q, k, v = (x @ W[s * d + h * hd: s * d + (h + 1) * hd].T + bias[s * d + h * hd: s * d + (h + 1) * hd]
                   for s in range(3))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
        heads.append(scores.softmax(-1) @ v)
    expected = attn.proj(torch.cat(heads, dim=-1))
    torch.testing.assert_close(attn(x), expected)


def test_forward_matches_functional_reimplementation():
    """An independent, purely functional GPT-2 forward from the parameter dict:
    pins the architecture (pre-LN residuals, GELU-tanh, learned positions, ...)."""
    cfg = GPTConfig(vocab_size=32, seq_len=16, d_model=32, n_heads=2, n_layers=2)
    m = GPT(cfg, seed=4)
    for p in m.parameters():  # make biases / LayerNorm params non-trivial too
        p.data.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    P = {n: p.detach() for n, p in m.named_parameters()}
    idx = get_batch(0, 2, 12, vocab_size=cfg.vocab_size)[0]
    B, T, d, H = 2, 12, cfg.d_model, cfg.n_heads
    F = torch.nn.functional

    def ln(x, name):
        return F.layer_norm(x, (d,), P[name + ".weight"], P[name + ".bias"])

    def lin(x, name):
        return F.linear(x, P[name + ".weight"], P.get(name + ".bias"))

    x = P["wte.weight"][idx] + P["wpe.weight"][:T]
    for i in range(cfg.n_layers):
        b = f"blocks.{i}."
        q, k, v = lin(ln(x, b + "ln1"), b + "attn.qkv").split(d, dim=-1)
        q, k, v = (t.reshape(B, T, H, d // H).permute(0, 2, 1, 3) for t in (q, k, v))
        att = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(d // H)
        att = att + torch.full((T, T), float("-inf")).triu(1)
        y = torch.einsum("bhts,bhsd->bhtd", att.softmax(-1), v).permute(0, 2, 1, 3).reshape(B, T, d)
        x = x + lin(y, b + "attn.proj")
        h = F.gelu(lin(ln(x, b + "ln2"), b + "mlp.fc1"), approximate="tanh")
        x = x + lin(h, b + "mlp.fc2")
    expected = lin(ln(x, "ln_f"), "lm_head")
    with torch.no_grad():
        torch.testing.assert_close(m(idx)[0], expected, rtol=1e-5, atol=1e-5)


def test_num_params():
    cfg = GPTConfig()
    m = GPT(cfg)
    d, V, L, f = cfg.d_model, cfg.vocab_size, cfg.n_layers, cfg.d_ff
    per_block = (2 * 2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)
    emb = V * d + cfg.seq_len * d
    assert m.num_params() == emb + L * per_block + 2 * d + d * V
    assert m.num_params(include_embeddings=False) == m.num_params() - emb


# ----------------------------------------------------------------------------- training

def test_reference_train_deterministic():
    a = reference_train(SMALL, steps=4, batch_size=4, lr=1e-2)
    b = reference_train(SMALL, steps=4, batch_size=4, lr=1e-2)
    assert a["losses"] == b["losses"] and len(a["losses"]) == 4
    assert a["state_dict"].keys() == b["state_dict"].keys()
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert a["grads"].keys() == dict(GPT(SMALL).named_parameters()).keys()
    assert all(torch.equal(a["grads"][k], b["grads"][k]) for k in a["grads"])
    # the seeds matter
    c = reference_train(SMALL, steps=4, batch_size=4, lr=1e-2, data_seed=1)
    assert c["losses"] != a["losses"]


def test_reference_train_is_the_documented_loop():
    """The loop every strategy reproduces, written out: AdamW(betas=(0.9, 0.95)),
    global batch get_batch(step, batch_size, seq_len, vocab_size, seed=data_seed)."""
    lr, wd, steps, bs = 3e-3, 0.1, 3, 4
    model = GPT(SMALL, seed=2)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=wd)
    losses = []
    for step in range(steps):
        x, y = get_batch(step, bs, SMALL.seq_len, SMALL.vocab_size, seed=5)
        loss = loss_fn(model(x)[0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    ref = reference_train(SMALL, steps, bs, lr=lr, seed=2, data_seed=5, weight_decay=wd)
    assert ref["losses"] == losses
    for n, p in model.named_parameters():
        assert torch.equal(ref["state_dict"][n], p.detach()), n
        assert torch.equal(ref["grads"][n], p.grad), n


def test_reference_train_loss_decreases():
    cfg = GPTConfig()
    t0 = time.perf_counter()
    reference_train(cfg, steps=5, batch_size=8)
    print(f"\n5 training steps, default GPTConfig, batch 8, {torch.get_num_threads()} thread(s): "
          f"{time.perf_counter() - t0:.3f} s")
    losses = reference_train(cfg, steps=30, batch_size=8, lr=3e-3)["losses"]
    assert losses[0] == pytest.approx(math.log(cfg.vocab_size), abs=0.1)
    assert sum(losses[-5:]) / 5 < losses[0] - 1.0


# ----------------------------------------------------------------------------- data

def test_data_deterministic():
    x1, y1 = get_batch(3, 8, 32)
    x2, y2 = MarkovData(64, 0, 4).batch(3, 8, 32)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.dtype == y1.dtype == torch.int64 and x1.shape == y1.shape == (8, 32)
    assert not torch.equal(x1, get_batch(4, 8, 32)[0])
    assert not torch.equal(x1, get_batch(3, 8, 32, seed=1)[0])
    torch.manual_seed(0)
    a = get_batch(5, 4, 8)[0]
    torch.manual_seed(1)
    state = torch.get_rng_state()
    assert torch.equal(a, get_batch(5, 4, 8)[0])
    assert torch.equal(state, torch.get_rng_state())


def test_data_shift_and_transitions_allowed():
    m = MarkovData(vocab_size=16, seed=2, branching=3)
    x, y = m.batch(0, 16, 40)
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert x.min() >= 0 and x.max() < 16
    assert (m.transition[x, y] > 0).all()  # only allowed successors are ever sampled


def test_first_token_from_stationary_distribution():
    m = MarkovData()
    x, _ = m.batch(0, 4096, 8)
    for t in (0, 7):  # the chain is stationary at every position
        freq = torch.bincount(x[:, t], minlength=64).double() / 4096
        tv = 0.5 * (freq - m.stationary).abs().sum().item()
        assert tv < 0.1, (t, tv)  # ~0.05 expected from sampling noise
    assert 0.5 * (m.stationary - 1 / 64).abs().sum().item() > 0.2  # pi is far from uniform


def test_transition_matrix():
    for V, b in [(64, 4), (10, 1), (7, 7)]:
        m = MarkovData(vocab_size=V, seed=1, branching=b)
        P = m.transition
        assert P.dtype == torch.float64 and P.shape == (V, V)
        torch.testing.assert_close(P.sum(1), torch.ones(V, dtype=torch.float64))
        assert ((P > 0).sum(1) == b).all()
        torch.testing.assert_close(m.stationary @ P, m.stationary)
        # irreducible: every token reachable from every token, so pi is unique and > 0
        reach = (P > 0) | torch.eye(V, dtype=torch.bool)
        for _ in range(V.bit_length()):
            reach = (reach.double() @ reach.double()) > 0
        assert reach.all() and (m.stationary > 0).all()


def test_entropy_rate():
    m = MarkovData()
    H = m.entropy_rate()
    assert 0 < H < math.log(4) + 1e-9
    x, y = m.batch(0, 256, 64)
    mc = -torch.log(m.transition[x, y]).mean().item()
    assert abs(mc - H) < 0.02, (mc, H)
    assert MarkovData(vocab_size=8, branching=1).entropy_rate() == 0.0


def test_data_errors():
    with pytest.raises(ValueError, match=r"branching=65.*vocab_size=64"):
        MarkovData(vocab_size=64, branching=65)
    with pytest.raises(ValueError, match="vocab_size=0"):
        MarkovData(vocab_size=0)
    with pytest.raises(ValueError, match="branching=0"):
        MarkovData(branching=0)
    with pytest.raises(ValueError, match="batch_size=0"):
        get_batch(0, 0, 8)
    with pytest.raises(ValueError, match="seq_len=0"):
        get_batch(0, 4, 0)
    with pytest.raises(ValueError, match="step=-1"):
        get_batch(-1, 4, 8)


def test_local_batch_slices_the_global_batch_in_rank_order():
    x, y = get_batch(3, 8, 16, seed=1)
    parts = [local_batch(3, 8, 16, 64, r, 4, seed=1) for r in range(4)]
    assert torch.equal(torch.cat([p[0] for p in parts]), x)
    assert torch.equal(torch.cat([p[1] for p in parts]), y)
    with pytest.raises(ValueError, match="world_size=3 must divide batch_size=8"):
        local_batch(0, 8, 16, 64, 0, 3)


def test_max_differences_finds_the_largest_gap_of_each_kind():
    ref = {"losses": [1.0, 2.0], "grads": {"w": torch.zeros(3)}, "state_dict": {"w": torch.ones(2)}}
    run = {"losses": [1.0, 2.5], "grads": {"w": torch.tensor([0.0, -0.25, 0.1])},
           "state_dict": {"w": torch.tensor([1.0, 1.125])}}
    assert max_differences(run, ref) == {"loss": 0.5, "grad": 0.25, "param": 0.125}
    assert max_differences(ref, ref) == {"loss": 0.0, "grad": 0.0, "param": 0.0}


# --- Mixture of Experts (parlab.moe) ----------------------------------------------------

def _moe_cfg(**kw):
    from parlab.model import GPTConfig
    return GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2,
                     n_experts=4, **kw)


def test_moe_names_init_and_layers():
    import torch

    from parlab.model import GPT, init_tensor
    m = GPT(_moe_cfg(moe_layers=(1,)))
    names = dict(m.named_parameters())
    assert "blocks.0.mlp.fc1.weight" in names and "blocks.1.mlp.fc1.weight" not in names
    assert names["blocks.1.moe.router.weight"].shape == (4, 32)
    w = names["blocks.1.moe.experts.3.fc2.weight"]
    assert torch.equal(w, init_tensor("blocks.1.moe.experts.3.fc2.weight", w.shape, 0, 2))
    assert w.std() < 0.02 / 1.5  # scaled like every residual output projection
    assert "blocks.1.moe.expert_bias" not in m.state_dict()  # not trained state by default


def test_moe_layer_is_the_gated_sum_of_its_experts():
    import torch

    from parlab.model import GPT
    for k, renorm in ((1, False), (2, False), (2, True)):
        moe = GPT(_moe_cfg(top_k=k, renormalize=renorm)).blocks[0].moe
        x = torch.randn(3, 5, 32, generator=torch.Generator().manual_seed(1))
        y = moe(x).view(-1, 32)
        probs = (x.view(-1, 32) @ moe.router.weight.T).softmax(-1)
        top = probs.topk(k, -1)
        for t, xt in enumerate(x.view(-1, 32)):
            g = top.values[t] / (top.values[t].sum() if renorm else 1)  # Mixtral vs Switch
            want = sum(g[j] * moe.experts[str(int(top.indices[t, j]))](xt) for j in range(k))
            torch.testing.assert_close(y[t], want, rtol=1e-5, atol=1e-6)


def test_capacity_priority_first_choices_then_token_order():
    import torch

    from parlab.moe import positions_before, slot_positions
    idx = torch.tensor([[0, 1], [0, 1], [1, 0]])       # 3 tokens, top-2, 2 experts
    counts = torch.nn.functional.one_hot(idx, 2).sum(0).unsqueeze(0)
    pos = slot_positions(idx, 2, positions_before(counts, 0))
    # expert 0: token 0 (1st), token 1 (1st), then token 2's 2nd choice
    assert pos.tolist() == [[0, 1], [1, 2], [0, 2]]


def test_aux_and_z_losses_follow_the_papers():
    import torch

    from parlab.model import GPT
    moe = GPT(_moe_cfg(top_k=2, aux_loss_coef=0.1, z_loss_coef=0.01)).blocks[0].moe
    x = torch.randn(40, 32, generator=torch.Generator().manual_seed(2))
    moe(x)
    logits = x @ moe.router.weight.T
    probs, idx = logits.softmax(-1), logits.topk(2, -1).indices
    f = torch.nn.functional.one_hot(idx, 4).sum((0, 1)).float() / (40 * 2)
    want = 0.1 * 4 * (f * probs.mean(0)).sum() + 0.01 * logits.logsumexp(-1).square().mean()
    torch.testing.assert_close(moe.aux_loss, want)


def test_reference_train_reports_routing_and_drops():
    from parlab.model import reference_train
    ref = reference_train(_moe_cfg(top_k=2, capacity_factor=0.5), 2, 4)
    step = ref["moe"][0]["blocks.0.moe"]
    assert sum(step["routed"]) == 4 * 16 * 2 and step["capacity"] == 16
    assert len(step["dropped"]) == sum(step["routed"]) - sum(step["kept"]) > 0
    dense = reference_train(_moe_cfg().__class__(vocab_size=64, seq_len=16, d_model=32,
                                                n_heads=4, n_layers=2), 1, 4)
    assert "moe" not in dense

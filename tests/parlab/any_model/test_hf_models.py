"""Every strategy's parts on models that are not the lab's (tests/workers_any_model.py):
Hugging Face's GPT-2 (tied embeddings, Conv1D), Llama (grouped-query attention, RoPE)
and Mixtral, built from tiny configs, and a Mixtral-style MoE block written by hand.

Each part trained 3 AdamW steps equals the same model trained on one device by its own
forward, to 1e-5 in loss, gradients and parameters; each comparison is shown able to
fail by a planted bug; and what a part cannot take is refused, naming it, before any
step (a part that finds nothing to do, or guesses a layout, trains something else
without a word). transformers is a test-only dependency."""

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import workers_any_model as w  # noqa: E402

import parlab  # noqa: E402
from parlab.context_parallel import apply_context_parallel  # noqa: E402
from parlab.expert_parallel import apply_expert_parallel  # noqa: E402
from parlab.moe import MoE  # noqa: E402
from parlab.pipeline_parallel import BlockAdapter  # noqa: E402
from parlab.tensor_parallel import Colwise, VocabParallel, apply_tensor_parallel  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaMLP  # noqa: E402

# fp32, 3 steps; only the order of sums differs. Measured on one CPU: at most 2.4e-6
# (Mixtral's parameters under EP); a planted bug moves them by more than 1e-2.
TOL = 1e-5
CAUGHT = 1e-3
DP_PARTS = ["naive", "bucketed", "zero1", "zero2", "fsdp"]


@pytest.fixture(scope="module")
def reference():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = w.reference(name)
        return cache[name]
    return get


@pytest.fixture(scope="module")
def launched():
    """launched(fn, world, *args): each distinct launch once for the whole module."""
    cache = {}

    def get(fn, world, *args):
        key = repr((fn.__name__, world, args))
        if key not in cache:
            cache[key] = parlab.launch(fn, world, *args, timeout=150)
        return cache[key]
    return get


def merged(ranks: list[dict]) -> dict:
    """One result from ranks that each hold some parameters (experts, stages): every
    name from the first rank holding it; the loss from rank 0."""
    out = {"loss": ranks[0]["loss"], "params": {}, "grads": {}}
    for r in ranks:
        for key in ("params", "grads"):
            for n, t in r[key].items():
                out[key].setdefault(n, t)
    return out


def differences(got: dict, want: dict) -> dict:
    """The largest |difference| in loss (per step), gradients and parameters; every
    parameter and gradient of one device must be there, under the same name and shape
    (a Conv1D's weight reassembled in its own (in, out) layout)."""
    for k in ("params", "grads"):
        assert {n: t.shape for n, t in got[k].items()} == {n: t.shape for n, t in want[k].items()}
    return {"loss": max(abs(a - b) for a, b in zip(got["loss"], want["loss"])),
            **{k: max((got[k][n] - want[k][n]).abs().max().item() for n in want[k])
               for k in ("params", "grads")}}


def assert_equal(got, want):
    d = differences(got, want)
    assert len(got["loss"]) == len(want["loss"]) == w.STEPS
    assert max(d.values()) < TOL, d


def assert_caught(got, want):
    d = differences(got, want)
    assert d["params"] > CAUGHT, d


# --- DP, ZeRO-1/2/3, HSDP ----------------------------------------------------------------

@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("part", DP_PARTS + ["hsdp"])
def test_data_parallel_parts_equal_one_device(reference, launched, name, part):
    # ranks seeded differently: the part's broadcast must make them agree. GPT-2's tie
    # (lm_head is wte) must come through as one parameter; HSDP: 2 replicas x 2 shards.
    world, parts = (4, ["hsdp"]) if part == "hsdp" else (2, DP_PARTS)
    assert_equal(launched(w.data_parallel, world, name, parts)[0][part], reference(name))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("part", DP_PARTS + ["hsdp"])
def test_data_parallel_comparison_catches_replicas_that_never_agree(reference, launched,
                                                                    name, part):
    world, parts = (4, ["hsdp"]) if part == "hsdp" else (2, DP_PARTS)
    got = launched(w.data_parallel, world, name, parts, "no_broadcast")[0][part]
    assert_caught(got, reference(name))


# --- TP ------------------------------------------------------------------------------------

@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_tensor_parallel_by_plan_equals_one_device(reference, launched, name):
    got = launched(w.tensor_parallel, 2, name)[0]
    assert_equal(got, reference(name))
    local = got["local"]
    if name == "gpt2":  # Conv1D keeps its (in, out) layout, each rank half the columns
        assert got["swapped"] == [f"transformer.h.{i}.mlp.{m}" for i in range(w.LAYERS)
                                  for m in ("c_fc", "c_proj")]
        assert local["transformer.h.0.mlp.c_fc.weight"] == (w.D, w.D // 2)
        assert local["transformer.h.0.mlp.c_proj.weight"] == (w.D // 2, w.D)
    else:  # whole heads: 2 of the 4 query heads, 1 of the 2 KV heads (head_dim 8)
        assert len(got["swapped"]) == 7 * w.LAYERS
        assert local["model.layers.0.self_attn.q_proj.weight"] == (16, w.D)
        assert local["model.layers.0.self_attn.k_proj.weight"] == (8, w.D)
        assert local["model.layers.0.self_attn.o_proj.weight"] == (w.D, 16)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, bug", [("gpt2", "conv1d_as_linear"), ("llama", "no_f")])
def test_tensor_parallel_comparison_catches_a_planted_bug(reference, launched, name, bug):
    # conv1d_as_linear: the bug, a Conv1D's (in, out) weight sliced as if it were
    # (out, in) -- it runs (the MLP is square) and trains something else; no_f: Megatron's
    # f without its backward all-reduce
    assert_caught(launched(w.tensor_parallel, 2, name, bug)[0], reference(name))


# --- EP ------------------------------------------------------------------------------------

@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, world", [("moe", 2), ("moe", 4), ("mixtral", 2)])
def test_expert_parallel_over_described_blocks_equals_one_device(reference, launched,
                                                                 name, world):
    # ep=2; with 4 ranks, 2 EP groups, each expert on 2 ranks (its expert-DP group)
    ranks = launched(w.expert_parallel, world, name, 2)
    assert_equal(merged(ranks), reference(name))
    assert [r["experts"] for r in ranks] == [["0", "1"], ["2", "3"]] * (world // 2)
    block = "moes.{}" if name == "moe" else "model.layers.{}.block_sparse_moe"
    assert ranks[0]["swapped"] == [block.format(i) for i in range(w.LAYERS)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, world, bug", [
    ("moe", 2, "experts_replicated"), ("moe", 2, "router_as_expert"),
    ("moe", 4, "experts_replicated"), ("moe", 4, "router_as_expert"),
    ("mixtral", 2, "experts_replicated")])
def test_expert_parallel_comparison_catches_experts_mistaken(reference, launched, name,
                                                             world, bug):
    # which parameters are experts is known by membership (expert_parameters); a sync
    # that averages experts as replicated, or a router as an expert, trains wrong
    assert_caught(merged(launched(w.expert_parallel, world, name, 2, bug)), reference(name))


# --- PP ------------------------------------------------------------------------------------

@pytest.mark.timeout(300)
def test_pipeline_over_llama_decoder_layers_equals_one_device(reference, launched):
    # embeddings + block 0 | block 1 + norm + head, 1F1B over 4 micro-batches; each
    # block through BlockAdapter: causal mask and rotary tables made on its stage
    assert_equal(merged(launched(w.pipeline_parallel, 2, 4)), reference("llama"))


@pytest.mark.timeout(300)
def test_pipeline_comparison_catches_a_forgotten_causal_mask(reference, launched):
    assert_caught(merged(launched(w.pipeline_parallel, 2, 4, "no_mask")), reference("llama"))


def test_block_adapter_picks_the_activation_out_of_a_tuple():
    # GPT-2's blocks return a tuple: output= picks the activation, and the adapted blocks
    # reproduce GPT2Model's hidden states exactly; without it the block is named
    model = w.gpt2()
    hs = model.transformer(w.batch(0)[0], output_hidden_states=True).hidden_states
    blocks = [BlockAdapter(b, output=lambda out: out[0]) for b in model.transformer.h]
    assert torch.equal(blocks[0](hs[0]), hs[1])
    assert torch.equal(model.transformer.ln_f(blocks[1](hs[1])), hs[2])
    with pytest.raises(ValueError, match="GPT2Block returned a tuple.*output="):
        BlockAdapter(model.transformer.h[0])(hs[0])


# --- what a block description claims is checked ------------------------------------------

def test_a_described_block_computes_what_the_block_computes():
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    x = torch.randn(2, 5, w.D, generator=torch.Generator().manual_seed(0))
    hf = MixtralSparseMoeBlock(MixtralConfig(hidden_size=w.D, intermediate_size=2 * w.D,
                                             num_local_experts=4, num_experts_per_tok=2))
    for block in (w.MixtralStyleMoE(), hf):
        layer = MoE.from_block(block, output="hidden_and_router_logits", example=x)
        (y, logits), (want, want_logits) = layer(x), block(x)
        torch.testing.assert_close(y, want, atol=1e-6, rtol=0)
        torch.testing.assert_close(logits, want_logits, atol=1e-6, rtol=0)
        assert layer.router is block.gate and layer.experts["3"] is block.experts[3]


class SigmoidRouted(w.MixtralStyleMoE):
    """Same parts as Mixtral's block, another rule: sigmoid scores, not renormalised."""

    def forward(self, x):
        h = x.reshape(-1, x.size(-1))
        logits = self.gate(h)
        weights, chosen = torch.sigmoid(logits).topk(self.top_k, dim=-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            token, k = torch.where(chosen == e)
            out = out.index_add(0, token, expert(h[token]) * weights[token, k, None])
        return out.view_as(x), logits


class WithSharedExpert(w.MixtralStyleMoE):
    def __init__(self):
        super().__init__()
        self.shared = w.Expert(w.D, w.D)


def test_a_description_that_does_not_fit_is_refused():
    x = torch.randn(2, 5, w.D, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="SigmoidRouted's forward does not compute"):
        MoE.from_block(SigmoidRouted(), output="hidden_and_router_logits", example=x)
    with pytest.raises(ValueError, match="returns a tuple.*output='hidden'"):
        MoE.from_block(w.MixtralStyleMoE(), example=x)
    with pytest.raises(ValueError, match=r"leaves out.*\['shared.w1.weight'"):
        MoE.from_block(WithSharedExpert())


# --- refusals: a ValueError naming what, before any step ---------------------------------

REFUSALS = {  # case: (call, message)
    "colwise on a norm": (lambda: apply_tensor_parallel(w.llama(), {
        "model.layers.*.mlp.gate_proj": Colwise(), "model.norm": Colwise()}),
        r"Colwise cannot take 'model.norm' of LlamaForCausalLM, a LlamaRMSNorm"),
    "colwise on torch's Conv1d": (lambda: apply_tensor_parallel(
        nn.Sequential(nn.Conv1d(4, 4, 3)), {"0": Colwise()}), r"'0' of Sequential, a Conv1d"),
    "vocab-parallel head": (lambda: apply_tensor_parallel(w.gpt2(), {"lm_head": VocabParallel()}),
                            r"VocabParallel cannot take 'lm_head' .* a Linear"),
    "a plan entry naming nothing": (lambda: apply_tensor_parallel(w.gpt2(), {
        "transformer.h.*.mlp.fc1": Colwise()}),
        r"'transformer.h.\*.mlp.fc1' names no submodule .* of GPT2LMHeadModel"),
    "CP without attention cores": (lambda: apply_context_parallel(w.llama()),
                                   r"no attention core in LlamaForCausalLM"),
    "EP without MoE layers": (lambda: apply_expert_parallel(w.llama()),
                              r"no parlab.moe.MoE layers in LlamaForCausalLM"),
    "EP on a block that is no MoE": (lambda: apply_expert_parallel(w.llama(), blocks=LlamaMLP),
                                     r"'model.layers.0.mlp' of LlamaForCausalLM: LlamaMLP is "
                                     r"not a MoE block"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_what_a_part_cannot_take_is_refused_by_name(case):
    # none of these needs a process group: the checks come before any collective
    call, message = REFUSALS[case]
    with pytest.raises(ValueError, match=message):
        call()


def test_a_refused_plan_swaps_nothing():
    model = w.gpt2()
    with pytest.raises(ValueError, match="'transformer.ln_f'"):
        apply_tensor_parallel(model, {"transformer.h.*.mlp.c_fc": Colwise(),
                                      "transformer.ln_f": Colwise()})
    assert type(model.transformer.h[0].mlp.c_fc).__name__ == "Conv1D"

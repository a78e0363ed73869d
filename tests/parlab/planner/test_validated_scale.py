"""How far the published runs vouch for a prediction: a layout beyond the most GPUs any
published run of its kind used says so, in plan()'s reasons and in 09's speed answer."""

from parlab import planner
from parlab.planner import Layout


def test_fsdp2_zero3_is_checked_up_to_llm_foundrys_512_gpus():
    fsdp2 = Layout(zero_stage=3)  # FSDP2-style, the default implementation
    assert planner.validated_scale(fsdp2, 8) is None
    assert planner.validated_scale(fsdp2, 512) is None  # a run used exactly this many
    beyond = planner.validated_scale(fsdp2, 513)
    assert beyond["kind"] == "FSDP2-style ZeRO-3" and beyond["largest"] == 512
    lo, hi = beyond["errors"]  # MPT-70b and MPT-7b on 512 H100s, one on either side
    assert -planner.TOLERANCE <= lo < 0 < hi <= planner.TOLERANCE


def test_each_kind_has_its_own_largest_run():
    megatron = Layout(tp=8, pp=16)
    assert planner.validated_scale(megatron, 16384) is None  # Llama 3 405B
    assert planner.validated_scale(megatron, 32768)["largest"] == 16384
    deepspeed = Layout(zero_stage=3, fsdp_impl="deepspeed2021")
    assert planner.validated_scale(deepspeed, 2240) is None  # Narayanan et al., Table 2
    assert planner.validated_scale(deepspeed, 4096)["largest"] == 2240


def test_plan_says_when_its_pick_extrapolates():
    big = planner.plan("175B", 1024, "A100-80GB")
    zero3 = [c for c in big.ranked if c.zero_stage == 3]
    assert zero3 and all("extrapolates" in c.reasons[-1] for c in zero3)
    assert all("extrapolates" not in " ".join(c.reasons) for c in big.ranked
               if c.zero_stage < 3)
    small = planner.plan("13B", 8, "A100-80GB")
    assert all("extrapolates" not in " ".join(c.reasons) for c in small.ranked)


def test_a_bad_gpu_count_is_a_value_error_naming_it():
    import pytest
    with pytest.raises(ValueError, match="n_gpus"):
        planner.validated_scale(Layout(zero_stage=3), 0)


def test_every_kind_has_its_words_in_notebook_09():
    # 09's speed answer names the kind through its own catalogue, keyed by these names
    from lessons.l09_the_whole_answer.text import WALK
    from parlab.planner.validate import _largest_runs
    for kind in _largest_runs():
        assert set(WALK[f"kind.{kind}"]) == {"en", "zh"}, kind

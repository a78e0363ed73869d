"""parlab.cost.precision's training dtypes: bytes per element with their block scales (OCP
MX v1.0 for MXFP8, NVIDIA's NVFP4), and activation_memory with GEMM inputs kept quantized."""

import pytest

from parlab import cost


def test_bytes_per_element_include_the_scales():
    assert cost.bytes_per_element("bf16") == cost.bytes_per_element("fp16") == 2
    assert cost.bytes_per_element("fp8") == 1
    assert cost.bytes_per_element("mxfp8") == 1 + 1 / 32       # one E8M0 byte per 32 values
    assert cost.bytes_per_element("nvfp4") == 0.5 + 1 / 16     # one E4M3 byte per 16 values
    # the per-tensor FP32 scale, once per tensor
    assert cost.bytes_per_element("nvfp4", 1024) == 0.5 + 1 / 16 + 4 / 1024
    assert cost.bytes_per_element("fp8", 4) == 2
    d = cost.TRAINING_DTYPES
    assert (d["mxfp8"].block, d["mxfp8"].scale) == (32, "e8m0")
    assert (d["nvfp4"].block, d["nvfp4"].scale, d["nvfp4"].tensor_scale_bits) == (16, "e4m3", 32)
    assert set(cost.LOW_PRECISION) < set(d)
    with pytest.raises(ValueError, match="dtype="):
        cost.bytes_per_element("fp4")
    with pytest.raises(ValueError, match="n_elements="):
        cost.bytes_per_element("fp8", 0)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("sp", [False, True])
def test_quantized_gemm_inputs_shrink_only_what_they_are(recompute, sp):
    shape = cost.LayerShape(4096, 32, 8, None, 14336, "swiglu", biases=False, dropout=False, rope=True)
    kw = dict(seq_len=4096, micro_batch=1, layer=shape, attention="fused", tp=4,
              sequence_parallel=sp, recompute=recompute)
    base = cost.activation_memory(**kw)
    assert cost.activation_memory(**kw, gemm_input_bytes=2) == pytest.approx(base)
    fp8 = cost.activation_memory(**kw, gemm_input_bytes=1)
    if recompute == "full":  # only the layer's input is kept: not a GEMM's saved input
        assert fp8 == pytest.approx(base)
        return
    assert fp8 < base
    # exactly half of the GEMM inputs' bytes: (qkv + fc1 inputs, unless recomputed) + the
    # projection's and down's inputs (down's unless recomputed), per token
    h, q, f, t = 4096, 4096, 14336, 4
    sel = recompute == "selective"
    gemm = (0 if sel else 4 * h / (t if sp else 1)) + (2 * q + (0 if sel else 2 * f)) / t
    assert base - fp8 == pytest.approx(4096 * gemm / 2)
    with pytest.raises(ValueError, match="gemm_input_bytes="):
        cost.activation_memory(**kw, gemm_input_bytes=0)

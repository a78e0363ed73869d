"""Where the numbers of notebook 01's prose come from (see lessons.common.prose).

Computed entries call ``parlab.cost`` with the inputs the notebook's code cells use (the
lab's GPT counted by ``cost.layer_params`` / ``cost.embedding_params``, as
``GPT(config).num_params()`` counts it: tests/lessons/l01_data_parallel/test_prose.py holds
the two equal), so a change of the code or of a formula shows up here as a disagreement.
No torch: the check stays fast.
"""
from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from parlab import cost
from parlab.config import GPTConfig
from parlab.hardware_presets import GPU_PRESETS

GB = 1e9
LAB = GPTConfig()  # experiments.TIMING_CONFIG: sections 2, 4 and the ZeRO speed table
COMPRESSION = GPTConfig(n_layers=2, d_model=32, n_heads=4, seq_len=32)  # experiments.COMPRESSION_CONFIG
ZCFG = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)  # section 6's zcfg
M7, M70 = (cost.MODEL_PRESETS[k] for k in ("7B", "70B"))
A100 = GPU_PRESETS["A100-SXM4-80GB"]


def unit_bytes(cfg: GPTConfig, nbytes: int = 4) -> tuple[list[int], int]:
    """(each block's bytes, the root unit's: embeddings, final norm, untied head) of the
    lab's GPT, as experiments_zero.unit_bytes measures them on the model."""
    shape = cost.LayerShape(cfg.d_model, cfg.n_heads, d_ff=cfg.d_ff)
    block = cost.layer_params(shape)["total"] * nbytes
    root = (cost.embedding_params(cfg.vocab_size, cfg.d_model, cfg.seq_len, tied=False)
            + 2 * cfg.d_model) * nbytes
    return [block] * cfg.n_layers, root


def n_params(cfg: GPTConfig) -> int:
    blocks, root = unit_bytes(cfg, 1)
    return sum(blocks) + root


def _zeropp(name: str, key: str = "total") -> float:
    """ZeRO-3 / ZeRO++ cross-node bytes in units of M (the model in fp16)."""
    return cost.zeropp_comm_volume(1)[name][key] / 2


def _fp32_share_at_2_ranks(payload_bytes_per_value: float) -> float:
    """Bytes of an all-gather of compressed payloads at 2 ranks over the fp32 gradient's."""
    n = 10 ** 6
    return cost.collective_bytes("all_gather", 2 * n * payload_bytes_per_value, 2) / (4 * n)


NUMBERS = [
    # 0 · objectives
    given("60 min", "reading time"), given("30 min", "time for the exercises"),
    # 2 · buckets: the lab's default model
    computed("Two ranks train the default lab model", lambda: LAB.d_model),
    computed("Two ranks train the default lab model", lambda: n_params(LAB) / 1e6, "{:.1f} M"),
    computed("Two ranks train the default lab model", lambda: 4 * n_params(LAB) / 2 ** 20, "{:.1f} MiB"),
    computed("Two ranks train the default lab model", lambda: LAB.seq_len, "{}"),
    computed("Read this honestly", lambda: 4 * n_params(LAB) / 2 ** 20, "{:.1f} MiB"),
    # 3 · accumulation, 4 · throughput
    given("16", "the accumulation check's global batch", near="as one micro-batch of 8 per rank"),
    given("4×", "4 micro-batches per step", near="each byte serves"),
    computed("Throughput at 1, 2 and 4 ranks", lambda: LAB.seq_len),
    given("256 KiB", "the throughput run's bucket size", near="Throughput at 1, 2 and 4 ranks"),
    given("12", "steps of the throughput run", near="median of 12 steps"),
    # 5 · compression
    computed("for the 31 k-parameter model", lambda: n_params(COMPRESSION) / 1e3, "{:.0f} k"),
    given("100×", "an example compression ratio", near="loses its edge"),
    computed("loses its edge", lambda: next(
        w for w in range(2, 10 ** 4) if cost.collective_bytes("all_gather", w / 100, w)
        >= cost.collective_bytes("all_reduce", 1, w) - 1e-12)),
    given("16", "the convergence runs' global batch", near="One run per exchange"),
    given("60", "steps of the convergence runs", near="One run per exchange"),
    given("60", "steps of the convergence runs", near="learns far more slowly within 60 steps"),
    computed("learns far more slowly", lambda: _fp32_share_at_2_ranks(8 * 0.01), "{:.0%}"),  # top-1%: 8 B per kept value
    computed("learns far more slowly", lambda: _fp32_share_at_2_ranks(1 / 8), "{:.0%}"),  # sign: 1 bit per value
    given("100 M", "the step-time example's model", near="When does it pay off"),
    given("0.1 s", "the step-time example's compute", near="When does it pay off"),
    given("5 µs", "the step-time example's latency α", near="When does it pay off"),
    given("1 GB/s", "the slowest link of the step-time table", near="On a slow link"),
    given("10", "10 GbE, the link's name", near="On a slow link"),
    computed("On a slow link", lambda: cost.collective_time("all_reduce", 4 * 10 ** 8, 8, 5e-6, 1e9),
             "{:.1f} s"),
    cited("10", "interview answer", near="A claim to judge"),
    # 6 · ZeRO
    cited("2 bytes", "Rajbhandari", near="stop replicating the model states"),
    cited("12", "Rajbhandari", near="stop replicating the model states"),
    shared("bytes_per_param_adam", "stop replicating the model states", "{:.0f} bytes"),
    shared("bytes_per_param_adam", "stop replicating the model states", "{:.0f}"),
    given("25 MiB", "ShardedOptimizer's default bucket, DDP's bucket_cap_mb", near="25 MiB"),
    computed("The lab model trains in fp32", lambda: cost.zero_memory(
        1, 1, 0, param_bytes=4, grad_bytes=4, optimizer_bytes=8)["total"], "{:.0f} bytes"),
    given("16 KiB", "the small buckets of the ZeRO-2 timeline", near="16 KiB buckets"),
    computed("Ours vs torch: speed", lambda: LAB.d_model),
    shared("bytes_per_param_adam", "Does it fit? The memory calculator", "{:.0f} bytes"),
    cited("16", "Korthikanti", near="Does it fit? The memory calculator"),
    computed("Does it fit? The memory calculator", lambda: cost.activation_memory(
        M7.seq_len, 1, M7.d_model, M7.n_heads, M7.n_layers, layer=M7.layer) / GB, "{:.1f} GB"),
    computed("Does it fit? The memory calculator", lambda: cost.activation_memory(
        M7.seq_len, 1, M7.d_model, M7.n_heads, M7.n_layers) / GB, "{:.1f} GB"),
    shared("7b_params_billion", "Does it fit? The memory calculator", "{:.2f}"),
    given("64", "the calculator's opening cluster: 64 H100s", near="It opens on Llama 2 70B"),
    # ZeRO++ and ZeRO-Offload
    computed("**ZeRO++**", lambda: _zeropp("zero3"), "{:g}M"),
    computed("**ZeRO++**", lambda: _zeropp("zeropp", "forward_ag"), "{:g}M"),
    computed("**ZeRO++**", lambda: _zeropp("zeropp", "grad_reduce"), "{:g}M"),
    computed("**ZeRO++**", lambda: _zeropp("zeropp"), "{:g}M"),
    computed("**ZeRO++**", lambda: _zeropp("zero3") / _zeropp("zeropp"), "{:.0f}×"),
    computed("**ZeRO++**", lambda: cost.zero_offload_traffic(1)["pcie_bytes_per_step"], "{:.0f} bytes"),
    # the HSDP exercise's hint
    given("2 bytes", "bf16 weights and gradients", near="Hint 2"),
    computed("Hint 2", lambda: M70.n_params / 1e9, "{:.1f} B"),
    # 7 · interview corner
    cited("3.5×", "interview answer", near="Claims (from a widely shared interview answer)"),
    given("1024", "the largest ring of the question", near="DP communication overhead grows linearly"),
    shared("7b_fp16_weights_gb", "DP communication overhead grows linearly", "{:.1f} GB"),
    shared("ib_hdr_gb_s", "DP communication overhead grows linearly", "{:.0f} GB/s"),
    cited("3.5×", "interview answer", near="4 cards give ~3.5× speedup"),
    computed("4 cards give ~3.5× speedup", lambda: A100.peak_tflops["bf16"], "{:.0f} TFLOP/s"),
    given("40 %", "the MFU assumed for the A100s", near="4 cards give ~3.5× speedup"),
    given("10", "10 GbE, the link's name", near="4 cards give ~3.5× speedup"),
    given("4×", "the question's four GPUs", near="A 7B model on 4 × A100-80GB"),
    cited("14 GB", "interview answer", near="A 7B model on 4 × A100-80GB"),
    cited("20 GB", "interview answer", near="A 7B model on 4 × A100-80GB"),
    computed("A 7B model on 4 × A100-80GB", lambda: A100.memory_gb, "{:.0f} GB"),
    computed("A 7B model on 4 × A100-80GB", lambda: M7.n_layers),
    computed("A 7B model on 4 × A100-80GB", lambda: M7.d_model),
    given("30", "a 30-second answer", near="The 7B answer in 30 seconds"),
    given("30", "a 30-second answer", near="explain data parallelism"),
    # 8 · your turn
    given("48", "the ZeRO-1 exercise's flat model", near="ZeRO-1's step"),
    given("0.9", "the exercise's momentum", near="ZeRO-1's step"),
]

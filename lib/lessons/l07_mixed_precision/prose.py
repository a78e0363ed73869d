"""Where the numbers of notebook 07's prose come from (see lessons.common.prose)."""
import math

import torch

from parlab import cost
from parlab.hardware_presets import GPU_PRESETS
from lessons.common.prose import cited, computed, given, shared  # noqa: F401
from .models import MID

FP16 = torch.finfo(torch.float16)
A100_80GB = GPU_PRESETS["A100-SXM4-80GB"].memory_gb  # the interview's card
BF16_MIXED = cost.training_bytes_per_param("bf16_mixed")

NUMBERS = [
    # objectives
    given("16", "the bit width of bf16/fp16 (and 8 of fp8)", near="Training in 16 or 8 bits"),
    shared("bytes_per_param_adam", "Learning objectives", "{:.0f} bytes"),
    given("45", "reading time, lower end (minutes)", near="Expected time"),
    given("60", "reading time, upper end (minutes)", near="Expected time"),
    # §1 the formats
    given("1.0", "the value whose gap to the next number defines machine epsilon",
          near="machine epsilon (the gap above 1.0)"),
    computed("fp16 has 5 and", lambda: cost.mantissa_bits("fp16"), "{}"),
    cited("448", "Micikevicius et al. 2022"),  # FP8 formats, Table 1: E4M3 max
    cited("57344", "Micikevicius et al. 2022"),  # Table 1: E5M2 max
    # §2 master weights
    given("1.0", "a LayerNorm gain's initial value", near="LayerNorm gain of 1.0"),
    computed("LayerNorm gain of 1.0", lambda: cost.vanishing_update(1.0, "bf16", "up"), "{:.4f}"),
    given("0.001", "the learning rate of §2's runs (an Adam step is about lr)", near="about lr = 0.001"),
    given("30", "training steps of §2's runs", near="The GPT trained 30 steps"),
    given("10", "the share the pinned cell tests against (1 in 10)", near="more than 1 in 10"),
    computed("The master copy costs", lambda: BF16_MIXED["master"], "{:.0f} bytes"),
    # §3 loss scaling
    computed("fp16's smallest subnormal is", lambda: -math.log2(cost.ulp(0.0, "fp16")), "{:.0f}"),
    computed("its normals start at", lambda: -math.log2(FP16.smallest_normal), "{:.0f}"),
    # §4 autocast
    given("16", "16-bit formats", near="overflow in 16 bits"),
    # §5 communication
    computed("fp32 accumulation leaves one rounding", lambda: cost.unit_roundoff("bf16"), "{:.4f}"),
    given("1024", "the largest world replayed in §5", near="at N = 1024 the"),
    # §6 FP8
    cited("128", "DeepSeek-V3"),  # §3.3.2: 1x128 activation tiles, 128x128 weight blocks
    computed("Measured on a wider GPT", lambda: MID.d_model, "{}"),
    # §7 bytes per parameter
    shared("bytes_per_param_adam", "byte by byte", "{:.0f} bytes"),
    cited("12", "Rajbhandari"),  # ZeRO §3.1: K = 12
    shared("bytes_per_param_adam", "byte by byte", "{:.0f}"),
    shared("bytes_per_param_adam", "does **not** save model-state memory", "{:.0f} B/param"),
    shared("7b_params_billion", "The lab's 7B is", "{:.2f}"),
    computed("fits one 80 GB card", lambda: A100_80GB, "{} GB"),
    shared("7b_fp16_weights_gb", "counts the\nweights only", "{:.1f} GB"),
    shared("7b_train_states_gb", "its training states are", "{:.1f} GB"),
    # §8, §9
    shared("bytes_per_param_adam", "Where does", "{:.0f} bytes"),
    shared("bytes_per_param_adam", "“每个参数", "{:.0f}"),  # the same question in Chinese (16 字节)
    given("1,024", "the world size of interview question (d)", near="Is a bf16 all-reduce safe"),
    given("1.0", "Exercise 3's weight", near="**3.** A bf16 weight equals 1.0"),
    given("1024", "Exercise 4's world size", near="**4.**"),
    given("10%", "Exercise 6's error level to find N for", near="**6.**"),
]

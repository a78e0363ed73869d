"""The appendix's figures (spoilers for §2–5) as a function of ``facts()``; the notebook
shows them by naming them (``interview.show("numbers", f=f)``), closed until the learner
clicks (lessons.common.interview)."""

from __future__ import annotations

from lessons.common.interview import Answer, Corner


def _numbers(f) -> Answer:
    b, tp, bl = f["bubble"], f["tp"], f["7b_best_layout"]
    return Answer("The figures the answers quote", [
        f"ring: {f['ring'][2]:.2f}x / {f['ring'][1024]:.3f}x the gradient per GPU at 2 / 1024 GPUs, "
        f"{f['ring_steps'][1024]} steps at 1024",
        f"7B on 4 x 80 GB, 1 x 2048 tokens per GPU, no / full recompute: DDP {f['7b_ddp_none']['total'] / 1e9:.1f} / "
        f"{f['7b_ddp']['total'] / 1e9:.1f} GB, ZeRO-1 {f['7b_zero1']['total'] / 1e9:.1f} / {f['7b_zero1_full']['total'] / 1e9:.1f} GB, "
        f"ZeRO-3 (full) {f['7b_zero3_full']['total'] / 1e9:.1f} GB per GPU (materialized attention)",
        f"7B planner best ({f['7b_best']}): {bl['total'] / 1e9:.1f} GB with {bl['attention']} attention, "
        f"{bl['materialized'] / 1e9:.1f} GB materialized; activations per sequence {bl['act_fused'] / 1e9:.1f} / "
        f"{bl['act_materialized'] / 1e9:.1f} GB",
        f"TP t=8, GPT-3 layer: message {tp['message_mib']:.0f} MiB, {tp['collectives']} all-reduces, "
        f"{tp['step_mib']:.0f} MiB per GPU per layer per step (SP {tp['sp_step_mib']:.0f})",
        f"bubble P=4 M=8: {b['fraction']:.1%} of the step, {b['ratio']:.1%} of ideal; v=2 {b['interleaved_v2']:.1%}; "
        f"M=4P at P=4 {b['at_4p'][4]:.1%}",
        f"Mixtral top-{f['capacity']['top_k']}: {f['capacity']['slots']} slots per expert for {f['capacity']['tokens']} tokens, "
        f"{f['capacity']['experts']} experts, cf {f['capacity']['cf']}",
        f"GPT-3 8x64x64: {f['gpt3_seed']['product']} GPUs, {f['gpt3_seed']['layers_per_stage']} layers per stage; "
        f"1T at 52% HFU = {f['mfu_1t']:.0%} MFU",
        f"Llama 3: {f['llama3']['per_day']:.2f} interruptions a day; C = 2.4 s: tau* {f['llama3_fast']['young_s']:.0f} s, "
        f"goodput {f['llama3_fast']['goodput']:.1%}"])


corner = Corner({"numbers": _numbers})
show = corner.show

"""The answers of §6's interview corner (with its 30-second answer), of §2's ZeRO-2 question
and the appendix's numbers, as functions of what the notebook computed; the notebook shows each
by naming it (``interview.show("a", n=n, seed=seed)``), closed until the learner clicks
(lessons.common.interview). The words are ``text.INTERVIEW``'s, in English and Chinese: each
function here computes the numbers (and the lists a line holds) and renders them in the
session's language."""

from __future__ import annotations

from parlab import cost, hardware, planner

from lessons.common.i18n import t
from lessons.common.interview import Corner, said

from .text import INTERVIEW, TEXT


def _join(items, sep: str = "sep.comma") -> str:
    return t(TEXT, sep).join(items)


def _key(model: str, gpus: int) -> str:
    """The key ``experiments.interview()`` files a planned cluster under."""
    return f"{model} on {gpus} A100"


def _setup(key: str, short: bool = False) -> str:
    """A key of ``experiments.interview()`` (``_key("175B", 1024)``) in the session's language."""
    parts = key.split()
    if len(parts) != 4 or parts[1] != "on":
        return key
    model, _, gpus, gpu = parts
    return (t(TEXT, "setup.short", model=model, n=gpus) if short
            else t(TEXT, "setup", model=model, n=gpus, gpu=gpu))


def _a(n, seed):
    e, e2 = seed["estimate"], seed["estimate_at_that_batch"]
    one_t = dict(model=cost.LayerShape(25600, 160), n_layers=128, seq_len=2048, vocab_size=51200,
                 count="megatron")  # Table 1's 1T row
    mfu_1t = cost.mfu_from_hfu(0.52, cost.flops_per_token(**one_t, recompute="none"),
                               cost.flops_per_token(**one_t, recompute="full"))
    batch10 = seed["global_batch_for_10pct_bubble"]
    table2 = _join(t(INTERVIEW, "a.row", gpus=g, paper=v["paper"], predicted=v["predicted"])
                   for g, v in n["a"]["table2"].items())
    return said(INTERVIEW, "a", product=seed["product"], layers_per_stage=seed["layers_per_stage"],
                balanced_ceiling=seed["balanced_ceiling"], claimed=seed["claimed_tflops_at_52pct"],
                n_micro=e.n_micro_batches, bubble=e.bubble_fraction, tflops=e.tflops_per_gpu,
                mfu=e.mfu, m10=seed["micro_batches_for_10pct_bubble"], batch10=batch10,
                tokens10=batch10 * 2048 / 1e6, times10=batch10 / 1536,
                tflops10=e2.tflops_per_gpu, table2=table2, mfu_1t=mfu_1t)


def _b(n):
    pl, z = n["b"]["placement"], n["b"]["zero3"]
    t8, t16, oc = pl["tp=8 pp=12"], pl["tp=16 pp=6"], n["b"]["one_card"]
    cards = hardware.NODE_PRESETS["DGX-A100"]
    big = _key("175B", 1024)
    rows = _join((t(INTERVIEW, "b.row", layout=k, tflops=x.tflops_per_gpu,
                    tp_comm=x.step_time.tp_comm / x.step_time.total, bubble=x.bubble_fraction)
                  for k, x in pl.items()), "sep.semi")
    best = _join((t(INTERVIEW, "b.best", setup=_setup(k), label=v)
                  for k, v in n["b"]["best"].items() if k != big), "sep.semi")
    z3, ds, f = z["best"], z["deepspeed"], z["fsdp"]
    fsdp_rows = _join(t(INTERVIEW, "b.fsdp_row", name=r["name"], error=r["error"])
                      for r in f["rows"])
    return said(INTERVIEW, "b", gpus_per_node=cards.gpus_per_node, nics=cards.nics_per_node,
                rows=rows, loss_16=1 - t16.tflops_per_gpu / t8.tflops_per_gpu,
                loss_one_card=1 - oc.tflops_per_gpu / t8.tflops_per_gpu, best=best,
                setup_175=_setup(big), batch=z3.estimate.global_batch, best_175=n["b"]["best"][big],
                label=z3.label, step=z3.step_time, rank=z["rank"], of=z["of"],
                low=z["band"][0], high=z["band"][1], ds_step=ds.step_time.total,
                ds_low=z["deepspeed_band"][0], ds_high=z["deepspeed_band"][1],
                ds_ranked=z["deepspeed_ranked_s"], ds_rank=z["deepspeed_rank"],
                fsdp_gpus=f["gpus"], fsdp_rows=fsdp_rows, n_gpus=z3.estimate.n_gpus)


def _c(n):
    o, th = n["c"]["order"], n["c"]["thirteen"]
    rows = _join((t(INTERVIEW, "c.row", setup=_setup(k), label=v["label"], rank=v["rank"],
                    of=v["of"], slower=v["slower"]) for k, v in o.items()), "sep.semi")
    return said(INTERVIEW, "c", rows=rows, slower_175=o[_key("175B", 1024)]["slower"],
                slower_70=o[_key("70B", 64)]["slower"], slower_13=o[_key("13B", 16)]["slower"],
                rank=th["rank"], of=th["of"], label=th["label"], slower=th["slower"],
                best=n["b"]["best"][_key("13B", 8)])


def _d(n):
    d = n["d"]
    fit = {p: x for p, x in d.items() if x.fits}
    x0 = next(iter(d.values()))
    bound = x0.n_gpus * x0.micro_batch / (x0.tp * x0.global_batch)  # (p-1)/m as p grows, d = n/(t p)
    tf = [x.tflops_per_gpu for x in fit.values()]
    rows = _join((t(INTERVIEW, "d.row", p=p, gb=x.memory_per_gpu.total / 1e9,
                    fits=t(INTERVIEW, "d.fits" if x.fits else "d.no_fit"), m=x.n_micro_batches,
                    bubble=x.bubble_fraction, tflops=x.tflops_per_gpu) for p, x in d.items()),
                 "sep.semi")
    return said(INTERVIEW, "d", rows=rows, bound=bound, smallest=min(fit),
                spread=max(tf) / min(tf) - 1)


def _numbers(n, seed):
    b = n["b"]
    rows_a = _join(t(INTERVIEW, "numbers.row_a", gpus=g, paper=v["paper"], predicted=v["predicted"])
                   for g, v in n["a"]["table2"].items())
    rows_b = _join(t(INTERVIEW, "numbers.row_b", layout=k, tflops=x.tflops_per_gpu)
                   for k, x in b["placement"].items())
    rows_c = _join(t(INTERVIEW, "numbers.row_c", setup=_setup(k, short=True), rank=v["rank"],
                     of=v["of"]) for k, v in n["c"]["order"].items())
    rows_d = _join(t(INTERVIEW, "numbers.row_d", p=p, bubble=x.bubble_fraction,
                     fits=t(INTERVIEW, "numbers.fits" if x.fits else "numbers.no_fit"))
                   for p, x in n["d"].items())
    return said(INTERVIEW, "numbers", product=seed["product"],
                layers_per_stage=seed["layers_per_stage"], claimed=seed["claimed_tflops_at_52pct"],
                bubble=seed["estimate"].bubble_fraction,
                batch10=seed["global_batch_for_10pct_bubble"], rows_a=rows_a, rows_b=rows_b,
                tflops=b["one_card"].tflops_per_gpu, low=b["zero3"]["band"][0],
                high=b["zero3"]["band"][1], ds_low=b["zero3"]["deepspeed_band"][0],
                ds_high=b["zero3"]["deepspeed_band"][1], best=b["best"][_key("175B", 1024)],
                rows_c=rows_c, rows_d=rows_d)


def _zero2():
    """§2's fold-out: which groups the squared norm sums over under ZeRO-2."""
    return said(INTERVIEW, "zero2")


def _thirty():
    """The corner's 30-second answer: GPT-3's layers (Brown et al.'s shape, the planner's
    preset) and the A100's dense bf16 peak (the hardware preset)."""
    a100 = hardware.GPU_PRESETS["A100-SXM4-80GB"]
    return said(INTERVIEW, "thirty", peak=a100.peak_tflops["bf16"],
                n_layers=planner.MODELS["175B"].n_layers)


corner = Corner({"a": _a, "b": _b, "c": _c, "d": _d, "numbers": _numbers, "zero2": _zero2,
                 "thirty": _thirty})
show = corner.show

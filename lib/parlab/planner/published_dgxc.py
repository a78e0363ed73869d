"""NVIDIA's DGX Cloud Benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking): weak-scaling
tables of step times, the work per GPU fixed as the GPUs and the batch double, on H100 and
GB200, from four releases -- 24.11.1 (NeMo 24.09), 25.02 (NeMo 24.12), 25.04.02 (NeMo
25.02.01) and 25.05.05 (NeMo 25.04) -- and one strong-scaling table (the batch fixed). Later
releases print layouts only. Each table's layout, recomputation, TP overlap, tokenizer and
loss come from the recipe at the same tag (the NeMo-Framework-Launcher configs in the
repository up to 25.02, NeMo 2.0's performance scripts at the NeMo commit each later tag's
setup.sh checks out).

Which rows enter the score was fixed before any was predicted, release by release: every
dense pre-training table that prints numbers not printed before (Llama 3.1 8B/70B/405B,
Nemotron-4 15B/340B, GPT-3 175B; BF16 and FP8), at its smallest and its largest scale, less
every run whose configuration (model, GPU, GPUs, batch, TP/PP/CP/VP, precision) a row already
in the score holds -- NeMo's or Megatron-Bridge's tables (``published_nvidia``) or an
earlier release here -- so that no configuration counts twice. ``dgxc_scaling`` keeps every
scale of every table for the trend (``validate.weak_scaling`` predicts it). Not taken:
Grok-1 (an MoE on a "dev" container, its layers cut to fit), the Hugging Face trainers'
tables (samples/s, no layout), MaxText and PaxML (JAX).
"""

from __future__ import annotations

from dataclasses import replace

from .presets import MODELS, gpt, llama
from .published_nvidia import NVIDIA_ROWS, _L405, _nemotron, _nvidia_row

# release: (short name, commit, container, where the knobs come from, the rows' group)
_LATER = "DGX Cloud 25.02-25.05 H100/GB200"
_RELEASES = {
    "24.11.1": ("24.11", "35a9aec", "nemo:24.09", "the same commit's {}",
                "DGX Cloud 24.11.1 H100"),
    "25.02": ("25.02", "8f5cbb3", "nemo:24.12", "the same commit's {}", _LATER),
    "25.04.02": ("25.04", "0efdb23", "nemo:25.02.01", "{} and NVIDIA/NeMo scripts/performance "
                 "at d2b2155 (the tag's setup.sh)", _LATER),
    "25.05.05": ("25.05", "c5c765f", "nemo:25.04.01 (Llama) and 25.04.00 (Nemotron)",
                 "{} and NVIDIA/NeMo scripts/performance at 6f2c6fd (Llama) and b4148d2 "
                 "(Nemotron), the tag's setup.sh", _LATER),
}
_SOURCE = ("NVIDIA/dgxc-benchmarking at {} (release {}, container nvcr.io/nvidia/{}, DGX-{}), "
           "{}: 'Training step time (seconds per step)'; layout, recomputation, TP overlap and "
           "the loss from {}")
_DGXC_405B = llama("llama3.1-405B-gpt2-vocab", 126, 16384, 128, 8, 53248, 8192, 50257,
                   "Llama 3.1 405B (Dubey et al. 2024, Table 3) as llama3.1/llama3.1_405b.yaml "
                   "at 35a9aec and 8f5cbb3 runs it: mock data through the GPT-2 BPE tokenizer "
                   "(50,257 tokens)")
_GPUS = {"H100": "H100-SXM5-80GB", "GB200": "GB200"}
# the rows beyond 15%, each with what the tables say beside it (written after the prediction)
_GB200_340B = ("NeMo 25.04's Nemotron-4 340B on GB200 is the one table here the planner reads "
               "optimistically at every scale (+11% to +21%), where its H100 rows of 25.04.02 "
               "are within 6%: the same release ran the H100 layout 6% slower than 25.04.02 "
               "(4.606 s against 4.36 s a step, 3.107 against 2.93), NeMo's own 25.04 page ran "
               "this GB200 layout 7% faster in FP8 with current scaling (737 tokens/s/GPU "
               "against 690.5 here, delayed scaling), and the weak-scaling rows (8 micro-batches "
               "through 12 chunks of 2 layers) are 3-7 points more optimistic than the "
               "strong-scaling ones (128 micro-batches); Nemotron-4 15B is the most "
               "optimistic model of NeMo's Blackwell tables")
_MISSES = {f"DGXC 25.05 Nemotron-4 340B {n} GB200 {d}": _GB200_340B
           for n, d in (("128", "BF16"), ("512", "BF16"), ("512", "FP8"),
                        ("128", "BF16 strong (batch 512)"), ("512", "BF16 strong (batch 512)"))}


def _label(model) -> str:
    """A table's name for its model (the zoo's name for one no DGX Cloud table runs)."""
    return {"llama3-8B": "Llama 3.1 8B", "llama3-70B": "Llama 3.1 70B",
            _DGXC_405B.name: "Llama 3.1 405B", _L405.name: "Llama 3.1 405B",
            "Nemotron4Config15B": "Nemotron-4 15B", "Nemotron4Config340B": "Nemotron-4 340B",
            "gpt3-175B-nemo-launcher": "GPT-3 175B"}.get(model.name, model.name)


def _weak(gpus: int, batch: int, steps: tuple) -> tuple:
    """A weak-scaling sweep as the tables print it: the GPUs doubling from ``gpus``, the
    batch with them from ``batch``, one step time each -- (GPUs, batch, layers, pp, step)
    with the model's own layers and pipeline."""
    return tuple((gpus * 2 ** i, batch * 2 ** i, None, None, t) for i, t in enumerate(steps))


def _cut(scales, steps) -> tuple:
    """The 405B's sweeps, whose smaller scales cut the model: (GPUs, batch, layers, pp) with
    one step time each."""
    return tuple((*s, t) for s, t in zip(scales, steps))


def _tables():
    """Every table: (release, table, model, config, recomputation, loss kernel, micro-batch,
    gpu, kind ("weak" or "strong"), {dtype: (degrees, scales)}), a scale being (GPUs, batch,
    layers, pp, step seconds)."""
    l8, l70 = MODELS["llama3-8B"], MODELS["llama3-70B"]
    n15 = _nemotron("Nemotron4Config15B", 32, 6144, 48, 8, 24576)
    n340 = _nemotron("Nemotron4Config340B", 96, 18432, 96, 8, 73728)
    g175 = gpt("gpt3-175B-nemo-launcher", 96, 12288, 96, 2048, 50257,
               "NeMo-Framework-Launcher gpt3/175b as nemo_megatron/gpt3_175b_hydra.yaml at "
               "35a9aec and 8f5cbb3 runs it: hidden and attention dropout 0.1")
    c405 = ((32, 126, 7, 1), (96, 126, 21, 3), (192, 252, 42, 3), (576, 252, 126, 9),
            (1152, 504, 126, 9), (2304, 1008, 126, 9))   # the 24.09 and 24.12 recipes' cuts
    p405 = ((32, 64, 8, 1), (64, 64, 30, 4), (128, 128, 62, 4), (512, 256, 126, 8),
            (1024, 512, 126, 8), (2048, 1024, 126, 8))   # NeMo 2.0's "405b-Proxy" and 405B
    yaml = "llama3.1/llama3.1_{}.yaml"
    v8, v70, v405 = dict(cp=2), dict(tp=4, pp=4, cp=2, v=5), dict(tp=8, cp=2, v=7)
    t15, t340, t175 = dict(tp=4), dict(tp=8, pp=8, v=12), dict(tp=4, pp=8, v=12)

    def both(degrees, bf16, fp8):  # one layout for both precisions
        return {"bf16": (degrees, bf16), "fp8": (degrees, fp8)}
    launcher = (  # 24.11.1 and 25.02: the same launcher configs in two containers
        ("24.11.1", (12.91, 13.00, 13.05, 13.08, 13.10), (9.67, 9.73, 9.75, 9.80, 9.82),
         (14.72, 14.73, 14.8, 14.89, 14.92, 14.98), (11.01, 10.93, 11.16, 11.18, 11.28, 11.39),
         (8.85, 8.75, 16.93, 17.20, 17.52, 17.62), (5.80, 5.71, 11.00, 11.24, 11.31, 12.35),
         (2.83, 2.86, 2.86, 2.89, 2.88, 2.92, 2.92, 2.96),
         (2.08, 2.07, 2.09, 2.08, 2.1, 2.12, 2.12, 2.18),
         (8.91, 8.95, 9.09, 9.01, 9.02), (5.92, 5.96, 6.44, 6.72, 6.24), t175),
        ("25.02", (12.78, 12.99, 13.00, 13.00, 13.16), (9.44, 9.47, 9.60, 9.64, 9.73),
         (14.61, 14.70, 14.72, 14.80, 14.86, 14.84), (10.46, 10.52, 10.75, 10.76, 10.83, 10.99),
         (9.00, 8.87, 17.30, 17.50, 17.60, 17.70), (5.75, 5.63, 10.8, 11.00, 11.10, 11.20),
         (2.812, 2.824, 2.845, 2.859, 2.852, 2.875, 2.895, 2.887),
         (2.039, 2.046, 2.048, 2.059, 2.075, 2.12, 2.094, 2.12),
         # the yaml at 8f5cbb3 interleaves 6 chunks (its README's title still says 12)
         (8.309, 8.408, 8.42, 8.453, 8.49), (5.626, 5.725, 5.774, 5.82, 5.96),
         dict(tp=4, pp=8, v=6)))
    for rel, b8, f8, b70, f70, b405, f405, b15, f15, b175, f175, d175 in launcher:
        yield (rel, "llama3.1/README_8b.md", l8, yaml.format("8b"), "none", "megatron-jit", 1,
               "H100", "weak", both(v8, _weak(8, 128, b8), _weak(8, 128, f8)))
        yield (rel, "llama3.1/README_70b.md", l70, yaml.format("70b"), "none", "megatron-jit",
               1, "H100", "weak", both(v70, _weak(64, 128, b70), _weak(64, 128, f70)))
        yield (rel, "llama3.1/README_405b.md", _DGXC_405B, yaml.format("405b")
               + " and configure.sh", "none", "megatron-jit", 1, "H100", "weak",
               both(v405, _cut(c405, b405), _cut(c405, f405)))
        yield (rel, "nemotron/README_15b.md", n15, "nemotron/nemotron4-15b-synth.yaml and "
               "configure.sh", "none", "megatron-jit", 4, "H100", "weak",
               both(t15, _weak(16, 64, b15), _weak(16, 64, f15)))
        if rel == "24.11.1":  # 25.02 reprints 24.11.1's 340B table (the same container)
            yield (rel, "nemotron/README_340b.md", n340, "nemotron/nemotron4-340b-synth.yaml "
                   "and configure.sh", "selective", "megatron-jit", 1, "H100", "weak",
                   both(t340, _weak(128, 32, (4.61, 4.67, 4.7, 4.73, 4.84)),
                        _weak(128, 32, (3.16, 3.21, 3.26, 3.34, 3.49))))
        yield (rel, "nemo_megatron/README_175b.md", g175, "nemo_megatron/gpt3_175b_hydra.yaml "
               "and launch.sh", "none", "megatron", 1, "H100", "weak",
               both(d175, _weak(128, 256, b175), _weak(128, 256, f175)))
    # 25.04.02: NeMo 2.0's performance scripts (mock data, the models' own tokenizers, no
    # recomputation, Megatron-Core's native loss fusion before 2025-04-07's "te")
    readme, nemo = "llama3.1/README.md", "llama3.1/pretrain_llama31.py"
    yield ("25.04.02", readme, l8, nemo, "none", "megatron-jit", 1, "H100", "weak",
           both(v8, _weak(8, 128, (12.27, 12.3, 12.32, 12.33, 12.33)),
                _weak(8, 128, (9.33, 9.36, 9.43, 9.48, 9.54))))
    yield ("25.04.02", readme, l70, nemo, "none", "megatron-jit", 1, "H100", "weak",
           {"bf16": (v70, _weak(64, 128, (14.66, 14.67, 14.68, 14.67, 14.65, 14.66))),
            "fp8": (dict(tp=4, pp=8, v=5), _weak(64, 128, (9.86, 9.95, 10, 10.07, 10.08,
                                                           10.15)))})
    yield ("25.04.02", readme, _L405, nemo, "none", "megatron-jit", 1, "H100", "weak",
           both(dict(tp=8, cp=2, v=8), _cut(p405, (5.4, 10.1, 19.62, 19.78, 19.84, 19.87)),
                _cut(p405, (3.53, 6.32, 12.18, 12.37, 12.42, 12.56))))
    readme, nemo = "nemotron/README.md", "nemotron/launch.sh"
    yield ("25.04.02", readme, n15, nemo, "none", "megatron-jit", 2, "H100", "weak",
           both(dict(tp=2), _weak(16, 64, (2.66, 2.66, 2.67, 2.67, 2.68, 2.71, 2.74, 2.78)),
                _weak(16, 64, (1.98, 1.98, 1.98, 1.99, 2, 2.02, 2.03, 2.09))))
    yield ("25.04.02", readme, n340, nemo, "none", "megatron-jit", 1, "H100", "weak",
           both(t340, _weak(256, 64, (4.36, 4.39, 4.41, 4.43)),
                _weak(256, 64, (2.93, 2.97, 3, 3.05))))
    # 25.05.05: NeMo 25.04's scripts, Transformer Engine's loss kernel; GB200 at last
    readme, nemo = "llama3.1/README.md", "llama3.1/launch.sh"
    d405 = dict(pp=8, cp=2, v=8)
    yield ("25.05.05", readme, _L405, nemo, "none", "triton", 1, "GB200", "weak",
           both(dict(d405, tp=4), _weak(128, 64, (9.347, 9.484, 9.508)),
                _weak(128, 64, (6.131, 6.183, 6.244))))
    yield ("25.05.05", readme, _L405, nemo, "none", "triton", 1, "H100", "weak",
           both(dict(d405, tp=8), _weak(512, 256, (19.810,)), _weak(512, 256, (13.020,))))
    readme, nemo = "nemotron/README.md", "nemotron/launch.sh"
    yield ("25.05.05", readme, n15, nemo, "none", "triton", 2, "H100", "weak",
           both(dict(tp=2), _weak(16, 64, (2.746,)), _weak(16, 64, (1.988,))))
    yield ("25.05.05", readme, n340, nemo, "none", "triton", 1, "H100", "weak",
           both(t340, _weak(256, 64, (4.606,)), _weak(256, 64, (3.107,))))
    g340 = dict(tp=8, pp=4, v=12)  # with CUDA graphs (launch.sh), which the model does not price
    yield ("25.05.05", readme, n340, nemo, "none", "triton", 1, "GB200", "weak",
           both(g340, _weak(128, 32, (2.189, 2.19, 2.229)),
                _weak(128, 32, (1.483, 1.517, 1.549))))

    def strong(steps):  # the batch fixed at 512 as the GPUs double
        return tuple((n, 512, None, None, t) for n, t in zip((128, 256, 512), steps))
    yield ("25.05.05", readme, n340, nemo, "none", "triton", 1, "GB200", "strong",
           both(g340, strong((32.66, 16.58, 8.468)), strong((21.83, 11.21, 5.668))))


def _dgxc_row(release, table, model, config, rc, loss, b, gpu, kind, degrees, dtype, n, B,
              layers, pp, step):
    """One scale of one table as a row: ``layers`` and ``pp`` where a 405B recipe cuts the
    model to fit fewer GPUs (without a pipeline, no interleaving either), the table's own step
    time as the value."""
    full = model.n_layers
    if layers is not None:
        model = replace(model, n_layers=layers)
        degrees = dict(degrees, pp=pp) if pp > 1 else {
            k: v for k, v in degrees.items() if k != "v"}
    tp, cp, pp = (degrees.get(k, 1) for k in ("tp", "cp", "pp"))
    short, commit, container, knobs, group = _RELEASES[release]
    name = (f"DGXC {short} {_label(model)} {n} {gpu} {dtype.upper()}"
            + (f" strong (batch {B})" if kind == "strong" else ""))
    row = _nvidia_row(
        name, group, _SOURCE.format(commit, release, container, gpu, table, knobs.format(config)),
        model, _GPUS[gpu], n, B, dict(degrees, recompute=rc), b, dtype, round(
            B * model.seq_len / (step * n), 1), f"; {step} s a step, batch {B}"
        + (f", {model.n_layers} of {full} layers" if model.n_layers < full else "")
        + f"; DP {n // (tp * pp * cp)}; the distributed optimizer"
        + ("; selective recomputation" if rc == "selective" else "; no recomputation"),
        loss_kernel=loss, known_miss=_MISSES.get(name, ""))
    return {**row, "value": step}  # the table's own figure, not one back from the rounded rate


def published_growth(rows: list) -> tuple:
    """(the index of a sweep's first scale that runs the whole model -- the 405B recipes cut
    its layers below that --, how much longer its largest scale's step is than that one's)."""
    layers = max(r["model"].n_layers for r in rows)
    first = next(i for i, r in enumerate(rows) if r["model"].n_layers == layers)
    return first, rows[-1]["value"] / rows[first]["value"] - 1


def _same_run(row) -> tuple:
    lay = row["layout"]
    return (row["model"].name, row["gpu"], row["n_gpus"], row["global_batch"], lay["dtype"],
            *(lay.get(k, 1) for k in ("tp", "pp", "cp", "v")))


def dgxc_scaling(kind: str | None = "weak") -> list:
    """Every table taken, each scale in order: [{"release", "table", "model" (its label),
    "gpu", "dtype", "kind", "rows"}], the rows as ``published.RUNS`` holds them; ``kind``
    "weak" (the default: the work per GPU fixed), "strong" (the batch fixed) or None (both)."""
    if kind not in ("weak", "strong", None):
        raise ValueError(f"kind={kind!r} must be 'weak', 'strong' or None")
    out = []
    for release, table, model, config, rc, loss, b, gpu, k, by_dtype in _tables():
        if kind not in (None, k):
            continue
        for dtype, (degrees, scales) in by_dtype.items():
            rows = [_dgxc_row(release, table, model, config, rc, loss, b, gpu, k, degrees,
                              dtype, *scale) for scale in scales]
            out.append({"release": release, "table": table, "model": _label(model),
                        "gpu": gpu, "dtype": dtype, "kind": k, "rows": rows})
    return out


def weak_sweeps() -> list:
    """``dgxc_scaling()``'s weak-scaling tables that print more than one scale: the sweeps a
    trend can be read from (six tables print a single scale)."""
    return [t for t in dgxc_scaling() if len(t["rows"]) > 1]


def _dgxc():
    """Each table's smallest and largest scale, in release order, less every run whose
    configuration a scored row already holds (NeMo's and Megatron-Bridge's tables, or an
    earlier release here)."""
    scored = {_same_run(r) for r in NVIDIA_ROWS}
    for t in dgxc_scaling(None):
        for row in t["rows"][:1] + t["rows"][1:][-1:]:  # one row where a table prints one scale
            if _same_run(row) not in scored:
                scored.add(_same_run(row))
                yield row


DGXC_ROWS = tuple(_dgxc())


def release_spread() -> list:
    """How far NVIDIA's tables agree with themselves: every configuration (``_same_run``:
    model, GPU, GPUs, batch, precision, TP/PP/CP/VP) that more than one release prints -- the
    DGX Cloud tables at every scale, NeMo's and Megatron-Bridge's rows --, as [{"model",
    "gpu", "n_gpus", "global_batch", "dtype", "steps" ([(release, seconds a step)], in the
    order the sources are read), "spread" (the slowest step over the fastest, less 1)}],
    widest first. What a release changed (the container, the FP8 recipe's scaling, the
    kernels) the key does not hold: that is what the spread measures."""
    steps: dict = {}
    for t in dgxc_scaling(None):
        for row in t["rows"]:
            steps.setdefault(_same_run(row), []).append((f"DGX Cloud {t['release']}", row))
    for row in NVIDIA_ROWS:
        steps.setdefault(_same_run(row), []).append((" ".join(row["name"].split()[:2]), row))
    out = []
    for runs in steps.values():
        if len({release for release, _ in runs}) < 2:
            continue
        first = runs[0][1]
        values = [row["value"] for _, row in runs]
        out.append({"model": _label(first["model"]), "gpu": first["gpu"],
                    "n_gpus": first["n_gpus"], "global_batch": first["global_batch"],
                    "dtype": first["layout"]["dtype"],
                    "steps": [(release, row["value"]) for release, row in runs],
                    "spread": max(values) / min(values) - 1})
    return sorted(out, key=lambda r: -r["spread"])

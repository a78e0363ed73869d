"""Section "activation_memory": the bytes one transformer layer keeps for backward,
measured by the CUDA caching allocator, against Korthikanti et al.'s formula
(``cost.activation_memory`` of a GPT layer without dropout, MLSys 2023, §4) and the lab's
exact count (``cost.activation_memory(..., layer="lab")``: the formula plus LayerNorm
statistics and the causal mask).

One ``parlab.model.Block`` in bf16 (weights and input, no autocast: Korthikanti counts
16-bit values), d_model 2048, 16 heads, at a few (s, b). Allocator bytes = what
``torch.cuda.memory_allocated`` grew by during the forward, less the layer's output
(not kept by the layer), plus its input (kept by the first LayerNorm, but allocated
before). A warm-up forward and backward come first, so cuBLAS's workspace is already
there. The saved-tensor hooks' count (distinct storages autograd keeps, weights left
out) is measured in the same forward as a cross-check that also works on a CPU.

Attention variants: "math" (the reference's, scores stored: recompute "none"),
"checkpointed" (the same under torch.utils.checkpoint) and "sdpa" (fused kernel), both
compared with recompute "selective"; the fused kernel also keeps its output and a fp32
log-sum-exp per row (b a s x 4 bytes), which the formula does not name."""

from __future__ import annotations

import torch

from .. import cost
from ..memory import ActivationCounter
from ..model import Block, GPTConfig
from .attention import ATTENTION, with_attention
from .common import ERROR, empty_cache, ratio, short, synchronize

D_MODEL = 2048
N_HEADS = 16
QUICK_SHAPES = ((1024, 4), (2048, 2))  # (seq_len, micro_batch)
FULL_SHAPES = ((1024, 8), (2048, 4), (4096, 2))


def _storage_bytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def predicted(seq_len: int, micro_batch: int, d_model: int, n_heads: int, recompute: str,
              bytes_per_value: float = 2) -> dict:
    """The formulas for one layer without dropout (the lab's layer has none): Korthikanti
    et al.'s inventory and the lab's exact count ("korthikanti_dropout": whether the first
    counted dropout's masks, which it does not)."""
    args = (seq_len, micro_batch, d_model, n_heads, 1, recompute)
    gpt = cost.LayerShape(d_model, n_heads, dropout=False)
    kor = cost.activation_memory(*args, bytes_per_value=bytes_per_value, layer=gpt)
    lab = cost.activation_memory(*args, bytes_per_value=bytes_per_value, layer="lab")
    return {"korthikanti_bytes": kor, "korthikanti_dropout": False, "lab_bytes": lab}


def measure_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int, kind: str,
                  device="cuda", dtype=torch.bfloat16) -> dict:
    """One layer's forward with attention ``kind``: allocator bytes (CUDA only, else None)
    and saved-tensor bytes, as the module docstring defines them."""
    device = torch.device(device)
    cfg = GPTConfig(seq_len=seq_len, d_model=d_model, n_heads=n_heads, n_layers=1)
    with torch.device(device):  # built where it runs: no copy of the weights through the CPU
        block = with_attention(Block(cfg), kind).to(dtype)
    x = torch.randn(micro_batch, seq_len, d_model, device=device, dtype=dtype, requires_grad=True)
    block(x).float().sum().backward()  # warm-up: kernels chosen, workspaces allocated
    x.grad = None
    block.zero_grad(set_to_none=True)
    cuda = device.type == "cuda"
    synchronize(device)
    before = torch.cuda.memory_allocated(device) if cuda else None
    counter = ActivationCounter(block.parameters())
    with counter.measure():
        y = block(x)
    synchronize(device)
    allocated = (torch.cuda.memory_allocated(device) - before - _storage_bytes(y)
                 + _storage_bytes(x)) if cuda else None
    del y, block, x
    return {"allocator_bytes": allocated, "saved_bytes": counter.total("forward")}


def section(quick: bool, device="cuda") -> dict:
    rows = []
    for s, b in QUICK_SHAPES if quick else FULL_SHAPES:
        for kind, (_, recompute) in ATTENTION.items():
            row = {"seq_len": s, "micro_batch": b, "d_model": D_MODEL, "n_heads": N_HEADS,
                   "attention": kind, "recompute": recompute}
            row.update(predicted(s, b, D_MODEL, N_HEADS, recompute))
            try:
                row.update(measure_layer(s, b, D_MODEL, N_HEADS, kind, device))
                row["allocator_vs_korthikanti"] = ratio(row["allocator_bytes"], row["korthikanti_bytes"])
                row["allocator_vs_lab"] = ratio(row["allocator_bytes"], row["lab_bytes"])
            except Exception as e:  # noqa: BLE001  (e.g. out of memory on a small GPU)
                row.update(status=ERROR, reason=short(e))
            rows.append(row)
            empty_cache(device)
    return {"dtype": "bf16", "d_model": D_MODEL, "n_heads": N_HEADS, "rows": rows}


def lines(rec: dict) -> list[str]:
    mb = lambda b: "       -" if b is None else f"{b / 1e6:8.1f}"  # noqa: E731
    out = [f"  one layer, d_model={rec['d_model']}, {rec['n_heads']} heads, {rec['dtype']}; MB kept "
           "for backward: allocator, saved tensors, Korthikanti, lab; allocator / Korthikanti (/ lab)"]
    for r in rec["rows"]:
        head = f"  s={r['seq_len']:<5} b={r['micro_batch']:<2} {r['attention']:<12} ({r['recompute']:<9})"
        if r.get("status") == ERROR:
            out.append(f"{head} error: {r['reason']}")
            continue
        x = r["allocator_vs_korthikanti"]
        lab = r["allocator_vs_lab"]
        out.append(f"{head} {mb(r['allocator_bytes'])} {mb(r['saved_bytes'])} "
                   f"{mb(r['korthikanti_bytes'])} {mb(r['lab_bytes'])}   "
                   + ("-" if x is None else f"x{x:.3f}") + ("" if lab is None else f" (lab x{lab:.3f})"))
    return out

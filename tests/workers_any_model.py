"""Rank-side workers for tests/parlab/any_model/test_hf_models.py (ranks import them by
name): models that are not the lab's -- Hugging Face's GPT-2 (tied embeddings, Conv1D
layers) and Llama (grouped-query attention, rotary positions), built from tiny configs
with no download, and a Mixtral-style MoE block written here as a user would -- under
every strategy's parts, each returning what one device is compared with.

Every worker returns {"loss": [global loss per step], "params": {name: full tensor},
"grads": {name: full gradient of the last step}} under the model's own parameter names
(a rank that holds only some parameters returns those), and ``reference`` trains the
same model on one device. ``bug`` plants one classic mistake, restored afterwards (the
ranks are reused by later tests).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from parlab.data import local_batch

VOCAB, SEQ, D, LAYERS, BATCH, STEPS = 64, 16, 32, 2, 4, 3
# eps=1e-6, not torch's 1e-8: GPT-2's key biases get a zero true gradient (softmax
# ignores a shift shared by every key), so theirs is rounding noise (~1e-11) that a sum in
# another order changes; Adam divides it by sqrt(v) + eps, and with eps=1e-8 that noise
# becomes steps of ~1e-5 -- a property of Adam on that parameter, not of any part. lr:
# the parameters' distance from one device grows with it (Mixtral under EP: 8e-6 at 1e-2).
ADAMW = dict(lr=3e-3, weight_decay=0.1, eps=1e-6)


# --- the models ------------------------------------------------------------------------

def _seeded(seed, make):
    with torch.random.fork_rng():  # transformers initialises from the global RNG
        torch.manual_seed(seed)
        return make()


def gpt2(seed: int = 0):
    """GPT-2: wte tied to lm_head, Conv1D layers (weights stored (in, out)). n_inner =
    n_embd makes the MLP's Conv1Ds square, so a transposed weight mistaken for a Linear
    one runs -- as it did in the issue -- and only the comparison can catch it."""
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=D, n_layer=LAYERS, n_head=4,
                     n_inner=D, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _seeded(seed, lambda: GPT2LMHeadModel(cfg))


def llama_config():
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=VOCAB, hidden_size=D, intermediate_size=2 * D,
                       num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=SEQ, attn_implementation="eager")


def llama(seed: int = 0):
    """Llama: 4 query heads sharing 2 KV heads, RoPE, RMSNorm, SwiGLU, untied head."""
    from transformers import LlamaForCausalLM
    return _seeded(seed, lambda: LlamaForCausalLM(llama_config()))


class Expert(nn.Module):
    """A SwiGLU MLP, as Mixtral's experts are (Jiang et al. 2024, §2)."""

    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.w1, self.w3 = nn.Linear(d, d_ff, bias=False), nn.Linear(d, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MixtralStyleMoE(nn.Module):
    """A sparse MoE block as a user writes it (Mixtral's, Jiang et al. 2024, §2.1): the
    top 2 of softmax(gate(x)), those 2 weights renormalised, their experts' outputs
    summed; returns (output, router logits) as Hugging Face's block does."""

    def __init__(self, d: int = D, n_experts: int = 4, top_k: int = 2, d_ff: int = 2 * D):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d, n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, d_ff) for _ in range(n_experts))

    def forward(self, x):
        h = x.reshape(-1, x.size(-1))
        logits = self.gate(h)
        weights, chosen = F.softmax(logits, dim=-1, dtype=torch.float).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            token, k = torch.where(chosen == e)
            out = out.index_add(0, token, expert(h[token]) * weights[token, k, None])
        return out.view_as(x), logits


class MoEModel(nn.Module):
    """Embedding, LAYERS residual blocks of LayerNorm + MixtralStyleMoE, a head."""

    def __init__(self, seed: int = 0):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.embed = nn.Embedding(VOCAB, D)
            self.norms = nn.ModuleList(nn.LayerNorm(D) for _ in range(LAYERS))
            self.moes = nn.ModuleList(MixtralStyleMoE() for _ in range(LAYERS))
            self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, idx):
        h = self.embed(idx)
        for norm, moe in zip(self.norms, self.moes):
            y, _router_logits = moe(norm(h))
            h = h + y
        return self.head(h)


def mixtral(seed: int = 0):
    """Hugging Face's Mixtral: Llama's attention, each MLP a MixtralSparseMoeBlock (a
    ``gate`` and 4 ``experts``, top 2, renormalised) returning (hidden, router logits)."""
    from transformers import MixtralConfig, MixtralForCausalLM
    cfg = MixtralConfig(vocab_size=VOCAB, hidden_size=D, intermediate_size=2 * D,
                        num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=SEQ, num_local_experts=4,
                        num_experts_per_tok=2, attn_implementation="eager")
    return _seeded(seed, lambda: MixtralForCausalLM(cfg))


MODELS = {"gpt2": gpt2, "llama": llama, "moe": MoEModel, "mixtral": mixtral}


# --- data, loss, one device ----------------------------------------------------------

def batch(step: int, rank: int = 0, world: int = 1):
    """This rank's rows of step ``step``'s global batch (the lab's Markov tokens)."""
    return local_batch(step, BATCH, SEQ, VOCAB, rank, world, seed=11)


def loss_of(model, x, y):
    """Mean next-token cross-entropy of ``model``'s logits (an HF output or a tensor)."""
    out = model(x)
    logits = getattr(out, "logits", out)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def reference(name: str, steps: int = STEPS) -> dict:
    """One device: ``MODELS[name]`` (seed 0) trained on the whole batch by its own forward."""
    torch.set_num_threads(1)
    model = MODELS[name]()
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    losses = []
    for step in range(steps):
        loss = loss_of(model, *batch(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"loss": losses, **_named(model.named_parameters())}


def _named(pairs) -> dict:
    pairs = list(pairs)
    return {"params": {n: p.detach().clone() for n, p in pairs},
            "grads": {n: p.grad.detach().clone() for n, p in pairs if p.grad is not None}}


def _global_losses(losses, group=None) -> list:
    """The global batch's loss per step: the mean of the ranks' (equal slices)."""
    t = torch.stack([torch.as_tensor(v).detach() for v in losses])
    dist.all_reduce(t, group=group)
    return (t / dist.get_world_size(group)).tolist()


def _train(model, opt, batch_of, after_backward=None, steps: int = STEPS) -> list:
    losses = []
    for step in range(steps):
        loss = loss_of(model, *batch_of(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # the data-parallel parts finish their gradient sync in here
        if after_backward is not None:
            after_backward()
        opt.step()
        losses.append(loss.detach())
    return losses


# --- DP, ZeRO-1/2/3, HSDP ------------------------------------------------------------

def _no_broadcast(tensors, group=None):
    """Every part's first act skipped: the replicas never agree on their start."""


def data_parallel(name: str, parts: list[str], bug: str | None = None) -> dict:
    """Per part ("naive", "bucketed", "zero1", "zero2", "fsdp", "hsdp": 2 replicas of a
    2-rank shard group): the model seeded by the rank (replicas start different: the
    part must make them agree), trained on this rank's slice of each batch. ``bug``:
    "no_broadcast" (the broadcast every part starts with, skipped)."""
    from parlab.data_parallel import ddp, grad_sync
    from parlab.zero import sharded
    saved = grad_sync.broadcast_tensors
    try:
        if bug == "no_broadcast":
            for module in (grad_sync, ddp, sharded):  # each holds the function by name
                module.broadcast_tensors = _no_broadcast
        return _data_parallel(name, parts)
    finally:
        for module in (grad_sync, ddp, sharded):
            module.broadcast_tensors = saved


def _data_parallel(name: str, parts: list[str]) -> dict:
    from parlab.data_parallel import BucketedDP, NaiveDP
    from parlab.zero import FullyShard, HybridShard, ShardedOptimizer, hsdp_groups
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for part in parts:
        net = MODELS[name](seed=rank)
        names = {id(p): n for n, p in net.named_parameters()}  # before a part moves them
        if part in ("naive", "bucketed"):
            model = (NaiveDP if part == "naive" else BucketedDP)(net)
            sync = model
            opt = torch.optim.AdamW(net.parameters(), **ADAMW)
        elif part in ("zero1", "zero2"):
            model = net
            opt = sync = ShardedOptimizer(net.named_parameters(), torch.optim.AdamW,
                                          stage=int(part[-1]), **ADAMW)
        elif part in ("fsdp", "hsdp"):
            model = FullyShard(net) if part == "fsdp" else HybridShard(net, *hsdp_groups(2))
            sync = model
            opt = torch.optim.AdamW(model.parameters(), **ADAMW)
        else:
            raise ValueError(f"part={part!r}")
        losses = _train(model, opt, lambda s: batch(s, rank, world))
        params, grads = sync.full_tensors(), sync.full_tensors(grads=True)
        out[part] = {"loss": _global_losses(losses),
                     "params": {names[id(p)]: t.detach().cpu().clone() for p, t in params.items()},
                     "grads": {names[id(p)]: t.detach().cpu().clone() for p, t in grads.items()}}
    return out


# --- TP ---------------------------------------------------------------------------------

def tp_plan(name: str) -> dict:
    """GPT-2: its MLPs (Conv1D); Llama: attention (whole heads: 2 query heads and 1 KV
    head per rank -- HF reshapes with -1 heads, so local heads just work) and MLP."""
    from parlab.tensor_parallel import Colwise, Rowwise
    if name == "gpt2":
        return {"transformer.h.*.mlp.c_fc": Colwise(), "transformer.h.*.mlp.c_proj": Rowwise()}
    return {"model.layers.*.self_attn.q_proj": Colwise(),
            "model.layers.*.self_attn.k_proj": Colwise(),
            "model.layers.*.self_attn.v_proj": Colwise(),
            "model.layers.*.self_attn.o_proj": Rowwise(),
            "model.layers.*.mlp.gate_proj": Colwise(), "model.layers.*.mlp.up_proj": Colwise(),
            "model.layers.*.mlp.down_proj": Rowwise()}


def _conv1d_as_linear(module):
    """The issue's bug: any module with a .weight taken for an nn.Linear."""
    return module.weight, module.bias, False


def _no_f(x, group=None):
    """Megatron's f without its backward all-reduce: each rank's input gradient partial."""
    return x


def tensor_parallel(name: str, bug: str | None = None) -> dict:
    """``tp_plan(name)`` over the world; every rank trains the whole batch. ``bug``:
    "conv1d_as_linear" or "no_f". Returns also the names swapped and rank 0's shapes."""
    from parlab.tensor_parallel import apply_tensor_parallel, full_tensors, layers, mappings
    torch.set_num_threads(1)
    saved = layers.linear_layout, mappings.f
    try:
        if bug == "conv1d_as_linear":
            layers.linear_layout = _conv1d_as_linear
        elif bug == "no_f":
            mappings.f = _no_f
        model = MODELS[name]()
        swapped = apply_tensor_parallel(model, tp_plan(name))
        opt = torch.optim.AdamW(model.parameters(), **ADAMW)
        losses = _train(model, opt, batch)
    finally:
        layers.linear_layout, mappings.f = saved
    return {"loss": [v.item() for v in losses], "params": full_tensors(model),
            "grads": full_tensors(model, grads=True), "swapped": swapped,
            "local": {n: tuple(p.shape) for n, p in model.named_parameters()
                      if ".0." in n and ("mlp" in n or "self_attn" in n)}}


# --- EP -------------------------------------------------------------------------------

def description(name: str) -> dict:
    """What the blocks of ``MODELS[name]`` compute, for ``apply_expert_parallel``."""
    if name == "mixtral":
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
        blocks = MixtralSparseMoeBlock
    else:
        blocks = MixtralStyleMoE
    return dict(blocks=blocks, router="gate", experts="experts", top_k=2, renormalize=True,
                output="hidden_and_router_logits")


def _experts_replicated(model):
    """Experts taken for replicated parameters: averaged with other ranks' experts."""
    return []


def _router_as_expert(model):
    """A replicated parameter (the routers) taken for an expert's: never averaged."""
    from parlab.expert_parallel.layers import EPMoE
    return [m.router.weight for m in model.modules() if isinstance(m, EPMoE)]


def expert_parallel(name: str, ep: int, bug: str | None = None) -> dict:
    """``MODELS[name]`` ("moe" or "mixtral") with its MoE blocks expert-parallel over EP
    groups of ``ep`` ranks (x data parallelism over world / ep); each rank trains its
    slice of the batch, gradients synced by ``expert_parallel.sync_grads`` (experts known
    by membership). ``bug``: "experts_replicated" or "router_as_expert". Returns what
    this rank holds, and which experts."""
    from parlab.expert_parallel import apply_expert_parallel, layers, make_groups, sync_grads
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = MODELS[name]()
    names = {id(p): n for n, p in model.named_parameters()}  # the blocks' own names
    ep_group, dp_group = make_groups(None, ep)
    swapped = apply_expert_parallel(model, None, ep_group, **description(name))
    saved = layers.expert_parameters
    try:
        layers.expert_parameters = {None: saved, "experts_replicated": _experts_replicated,
                                    "router_as_expert": _router_as_expert}[bug]
        opt = torch.optim.AdamW(model.parameters(), **ADAMW)
        losses = _train(model, opt, lambda s: batch(s, rank, world),
                        lambda: sync_grads(model, None, dp_group))
    finally:
        layers.expert_parameters = saved
    held = _named((names[id(p)], p) for p in model.parameters())
    return {"loss": _global_losses(losses), **held, "swapped": swapped,
            "experts": sorted({n.split(".experts.")[1].split(".")[0]
                               for n in held["params"] if ".experts." in n})}


# --- PP -------------------------------------------------------------------------------

def llama_extra(rotary, causal: bool = True):
    """What a Hugging Face LlamaDecoderLayer needs beside its input, made from the
    activation x on whichever stage runs it: the additive causal mask (eager attention
    masks nothing without one), position ids and the rotary tables (cos, sin) of the
    model's rotary embedding. ``causal=False``: the mask forgotten (a planted bug)."""
    def extra(x):
        T = x.size(1)
        positions = torch.arange(T, device=x.device).unsqueeze(0)
        mask = torch.full((T, T), torch.finfo(x.dtype).min, device=x.device).triu(1)
        return {"attention_mask": mask[None, None] if causal else None,
                "position_ids": positions, "position_embeddings": rotary(x, positions)}
    return extra


def llama_stages(model, p: int, rank: int, causal: bool = True) -> list:
    """Rank ``rank``'s pipeline stage of an HF Llama cut in ``p``: the embedding and the
    first blocks, ..., the last blocks, the final norm and the head (and the loss)."""
    from parlab.pipeline_parallel import BlockAdapter, PipelineStage, split_layers
    inner = model.model
    extra = llama_extra(inner.rotary_emb, causal)
    blocks = [BlockAdapter(b, extra) for b in inner.layers]
    mine = [blocks[i] for i in split_layers(len(blocks), p)[rank]]
    last = rank == p - 1
    mods = ([inner.embed_tokens] if rank == 0 else []) + mine + \
        ([inner.norm, model.lm_head] if last else [])
    loss = (lambda logits, y: F.cross_entropy(logits.flatten(0, 1), y.flatten())) if last else None
    return [PipelineStage(mods, loss)]


def pipeline_parallel(micro_batches: int = 4, bug: str | None = None) -> dict:
    """HF Llama in world-size stages, 1F1B over ``micro_batches``; every step the whole
    batch. ``bug``: "no_mask" (the adapter's causal mask forgotten)."""
    from parlab.pipeline_parallel import (PipelineExecutor, RealCompute, make_schedule,
                                          placement_of)
    torch.set_num_threads(1)
    p, rank, m = dist.get_world_size(), dist.get_rank(), micro_batches
    model = llama()
    names = {id(q): n for n, q in model.named_parameters()}
    stages = llama_stages(model, p, rank, causal=bug != "no_mask")
    del model  # what this rank does not hold is freed: the stage keeps its own modules
    opt = torch.optim.AdamW(stages[0].parameters(), **ADAMW)
    pipe = PipelineExecutor(make_schedule("1f1b", p, m), placement_of("1f1b", p, 1, m),
                            RealCompute(stages, m, False), (BATCH // m, SEQ, D), None)
    losses = []
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad(set_to_none=True)
        losses.append(pipe.step(list(x.chunk(m)), list(y.chunk(m))))  # the last stage's
        opt.step()
    t = torch.tensor(losses, dtype=torch.float32)
    dist.all_reduce(t)  # 0 on every other stage
    return {"loss": t.tolist(), **_named((names[id(q)], q) for q in stages[0].parameters())}

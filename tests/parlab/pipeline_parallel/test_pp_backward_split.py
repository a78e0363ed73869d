"""B and W apart (backward.py): B's input gradient and W's weight gradients equal one
whole backward's, W walks none of B's chain again, and the odd graphs (a weight used
twice, a weight the forward did not use, an output that ignores its input) still come
out right."""

import torch
import torch.nn as nn

from parlab.model import GPT, GPTConfig
from parlab.pipeline_parallel.backward import input_grad, weight_nodes
from parlab.pipeline_parallel.stages import gpt_stages


class Counted(torch.autograd.Function):
    """The identity, counting how often its backward runs: a node on B's chain."""
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        Counted.calls += 1
        return g


class Chain(nn.Module):
    """Two layers with a counted node between them; ``twice``: the first layer's weight
    used once more, after the counted node."""

    def __init__(self, d=6, twice=False):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)
        self.idle = nn.Parameter(torch.ones(d))  # a weight the forward does not use
        self.twice = twice

    def forward(self, x):
        x = Counted.apply(torch.tanh(self.a(x)))
        if self.twice:
            x = nn.functional.linear(x, self.a.weight)
        return self.b(x) * 2.0


class Ignores(nn.Module):
    """An output that does not depend on the input: B has nothing to walk."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return self.bias * 3.0 + 0 * x.detach()


class WithLoss(nn.Module):
    """A last stage: its output is the loss."""

    def __init__(self, stage, y):
        super().__init__()
        self.stage, self.y = stage, y

    def forward(self, h):
        return self.stage.loss(self.stage(h), self.y)


def whole_and_split(module, x, grad):
    """((input grad, weight grads) of one whole backward, the same of B then W, and
    what B kept)."""
    module.zero_grad(set_to_none=True)
    inp = x.clone().requires_grad_()
    torch.autograd.backward(module(inp), grad, inputs=[inp, *module.parameters()])
    whole = inp.grad, [None if q.grad is None else q.grad.clone() for q in module.parameters()]
    module.zero_grad(set_to_none=True)
    inp = x.clone().requires_grad_()
    out = module(inp)
    dx, kept = input_grad(out, grad, inp, weight_nodes(module.parameters()))
    assert all(q.grad is None for q in module.parameters())  # B leaves the weights alone
    if kept is None:  # what RealCompute.weight does then
        torch.autograd.backward(out, grad, inputs=list(module.parameters()))
    else:
        kept.weight_grads()
    return whole, (dx, [q.grad for q in module.parameters()]), kept


def assert_same(whole, split):
    (wx, ww), (sx, sw) = whole, split
    assert torch.allclose(wx if wx is not None else torch.zeros_like(sx), sx, atol=1e-6, rtol=0)
    for a, b in zip(ww, sw):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-6, rtol=0)


def test_gpt_chunks_get_the_whole_backwards_gradients():
    c = GPTConfig(n_layers=4, d_model=32, n_heads=4, seq_len=16)
    gpt = GPT(c, 0)
    x = torch.randn(2, c.seq_len, c.d_model)
    for chunk in (gpt_stages(gpt, 4, 1)[0], gpt_stages(gpt, 4, 2, checkpoint=True)[0]):
        grad = torch.randn_like(chunk(x))
        whole, split, kept = whole_and_split(chunk, x, grad)
        assert_same(whole, split)
        assert len(kept.groups) == 6  # one block: 2 LayerNorms, 4 Linears, one group each
    last = WithLoss(gpt_stages(gpt, 2, 1)[0], torch.randint(0, c.vocab_size, (2, c.seq_len)))
    whole, split, kept = whole_and_split(last, x, None)
    assert_same(whole, split)
    assert kept is not None


def test_w_walks_none_of_bs_chain_again():
    x, grad = torch.randn(3, 6), torch.randn(3, 6)
    Counted.calls = 0
    whole, split, kept = whole_and_split(Chain(), x, grad)
    assert Counted.calls == 2  # once in the whole backward, once in B, never in W
    assert_same(whole, split)
    assert [len(nodes) for nodes, _ in kept.groups] == [1, 1]
    # A weight used twice meets the chain in two nodes, one above the counted node: its
    # group's walk passes that node again (as torch's does), and the lower node is
    # given B's gradient once, not twice.
    whole, split, kept = whole_and_split(Chain(twice=True), x, grad)
    assert_same(whole, split)
    assert sorted(len(nodes) for nodes, _ in kept.groups) == [1, 2]


def test_an_output_that_ignores_its_input_leaves_w_the_whole_walk():
    whole, split, kept = whole_and_split(Ignores(), torch.randn(2, 4), torch.ones(2, 4))
    assert kept is None
    assert_same(whole, split)

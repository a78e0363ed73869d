"""The backward split in two (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §2):

  B  the gradient with respect to the stage's *input* -- the previous stage waits for it
  W  the gradients with respect to the stage's *weights* -- nobody waits for them

A linear layer y = x Aᵀ shows why they come apart: B needs ∂L/∂x = ∂L/∂y A, W needs
∂L/∂A = (∂L/∂y)ᵀ x. Both start from ∂L/∂y, the gradient flowing into the layer's node
of the autograd graph. B walks the chain of such nodes from the output down to the
input; on its way it keeps, for every node that also takes a weight (its *weight
consumer*), the gradient flowing into it. W then starts at those nodes with those
gradients and goes only toward the weights: ∂L/∂A costs one matrix product, and none of
B's chain is walked again. (Walking back from the output a second time would redo B.)
torch.distributed.pipelining splits its stages the same way (``_backward.py``).

Which nodes consume weights is read off the graph each forward builds (``WeightConsumers``):
the nodes that depend on the stage's input and have a weight below them, reached
through nodes that do not (a transpose of the weight, say). Weights that meet the
input in the same nodes form one group; W runs one backward per group, so that no
group's walk crosses another's part of the chain.
"""

from __future__ import annotations

import torch
from torch.autograd.graph import GradientEdge, get_gradient_edge


def node_of(t: torch.Tensor):
    """The graph node that receives ``t``'s gradient: the op that made it, or, for a
    leaf (a weight, a received activation), the node that accumulates into ``.grad``."""
    return get_gradient_edge(t).node


def consumers_of(root) -> dict:
    """For every node below ``root``: the nodes its backward receives gradient from
    (the graph's edges, turned around to point the way the forward ran)."""
    users: dict = {root: []}
    todo = [root]
    while todo:
        node = todo.pop()
        for below, _ in node.next_functions:
            if below is None:
                continue
            if below not in users:
                users[below] = []
                todo.append(below)
            users[below].append(node)
    return users


def reachable(start, users: dict) -> set:
    """``start`` and every node that depends on it (forward direction)."""
    seen = {start}
    todo = [start]
    while todo:
        for up in users.get(todo.pop(), ()):
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return seen


class WeightConsumers:
    """The weight consumers of one (micro-batch, chunk)'s graph, grouped: ``groups`` is a
    list of (nodes, weights) -- the weights whose gradient comes only out of these
    nodes. ``grads[node]``: the gradients B saw flowing into each node."""

    def __init__(self, output: torch.Tensor, inp: torch.Tensor, weights: dict):
        users = consumers_of(node_of(output))
        on_chain = reachable(node_of(inp), users)  # nodes that depend on the input
        groups: list[tuple[set, list]] = []
        self.whole = False  # True: some weight never meets the input's chain
        for start, w in weights.items():
            if start not in users:  # not used by this micro-batch (an idle expert)
                continue
            nodes = self._meets_chain(start, users, on_chain)
            if not nodes:  # its gradient does not pass through B's walk: W walks whole
                self.whole = True
            # a weight whose consumers overlap an earlier group's joins it
            joined = [g for g in groups if g[0] & nodes]
            for g in joined:
                groups.remove(g)
                nodes |= g[0]
            groups.append((nodes, [x for g in joined for x in g[1]] + [w]))
        self.groups = groups
        self.grads: dict = {}

    @staticmethod
    def _meets_chain(start, users: dict, on_chain: set) -> set:
        """The first nodes on the input's chain above ``start`` (a weight's node)."""
        met, seen, todo = set(), {start}, [start]
        while todo:
            for up in users[todo.pop()]:
                if up in on_chain:
                    met.add(up)
                elif up not in seen:
                    seen.add(up)
                    todo.append(up)
        return met

    def listening(self):
        """Hooks that keep the gradient flowing into every consumer during B (removed
        by the caller)."""
        def keep(node):
            return node.register_prehook(lambda grads: self.grads.__setitem__(node, grads))
        return [keep(node) for nodes, _ in self.groups for node in nodes]

    def weight_grads(self) -> None:
        """W: each group's weight gradients from the gradients B kept, accumulated into
        ``.grad`` as a whole backward would."""
        for nodes, weights in self.groups:
            edges, grads = [], []
            for node in nodes:
                for i, g in enumerate(self.grads.get(node, ())):
                    if g is not None:
                        edges.append(GradientEdge(node, i))
                        grads.append(g)
            if not edges:
                continue
            # Two consumers of one weight may lie on one chain (a weight used twice): the
            # lower one would then receive its gradient twice, once kept and once walked
            # down to again -- it is given the kept one only.
            hooks = ([node.register_prehook(lambda _, g=self.grads[node]: g)
                      for node in nodes if node in self.grads] if len(nodes) > 1 else [])
            try:
                # retain_graph: another group's walk may still pass through these nodes
                torch.autograd.backward(edges, grads, inputs=weights, retain_graph=True)
            finally:
                for h in hooks:
                    h.remove()
        self.grads.clear()


def weight_nodes(weights) -> dict:
    """{graph node: weight} for ``weights``. Holding a weight's node keeps it the same
    node in every graph built after (autograd makes a new one only once none is held),
    so it is looked up once, not at every B."""
    return {node_of(w): w for w in weights}


def input_grad(output: torch.Tensor, grad, inp: torch.Tensor, weights: dict):
    """B: ∂L/∂input, and what W needs of it: a ``WeightConsumers`` holding the gradients
    that flowed into the weight consumers -- or None where some weight's gradient does
    not pass through B's walk (W must then walk back from the output). ``grad``:
    ∂L/∂output (None for a loss); ``weights``: ``weight_nodes`` of the stage's weights."""
    consumers = WeightConsumers(output, inp, weights)
    hooks = [] if consumers.whole else consumers.listening()
    try:
        (dx,) = torch.autograd.grad(output, inp, grad, retain_graph=True, allow_unused=True,
                                    materialize_grads=True)  # zeros if it ignores its input
    finally:
        for h in hooks:
            h.remove()
    return dx, None if consumers.whole else consumers

"""Collectives built from other collectives (taught in notebook 00). The hand-written
ring collectives themselves are in the core, ``parlab.comm``, because every strategy uses
them; this package holds what composes them:

  hierarchical.py  the two-level all-reduce: a reduce-scatter inside each node, an
                   all-reduce of one shard across nodes, an all-gather inside the node
"""

from .hierarchical import hierarchical_all_reduce, node_groups  # noqa: F401

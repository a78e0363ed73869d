"""Notebook 01's prose counts the lab's GPT with parlab.cost (no torch in the prose check):
those counts must be the model's own."""

import pytest

from parlab.model import GPT
from lessons.l01_data_parallel import experiments, experiments_zero, prose


@pytest.mark.parametrize("cfg", [prose.LAB, prose.COMPRESSION, prose.ZCFG])
def test_prose_counts_the_model_as_the_model_does(cfg):
    assert prose.n_params(cfg) == GPT(cfg).num_params()
    assert prose.unit_bytes(cfg) == experiments_zero.unit_bytes(cfg)


def test_prose_uses_the_experiments_configs():
    assert prose.LAB == experiments.TIMING_CONFIG
    assert prose.COMPRESSION == experiments.COMPRESSION_CONFIG

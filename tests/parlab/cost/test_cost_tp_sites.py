"""cost.tensor_parallel.tp_comm_sites names, for every count tp_comm_per_layer gives, the
operators that issue it (``python -m parlab tp`` prints them in its formula column)."""
import pytest

from parlab import cost
from parlab.cost.tensor_parallel import tp_comm_sites


@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_every_count_has_its_sites(tp, sp):
    counts, sites = cost.tp_comm_per_layer(2, 16, 8, tp, sp), tp_comm_sites(tp, sp)
    for direction in ("forward", "backward"):
        assert set(sites[direction]) == set(counts[direction])
        assert all(text.strip() for text in sites[direction].values())


def test_the_sites_are_megatrons_f_and_g():
    assert tp_comm_sites(2)["forward"]["all_reduce"].startswith("g after attn.proj")
    assert tp_comm_sites(2)["backward"]["all_reduce"].startswith("f before attn.qkv")
    assert "re-gather" in tp_comm_sites(2, True)["backward"]["all_gather"]
    with pytest.raises(ValueError, match="tp"):
        tp_comm_sites(0)

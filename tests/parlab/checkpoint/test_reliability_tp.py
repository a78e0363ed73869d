"""DCP with torch's DTensor TP: saved at dp2·tp2, resumed at tp4 and at dp4 (another
mesh, the same files), equal to continuing at dp2·tp2; resuming without AdamW's states
is caught."""
import pytest

from parlab import launch
from lessons.l08_checkpoints_and_failures import tp_resume


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tp_ckpt"))
    straight = launch(tp_resume.run, 4, 2, 2, 5, (2,), d, timeout=120)[0]
    return d, straight


@pytest.mark.parametrize("dp, tp", [(1, 4), (4, 1)])
def test_resume_on_another_mesh_equals_continuing(saved, dp, tp):
    d, straight = saved
    resumed = launch(tp_resume.run, 4, dp, tp, 5, (), None, f"{d}/step_2", timeout=120)[0]
    assert sorted(resumed["losses"]) == [2, 3, 4]
    for s in (2, 3, 4):
        assert resumed["losses"][s] == pytest.approx(straight["losses"][s], abs=1e-6)
    for n, p in straight["params"].items():
        assert (resumed["params"][n] - p).abs().max() < 1e-5, n


def test_resuming_without_the_optimizer_state_is_caught(saved):
    d, straight = saved
    bad = launch(tp_resume.run, 4, 1, 4, 5, (), None, f"{d}/step_2", "no_optimizer", timeout=120)[0]
    assert max(abs(bad["losses"][s] - straight["losses"][s]) for s in (3, 4)) > 1e-4

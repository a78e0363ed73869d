"""§3's checkpoint faults (``integrity.faults``): a save dying after its shard leaves the
old checkpoint whole and nothing behind; one flipped mantissa bit, which DCP alone loads
without a word, is refused naming the file; the restart resumes from the newest good
checkpoint and continues the run exactly. Bad arguments are named before anything runs."""

import pytest

from lessons.l08_checkpoints_and_failures import integrity


def test_an_interrupted_save_and_a_flipped_bit_are_caught_and_the_resume_is_exact():
    r = integrity.faults()
    assert r["saved"] == ["step_00002", "step_00004"]
    assert r["interrupted"] == {"error": "CheckpointError: not published", "kept": True, "left": []}
    f = r["flipped"]
    assert f["unchecked_changed"] == 1  # the damage is real: one weight, and DCP says nothing
    assert f["complete"] and f["error"] == "__0_0.distcp: checksum mismatch (corrupt bytes)"
    assert r["latest"] == "step_00002" and r["skipped"] == [("step_00004", f["error"])]
    assert r["resumed_at"] == 2 and r["max_loss_diff"] < 1e-6


@pytest.mark.parametrize("kw, match", [
    ({"steps": 2}, "steps"), ({"steps": True}, "steps"), ({"steps": 6.0}, "steps"),
    ({"save_at": (4, 2)}, "save_at"), ({"save_at": (2, 6)}, "save_at"),
    ({"save_at": (0, 2)}, "save_at"), ({"save_at": (2,)}, "save_at"), ({"save_at": "24"}, "save_at"),
])
def test_bad_arguments_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        integrity.faults(**kw)

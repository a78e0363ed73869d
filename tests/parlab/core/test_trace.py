"""parlab.trace: events, the status slot, clock alignment."""

import pytest

import parlab
import workers
from parlab import trace


def test_span_records_only_while_recording():
    with trace.span("before"):
        pass
    trace.start()
    with trace.span("outer", kind="compute", step=1):
        with trace.span("inner", kind="comm", bytes_sent=10, bytes_recv=20, bytes_modelled=True):
            assert trace.current_op() == "inner"
        assert trace.current_op() == "outer"
    trace.record("wait", "w", 1.0, 2.0)
    events = trace.stop()
    assert [e["name"] for e in events] == ["inner", "outer", "w"]
    inner, outer, w = events
    assert (inner["bytes_sent"], inner["bytes_recv"], inner["bytes_modelled"]) == (10, 20, True)
    assert outer["meta"] == {"step": 1}
    assert outer["start"] <= inner["start"] <= inner["end"] <= outer["end"]
    assert w["end"] - w["start"] == 1.0
    assert trace.stop() == [] and trace.current_op() == ""


def test_status_slot_shows_the_innermost_ops():
    buf = bytearray(64)
    trace.install_status_slot(buf, 16, 32)
    try:
        with trace.span("a"):
            with trace.span("b"):
                assert trace.read_status_slot(buf, 16, 32) == "a > b"
            assert trace.read_status_slot(buf, 16, 32) == "a"
        assert trace.read_status_slot(buf, 16, 32) == ""
        assert buf[:16] == bytes(16) and buf[48:] == bytes(16)  # neighbours untouched
    finally:
        trace._status = None


def test_bad_kind():
    with pytest.raises(ValueError, match="kind"):
        trace.record("sleep", "x", 0, 1)
    with pytest.raises(ValueError, match="kind"):
        with trace.span("x", kind="io"):
            pass


def test_clocks_on_one_host_need_no_correction():
    offsets = parlab.launch(workers.sync_clock_offset, 3)
    assert offsets[0] == 0.0
    assert all(abs(o) < 2e-3 for o in offsets), offsets  # one monotonic clock per host


def test_recorded_peeks_without_clearing():
    trace.start()
    trace.record("compute", "a", 1.0, 2.0)
    trace.record("comm", "b", 3.0, 4.0)
    trace.record("comm", "c", 5.0, 6.0)
    assert [e["name"] for e in trace.recorded(since=2.5, kind="comm")] == ["b", "c"]
    assert [e["name"] for e in trace.recorded()] == ["a", "b", "c"]
    assert len(trace.stop()) == 3  # still there


def test_interleaved_rotates_the_order_and_drops_warmup():
    res = parlab.launch(workers.interleaved_order, 2)
    for order, times, events in res:
        assert order == ["a", "b", "b", "a", "a", "b"]  # round k starts with label k mod 2
        assert [len(times[v]) for v in "ab"] == [2, 2]  # 1 warm-up round dropped
        assert [e["meta"]["step"] for e in events["a"]] == [0, 1]
    with pytest.raises(ValueError, match="rounds=0"):
        trace.interleaved({"a": lambda k: None}, 0)

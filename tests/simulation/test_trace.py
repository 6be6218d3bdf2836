"""The trace log shows where two runs parted."""

from dsh_sim.engine.trace import Trace, first_divergence


def test_identical_traces_have_no_divergence_and_equal_digests():
    a, b = Trace(keep=True), Trace(keep=True)
    for t in (a, b):
        t.record("point", 1, "fs.write", {"path": "/x"})
        t.record("fs", 1, "write", "/x", "0+3")
    assert a.digest() == b.digest() and first_divergence(a.records, b.records) is None


def test_the_first_differing_record_is_reported():
    a, b = Trace(keep=True), Trace(keep=True)
    a.record("step", 1, 0.0, "task-a")
    b.record("step", 1, 0.0, "task-a")
    a.record("fs", 1, "fsync", "/log", "durable:10")
    b.record("fs", 1, "fsync", "/log", "errno:5")
    divergence = first_divergence(a.records, b.records)
    assert divergence is not None and divergence.index == 1
    assert "errno:5" in divergence.describe() and a.digest() != b.digest()


def test_a_shorter_run_diverges_where_it_ends():
    a, b = Trace(keep=True), Trace(keep=True)
    a.record("boot", 1)
    b.record("boot", 1)
    b.record("boot", 2)
    assert first_divergence(a.records, b.records).index == 1


def test_a_disabled_trace_records_nothing():
    t = Trace(enabled=False)
    t.record("boot", 1)
    assert t.count == 0

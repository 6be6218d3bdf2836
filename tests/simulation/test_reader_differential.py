"""The reader differential passes on the runtime as shipped, and each of its checks fails on
the bug it guards against (a runtime function patched for the test)."""

from __future__ import annotations

import pytest

from dsh_sim.drivers import reader_cases as rc
from dsh_sim.drivers import readers
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.evidence.oracles import read_outcome
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from dsh_sim.mutants.patch import Edit, applied
from dsh_sim.mutation import harness
from runtime.agent import resume
from runtime.persistence import backend, decode_memo, durable, handles, log_reader, zstd_frames
from runtime.persistence.errors import SessionReadOnlyError

PLAN = readers.Plan(seed=1, tear_limit=6, flips=4, bomb_limit=4)


def _mismatches(*groups: str) -> tuple[str, ...]:
    return readers.differential(readers.default_sources(), [], PLAN, groups=groups).mismatches


@pytest.mark.slow
def test_shipped_runtime_agrees_everywhere():
    run = readers.differential(readers.default_sources(), [], PLAN)
    assert run.mismatches == ()
    assert run.cases > 100 and run.checks > 2000


def test_torn_records_dropped_by_the_runtime_are_found(monkeypatch):
    monkeypatch.setattr(log_reader, "recover_torn", lambda plaintext, first_seq: [])
    assert any("torn@" in m and "records" in m for m in _mismatches("synthetic"))


def test_a_wrong_decompression_bound_is_found(monkeypatch):
    real = zstd_frames.output_bound
    monkeypatch.setattr(zstd_frames, "output_bound", lambda frame: real(frame) // 2)
    found = _mismatches("bombs")
    assert any("bomb-" in m for m in found)


def test_a_refusal_text_other_than_the_specs_is_found(monkeypatch):
    real = zstd_frames.frame_at

    def frame_at(data, o, origin=0):
        try:
            return real(data, o, origin)
        except zstd_frames.FrameFormatError:
            raise zstd_frames.FrameFormatError("corrupt Zstandard session log: bad frame") from None

    monkeypatch.setattr(zstd_frames, "frame_at", frame_at)
    monkeypatch.setattr(log_reader, "frame_at", frame_at)
    assert any("the spec's text is" in m and "invalid frame magic" in m for m in _mismatches("synthetic"))


def test_unchecked_read_ranges_are_found(monkeypatch):
    monkeypatch.setattr(handles, "_check_range", lambda offset, length: None)
    assert any("read(-1, None)" in m for m in _mismatches("moving", "synthetic"))


def test_a_read_handle_refusal_that_does_not_name_its_operation_is_found(monkeypatch):
    async def append(self, events):
        raise SessionReadOnlyError("APPEND", self.session_id)

    monkeypatch.setattr(handles.ReadHandle, "append", append)
    assert any(": append: " in m for m in _mismatches("synthetic"))


def test_a_read_after_close_that_is_served_is_found(monkeypatch):
    async def close(self):
        return None

    monkeypatch.setattr(handles.ReadHandle, "close", close)
    assert any("read after close" in m for m in _mismatches("synthetic"))


def test_a_log_that_shrinks_under_a_handle_must_be_refused(monkeypatch):
    monkeypatch.setattr(handles, "_never_backwards", lambda session_id, events, observed: len(events))
    assert any("/shrinks: read after the log shrank" in m for m in _mismatches("moving"))


def test_a_stable_read_that_trusts_a_stale_size_is_found(monkeypatch):
    async def read_stable(fs, path):
        first = await fs.lstat(path)
        data = await durable.read_all(fs, path)
        return data[: first.size], first  # no retry: the size from before the read

    monkeypatch.setattr(backend, "read_stable", read_stable)
    assert any("grows-while-read" in m for m in _mismatches("moving"))


def test_a_failed_read_must_pass_through_and_close_its_descriptor(monkeypatch):
    async def leaky(fs, fd):
        return None

    monkeypatch.setattr(durable, "close_after_error", leaky)
    found = _mismatches("moving")
    assert any("read-fails: after the reads: open descriptors" in m for m in found)


def test_a_failed_read_masked_by_another_error_is_found(monkeypatch):
    async def masking(fs, fd):
        raise TypeError("close_after_error() missing 1 required positional argument")

    monkeypatch.setattr(durable, "close_after_error", masking)
    assert any("read-fails: stat: TypeError" in m for m in _mismatches("moving"))


def test_a_link_refusal_that_does_not_name_the_log_is_found(monkeypatch):
    real = durable.require_regular
    monkeypatch.setattr(durable, "require_regular", lambda st, path: real(st, "?"))
    assert any("replaced-by-link-while-read" in m for m in _mismatches("moving"))


def test_recovery_verdicts_must_match_the_closers():
    scenario = next(s for s in harness.corpus() if s.name == "boundary-3-4-pay")
    result, _ = run_scenario(scenario)
    assert not result.violations


def test_recovery_verdicts_that_differ_from_the_closers_are_found(monkeypatch):
    monkeypatch.setattr(resume, "verdicts", lambda closers: {})
    scenario = next(s for s in harness.corpus() if s.name == "boundary-3-4-pay")
    result, _ = run_scenario(scenario)
    assert any("recovery report's verdicts" in v.describe() for v in result.violations)


def test_spec_reader_refuses_a_gapped_turn_end_in_a_raw_log():
    source = rc.synthetic_source(1)
    data = rc.encode(source, "none") + rc.line(
        {"type": "turn/end", "seq": 9, "time": 1, "data": {"turn": 0, "reason": {"kind": "completed"}}}
    )
    with pytest.raises(SpecViolation, match="damage inside the committed region"):
        read_recoverable(data, "none")
    assert read_outcome.expected_read(data, "none").text == "corrupt session log: seq gap in committed region at line 8 (expected 6, got 9)"


def test_bomb_bound_is_read_from_block_headers():
    bomb = rc.bomb_frame(single=False, fcs_code=0, dict_code=1, kind="rle")
    assert read_outcome.output_bound(bomb, 0) == 672 * 100_000
    head = rc.zstd_frame(rc.line(rc.synthetic_source(1).header))
    outcome = read_outcome.expected_read(head + bomb, "zstd")
    assert outcome.text == read_outcome.bomb_text(len(head), 672 * 100_000)


@pytest.mark.slow
def test_command_line_runs_the_sample(capsys):
    from dsh_sim.cli.main import main

    assert main(["readers", "--sample"]) == 0
    assert "0 mismatches" in capsys.readouterr().out


def test_a_cancelled_read_that_leaks_its_descriptor_is_found(monkeypatch):
    async def leaky(fs, fd):
        return None

    monkeypatch.setattr(durable, "close_after_error", leaky)
    assert any("stat-cancelled-at-read-1: after the reads: open descriptors" in m for m in _mismatches("moving"))


# -- header shapes, stored source seqs, unsafe values, identity (found by mutmut over the rest
# modules: each slip passed the differential before its cases were added) --------------------

SLIPS = {
    "header-shape-text": Edit(
        "runtime.persistence.header",
        "parse_header",
        '    if type(record) is not dict or record.get("type") != "session":\n        raise HeaderError("first line is not a session header")',
        '    if type(record) is not dict or record.get("type") != "session":\n        raise HeaderError("not a header")',
    ),
    "newer-version-text": Edit(
        "runtime.persistence.errors",
        "SessionFormatUnsupportedError.version",
        '"the log was written by a newer harness — upgrade the harness to open it"',
        '"the log is newer"',
    ),
    "pair-of-one-refused": Edit("runtime.session.events", "decode_seq_ranges", "or item[1] < item[0]:", "or item[1] <= item[0]:"),
    "increase-checked-every-other-pair": Edit("runtime.session.events", "decode_seq_ranges", "zip(out, out[1:])", "zip(out, out[2:])"),
    "own-seq-accepted": Edit(
        "runtime.session.events", "decode_seq_ranges", "if any(s >= owner_seq for s in out):", "if any(s > owner_seq for s in out):"
    ),
    "nested-object-unchecked": Edit(
        "runtime.session.lossless",
        "_check",
        "                if sub is dict or sub is list:\n                    _check(item)\n                elif sub is not bool and item is not None:\n"
        "                    _check_scalar(item, sub)\n            except _Refused as err:\n                err.steps.append(key)",
        "                if sub is list:\n                    _check(item)\n                elif sub is not bool and item is not None:\n"
        "                    _check_scalar(item, sub)\n            except _Refused as err:\n                err.steps.append(key)",
    ),
    "stored-data-unchecked": Edit("runtime.session.events", "_checked_in_place", "    check_parsed(data)\n", "    pass\n"),
    "header-id-refusal-broken": Edit(
        "runtime.persistence.backend",
        "JsonlBackend._check_header",
        "            raise SessionPersistenceCorruptionError(\n                session_id,\n",
        "            raise SessionPersistenceCorruptionError(\n",
    ),
    "identity-by-name-only": Edit(
        "runtime.persistence.backend",
        "JsonlBackend._check_identity",
        "        if expected != located.session_dir:\n",
        "        if expected.rsplit('/', 1)[-1] != located.session_dir.rsplit('/', 1)[-1]:\n",
    ),
    "raw-surrogate-bytes-read": Edit(
        "runtime.persistence.log_records",
        "_text_of",
        '        return line.decode("utf-8")\n',
        '        return line.decode("utf-8", "surrogatepass")\n',
    ),
}
FOUND_IN = {
    "header-shape-text": "header-type-other",
    "newer-version-text": "header-version-newer",
    "pair-of-one-refused": "sources-pair-of-one",
    "increase-checked-every-other-pair": "sources-repeat-after-pair",
    "own-seq-accepted": "sources-names-itself",
    "nested-object-unchecked": "unsafe-big-integer-object-in-object",
    "stored-data-unchecked": "unsafe-negative-zero-member",
    "header-id-refusal-broken": "header-id-of-another-session",
    "identity-by-name-only": "header-cwd-of-another-project",
    "raw-surrogate-bytes-read": "unsafe-text-raw-lone-surrogate-data",
}


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_the_edge_cases_find_a_slip(slip: str) -> None:
    with applied([SLIPS[slip]]):
        found = _mismatches("synthetic")
    assert any(f"/{FOUND_IN[slip]}:" in m for m in found), found[:3]


def test_an_escaping_slip_is_found_even_after_a_warm_run() -> None:
    """The layout caches the segments it encoded; a run starts cold, so a slip in the escaping
    is found also in a process that ran the differential before (as mutmut's forked children)."""
    _mismatches("synthetic")  # warm every cache
    broken = Edit("runtime.persistence.layout", "_utf16_units", "            units.append(code)\n", "            units.append(None)\n")
    with applied([broken]), pytest.raises(TypeError):  # the escaped id's placement meets it first
        _mismatches("synthetic")


@pytest.mark.parametrize(
    ("edit", "case"),
    [
        (
            Edit(
                "runtime.persistence.log_records",
                "load_json",
                '    decoder = _DECODER if b"-0" in line else _PLAIN_DECODER\n',
                "    decoder = _PLAIN_DECODER\n",
            ),
            "unsafe-text-int-negative-zero",
        ),
        (Edit("runtime.session.lossless", "text_may_refuse", ' or b"Infinity" in text', ""), "unsafe-text-infinity"),
    ],
    ids=["integer -0 read as 0", "Infinity called clean text"],
)
def test_refused_json_text_read_back_changed_is_found(edit: Edit, case: str) -> None:
    """Careless edits of the reader's fast paths (written apart from the harness): a record whose
    text holds a refused value is read back changed instead of refused."""
    decode_memo.clear_all()
    with applied([edit]):
        found = _mismatches("synthetic")
    decode_memo.clear_all()
    assert any(case in m and "the spec refuses it" in m for m in found), found[:3]

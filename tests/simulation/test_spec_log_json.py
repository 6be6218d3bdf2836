"""The spec reader's strict JSON and lossless checks take cheaper paths where they cannot
differ (C-built dicts, the built-in int when no "-0" is written, a leaf judged in its
container's loop): each still refuses exactly what the plain definitions refuse."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_sim.evidence.oracles import spec_log, spec_records
from dsh_sim.evidence.oracles.spec_log import check_written
from dsh_sim.evidence.oracles.spec_records import MAX_SAFE, SpecViolation, strict_json


def _reference_json(line: bytes) -> Any:
    """strict_json as the spec reader first wrote it: a Python hook for every object and integer."""
    text = line.decode("utf-8")
    return json.loads(
        text,
        object_pairs_hook=spec_records._no_duplicates,
        parse_int=spec_records._int,
        parse_float=spec_records._float,
        parse_constant=spec_records._constant,
    )


def _reference_lossless(value: Any, depth: int = 0) -> bool:
    if depth > 200:
        return False
    if value is None or type(value) in (bool, str):
        return True
    if type(value) is int:
        return -MAX_SAFE <= value <= MAX_SAFE
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_reference_lossless(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_reference_lossless(v, depth + 1) for v in value.values())
    return False


def _outcome(read: Any, line: bytes) -> tuple[str, Any]:
    try:
        value = read(line)
    except ValueError as err:
        return ("refused", f"{type(err).__name__}: {err}")
    return ("read", json.dumps(value, sort_keys=False, allow_nan=True) + repr([type(v) for v in _leaves(value)]))


def _leaves(value: Any) -> list[Any]:
    if type(value) is dict:
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if type(value) is list:
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


BAD_LINES = [
    b'{"a":1,"a":2}',  # a duplicate key
    b'{"a":{"b":1,"b":1}}',  # one inside
    b'{"a":-0}',  # a negative zero integer
    b'{"a":[1,-0]}',
    b'{"a":-0.0}',  # a negative zero float
    b'{"a":-1e-400}',  # a negative float that rounds to zero
    b'{"a":NaN}',
    b'{"a":-Infinity}',
    b'\xef\xbb\xbf{"a":1}',  # a byte-order mark
    b"\xff",  # not UTF-8
    b'{"a":1} x',  # extra data
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_strict_json_refuses_what_the_reference_refuses(line: bytes) -> None:
    assert _outcome(strict_json, line) == _outcome(_reference_json, line)
    assert _outcome(strict_json, line)[0] == "refused"


GOOD_LINES = [b'{"a":1,"b":[1,2.5,"-0",{"c":null}]}', b'{"a":-1,"b":-0.5,"c":1e-400,"d":-10}', b"[]", b'"x"', b'{"\xc3\xa9":"\xc3\xa9"}']


@pytest.mark.parametrize("line", GOOD_LINES)
def test_strict_json_reads_what_the_reference_reads(line: bytes) -> None:
    assert _outcome(strict_json, line) == _outcome(_reference_json, line)
    assert _outcome(strict_json, line)[0] == "read"


_json_text = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**60), max_value=2**60),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_json_text, st.sampled_from(["", "dup", "-0", "-0.0"]))
def test_strict_json_and_lossless_agree_with_the_reference(value: Any, twist: str) -> None:
    text = json.dumps(value, allow_nan=True)
    if twist == "dup" and text.startswith("{") and text != "{}":
        text = text[:-1] + ", " + text[1:]  # every key of the outer object twice
    elif twist in ("-0", "-0.0"):
        text = f"[{twist},{text}]"
    line = text.encode()
    assert _outcome(strict_json, line) == _outcome(_reference_json, line)
    if _outcome(strict_json, line)[0] == "read":
        parsed = strict_json(line)
        assert spec_records._lossless(parsed) == _reference_lossless(parsed)


@pytest.mark.parametrize(
    "value",
    [
        2**53,  # one past the safe range
        -(2**53),
        float("inf"),
        float("nan"),
        {"a": [1, {"b": 2**53}]},
        [1.5, "x", None, True, {"k": [float("-inf")]}],
        (1, 2),  # not a JSON type
        {"a": b"x"},
    ],
)
def test_lossless_refuses_what_the_reference_refuses(value: Any) -> None:
    assert spec_records._lossless(value) is False
    assert _reference_lossless(value) is False


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [198, 199, 200, 201, 202])
@pytest.mark.parametrize("leaf", [1, "x", [], {}])
def test_lossless_depth_limit_is_the_reference_limit(depth: int, leaf: Any) -> None:
    value = _nested(depth, leaf)
    assert spec_records._lossless(value) == _reference_lossless(value)


def test_a_written_record_with_unsafe_data_is_still_refused() -> None:
    """Through the whole reader: a record whose data holds an unsafe integer is a violation."""
    import zstandard

    header = b'{"type":"session","version":3,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
    record = b'{"type":"x/y","seq":0,"time":1,"data":{"n":9007199254740993}}\n'
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    data = compressor.compress(header) + compressor.compress(record)
    spec_log.clear_memos()
    with pytest.raises(SpecViolation, match="not lossless"):
        check_written(data, "zstd")
    duplicate = b'{"type":"x/y","seq":0,"time":1,"data":{"n":1,"n":2}}\n'
    spec_log.clear_memos()
    with pytest.raises(SpecViolation, match="duplicate key"):
        check_written(compressor.compress(header) + compressor.compress(duplicate), "zstd")

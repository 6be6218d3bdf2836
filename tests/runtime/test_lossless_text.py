"""``text_may_refuse``: the readers skip the walk of a record's data when its JSON text cannot
hold a value the format refuses, so a text it calls clean must never parse to such a value.

The texts are generated token by token — numbers of any length, sign, fraction and exponent
(``-0``, ``1e400``, 17-digit integers), ``NaN``/``Infinity``, strings with lone surrogates
escaped (``\\udc80``, accepted) or raw (surrogatepass bytes, which are not UTF-8 and are refused
before parsing) — so the implication is tried where it can break, not on values a Python encoder
would write.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from runtime.persistence.log_records import load_json
from runtime.session import lossless
from runtime.session.lossless import check_parsed, text_may_refuse

NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z")
SPECIAL = st.sampled_from(["NaN", "Infinity", "-Infinity", "true", "false", "null"])


def _string(text: str, escaped: bool) -> str:
    return json.dumps(text, ensure_ascii=escaped)


STRING = st.builds(_string, st.text(st.characters(codec=None, exclude_categories=()), max_size=6), st.booleans())
SCALAR = st.one_of(NUMBER, SPECIAL, STRING)


def _object(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"


VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(STRING, inner), max_size=4).map(_object),
    ),
    max_leaves=10,
)


def _parsed(text: str) -> Any:
    line = text.encode("utf-8", "surrogatepass")
    try:
        return line, load_json(line)
    except ValueError:  # e.g. a raw surrogate pair, which is not valid UTF-8 either way
        return line, None


def _holds(text: str) -> None:
    line, value = _parsed(text)
    if value is not None and not text_may_refuse(line):
        check_parsed(value)  # raises if the text was called clean but holds a refused value


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUE)
def test_a_text_called_clean_holds_nothing_the_walk_refuses(text: str) -> None:
    _holds(text)


@pytest.mark.parametrize(
    "text",
    ['{"a":-0}', '{"a":1e400}', '{"a":NaN}', '{"a":12345678901234567}', '{"a":-0.0}', '{"a":1E999}'],
)
def test_each_refused_value_is_seen_in_its_text(text: str) -> None:
    line, value = _parsed(text)
    with pytest.raises(TypeError):
        check_parsed(value)
    assert text_may_refuse(line)


@pytest.mark.parametrize("text", ['{"a":"\\ud800"}', '["\\udfff"]', '{"\\udc00x":"\\udbff"}', '["\\udfff\\ud800"]'])
def test_an_escaped_lone_surrogate_is_read_back_and_accepted(text: str) -> None:
    """JSON.stringify writes a lone surrogate as this escape and JSON.parse reads it back: the
    format holds it (spec §1.1 refuses nothing of the kind), so neither the walk nor the scan does."""
    line, value = _parsed(text)
    assert value == json.loads(text)
    check_parsed(value)
    assert not text_may_refuse(line)


@pytest.mark.parametrize("raw", [b'{"a":"\xed\xa0\x80"}', b'["\xed\xa0\xbd\xed\xb8\x80"]', b'{"\xed\xbf\xbf":1}'])
def test_raw_surrogate_bytes_are_not_utf8_and_are_refused(raw: bytes) -> None:
    """Bytes of a surrogate (a lone one, or a pair CESU-style) are not UTF-8; a JavaScript reader
    would read U+FFFD in their place, so reading them as the code unit would change the text."""
    with pytest.raises(ValueError, match="utf-8"):
        load_json(raw)


def test_ordinary_records_skip_the_walk() -> None:
    line = b'{"type":"user/message","seq":12,"time":1700000000000,"data":{"id":"m1","content":[{"type":"text","text":"h\xc3\xa9"}]}}'
    assert not text_may_refuse(line)


def test_a_weaker_scan_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property can fail: a scan that forgets exponents lets ``1e400`` (infinity) through."""
    monkeypatch.setattr(lossless, "_DIGITS_AS_ZERO", bytes.maketrans(b"123456789eE", b"000000000xx"))
    found = []

    @settings(
        max_examples=2000, deadline=None, database=None, derandomize=True, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
    )
    @given(VALUE)
    def weaker(text: str) -> None:
        _holds(text)

    try:
        weaker()
    except TypeError as err:
        found.append(str(err))
    assert found and "non-finite" in found[0]

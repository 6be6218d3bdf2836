"""Hypothesis over the command line's input handling: files and flags.

Whatever a user hands ``dsh-sim`` — a scenario file with any value swapped in anywhere, any
bytes as a session log, any text as a numeric flag — the command ends with exit 0, 1 or 2,
and a refusal (2) is exactly one stderr line starting ``dsh-sim:``; no exception escapes,
nothing runs away (each call is bounded by an alarm), and the input file is left as it was.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_sim.cli.main import build_parser, main
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")
with open(os.path.join(STARTER, "boundary-2-3-pay.json"), encoding="utf-8") as _handle:
    VALID = json.load(_handle)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@contextlib.contextmanager
def alarm(seconds: int) -> Iterator[None]:
    def expire(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"dsh-sim did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with alarm(30), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, err.getvalue()


def assert_clean(code: int, err: str, path: str | None = None) -> None:
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dsh-sim"), err
        if path is not None:
            assert path in lines[0], err


def paths_of(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += paths_of(value, prefix + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += paths_of(value, prefix + (index,))
    return out


PATHS = [p for p in paths_of(VALID) if p]


def replaced(path: tuple[Any, ...], value: Any) -> Any:
    obj = json.loads(json.dumps(VALID))
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


@pytest.mark.slow
@FAST
@given(path=st.sampled_from(PATHS), value=json_values)
def test_any_value_anywhere_in_a_scenario_is_judged_or_refused_in_one_line(path: tuple[Any, ...], value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "s.json")
        text = json.dumps(replaced(path, value))
        with open(file, "w", encoding="utf-8") as handle:
            handle.write(text)
        code, err = run("validate", file)
        assert code in (0, 1), err
        code, err = run("replay", file)
        assert_clean(code, err, file)
        with open(file, encoding="utf-8") as handle:
            assert handle.read() == text


@pytest.mark.slow
@FAST
@given(
    data=st.binary(max_size=300),
    prefix=st.sampled_from([b"", b"\x28\xb5\x2f\xfd", b'{"type":"session","version":3,"id":"s","createdAt":0}\n']),
)
def test_any_bytes_as_a_session_log_are_read_or_refused_in_one_line(data: bytes, prefix: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        name = "session.v3.jsonl.zstd" if prefix.startswith(b"\x28") else "session.v3.jsonl"
        file = os.path.join(tmp, name)
        with open(file, "wb") as handle:
            handle.write(prefix + data)
        for command in ("inspect", "migrate"):
            code, err = run(command, file)
            assert code in (0, 2), err
            assert_clean(code, err, file)
        with open(file, "rb") as handle:
            assert handle.read() == prefix + data


NUMERIC = [
    ("run", "--budget"),
    ("fuzz", "--budget"),
    ("fuzz", "--examples"),
    ("fuzz", "--steps"),
    ("fuzz", "--seed"),
    ("run", "--workers"),
    ("run", "--steps"),
    ("explore", "--bound"),
    # held-out probes: these were plain ``int`` (``--max-children -5``, ``--sample -3``, a seed
    # of 10**5000 digits) and reached mutmut or the corpus generator unchecked
    ("mutants", "--max-children"),
    ("mutants", "--sample"),
    ("mutants", "--seed"),
    ("dsh generate out", "--seed"),
]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    flag=st.sampled_from(NUMERIC),
    text=st.one_of(st.text(max_size=8), st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e309", "True", "1.5"]), st.integers().map(str)),
)
def test_numeric_flags_are_bounded_or_refused_in_one_line(flag: tuple[str, str], text: str) -> None:
    command, name = flag
    argv = command.split() + (["x.json"] if command == "explore" else []) + [f"{name}={text}"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_:
            assert exit_.code == 2
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("dsh-sim"), err.getvalue()
            return
    value = getattr(args, name.lstrip("-").replace("-", "_"))
    assert not isinstance(value, bool)
    assert math.isfinite(value) and value >= 0


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "dir"])
def test_special_files_are_refused_before_reading(tmp_path: Any, special: str) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "f.json")
        os.mkfifo(path)
    elif special == "dir":
        path = str(tmp_path / "d.json")
        os.mkdir(path)
        (tmp_path / "d.json" / "x.txt").write_text("x")
    for command in ("replay", "validate", "inspect"):
        code, err = run(command, path)
        if command == "validate":
            assert code in (1, 2), err
            continue
        assert code == 2, err
        assert_clean(code, err)


def test_a_lone_surrogate_in_a_log_is_printed_escaped(tmp_path: Any) -> None:
    header = '{"type":"session","version":3,"id":"s\\ud800","createdAt":0,"isSeeded":false,"delegationDepth":0}\n'
    stray = tmp_path / "session.v3.jsonl"  # not in its session's directory: refused in one line
    stray.write_text(header)
    code, err = run("inspect", str(stray))
    assert code == 2 and "header id" in err, err
    assert_clean(code, err)
    session_dir = tmp_path / "root" / "_no-cwd" / "s~D800"  # where the header's id and cwd say it lives
    session_dir.mkdir(parents=True)
    log = session_dir / "session.v3.jsonl"
    log.write_text(header)
    for extra in ((), ("--json",)):
        code, err = run("inspect", str(log), *extra)
        assert code == 0, err


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_inspect_shows_the_lone_surrogates_a_log_holds(tmp_path: Any, compression: str) -> None:
    """The format holds lone surrogates (spec §1.1); ``inspect`` spooled the events through a
    UTF-8 file and died with a traceback on the first one."""
    import trio

    from runtime.session.events import Event
    from tests.support.persistence import backend, log_path, meta, one_turn_log

    events = one_turn_log()
    at = [event.type for event in events].index("user/message")
    user = events[at]
    events[at] = Event(
        user.type, user.seq, user.time, {**user.data, "content": [{"type": "text", "text": "a\ud800b"}]}, surface_op="append"
    )

    async def write() -> None:
        handle = await backend(tmp_path, compression).create(meta("lone"))
        await handle.append(events)
        await handle.close()

    trio.run(write)
    path = log_path(tmp_path, "lone", compression)
    outputs = []
    for extra in ((), ("--json",)):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            assert main(["inspect", path, *extra]) == 0, err.getvalue()
        outputs.append(out.getvalue())
    assert "a\ud800b" in outputs[0]
    document = json.loads(outputs[1])
    assert [e["data"] for e in document["events"] if e["type"] == "user/message"] == [events[at].data]

"""Read one v0 log with the real DSH and with dsh-sim, and list every difference.

DSH works on a *copy* of the log's root (its ``load`` repairs the file), laid out as DSH
expects: ``<root>/<project dir>/<session dir>/session.jsonl[.zstd]`` with the last two
directory names of the original.  dsh-sim reads the original bytes.  A difference is one
of: ``crash`` (dsh-sim's reader raised something other than its documented refusals), ``header``
(both list the session, with other header fields), ``refusal`` (one side refuses, the other reads), ``refusal-class`` (both refuse, for
different reasons), ``events`` (another valid prefix), ``closers`` / ``verdicts`` (another
recovery), ``list`` (one lists the session, the other does not), ``dsh-internal`` (DSH
disagrees with itself: load vs inspect vs a second load) and ``after-load`` (the bytes DSH
leaves after its repair are not the committed prefix plus the recovery dsh-sim predicts).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import attrs

from dsh_sim.dsh.bridge import Bridge, BridgeError, DshError
from dsh_sim.dsh.install import Installation
from dsh_sim.dsh.normalize import Outcome, Refusal, canonical, dsh, ours, v0_closers
from runtime.persistence.log_format import LogCorruption
from runtime.persistence.v0_format import V0Log, V0Unsupported, decode_v0
from runtime.persistence.zstd_frames import FrameFormatError, decode_frame, scan_frames

LOG_NAMES = {"session.jsonl": "none", "session.jsonl.zstd": "zstd"}
T = TypeVar("T")


@attrs.frozen
class Difference:
    kind: str
    detail: str
    finding: str | None = None  # the id of the known finding that explains it


@attrs.frozen
class LogDiff:
    """One log read by the published DSH and by dsh-sim: both outcomes and every difference
    (a known finding names the ones it explains)."""

    path: str
    compression: str
    dsh: Outcome
    ours: Outcome
    differences: tuple[Difference, ...]

    @property
    def unexplained(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.finding is None)


def collect(paths: Iterable[str]) -> Iterator[str]:
    """Every v0 log file named by ``paths`` (files, or directories searched recursively)."""
    for path in paths:
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                for name in sorted(filenames):
                    if name in LOG_NAMES:
                        yield os.path.join(dirpath, name)
        else:
            yield path


def decode_segment(name: str) -> str | None:
    """The inverse of DSH's ``encodeSegment`` (``~XXXX`` escapes), ``None`` if malformed."""
    try:
        return re.sub(r"~([0-9A-F]{4})", lambda m: chr(int(m.group(1), 16)), name)
    except ValueError:
        return None


def _stage(path: str, scratch: str) -> str:
    session_dir = os.path.dirname(os.path.abspath(path))
    project_dir = os.path.dirname(session_dir)
    target = os.path.join(scratch, "root", os.path.basename(project_dir), os.path.basename(session_dir))
    os.makedirs(target, mode=0o700)
    copy = os.path.join(target, os.path.basename(path))
    shutil.copyfile(path, copy)
    return copy


@attrs.frozen
class DshReading:
    """One log as the real DSH read it: its outcome and the bytes its load left behind."""

    outcome: Outcome
    after: bytes | None


def log_compression(path: str) -> str:
    name = os.path.basename(path)
    if name not in LOG_NAMES:
        raise ValueError(f"{path}: not a v0 session log (session.jsonl or session.jsonl.zstd)")
    return LOG_NAMES[name]


def location_of(path: str) -> tuple[str, str]:
    """(project directory name, session directory name) of the log at ``path``."""
    session_dir = os.path.dirname(os.path.abspath(path))
    return os.path.basename(os.path.dirname(session_dir)), os.path.basename(session_dir)


def diff_log(bridge: Bridge, path: str) -> LogDiff:
    compression = log_compression(path)
    with open(path, "rb") as handle:
        before = handle.read()
    return judge(path, compression, location_of(path), before, read_with_dsh(bridge, path, compression))


def judge(path: str, compression: str, location: tuple[str, str], before: bytes, theirs: DshReading) -> LogDiff:
    """dsh-sim reads ``before`` (found at ``location``) and is compared with DSH's reading."""
    try:
        mine, log = ours(before, compression, location)
    except Exception as err:  # the runtime's reader refuses only with its documented errors
        text = f"{type(err).__name__}: {err}"
        crashed = Outcome(Refusal("crash", text, "decode"), False)
        return LogDiff(path, compression, theirs.outcome, crashed, (Difference("crash", f"dsh-sim's reader raised {text}"),))
    return LogDiff(path, compression, theirs.outcome, mine, tuple(compare(theirs.outcome, mine, before, theirs.after, log, compression)))


def diff_logs(install: Installation, paths: Sequence[str], workers: int = 2) -> list[LogDiff]:
    """:func:`diff_log` over many logs, in their order, with ``workers`` Node bridges at once
    (a probe is ~20 ms of DSH's own work, so one bridge per core halves a corpus's wall time)."""
    return in_parallel(install, paths, workers, diff_log)


def in_parallel(install: Installation, paths: Sequence[str], workers: int, work: Callable[[Bridge, str], T]) -> list[T]:
    """``work(bridge, path)`` for every path, in their order, spread over ``workers`` bridges."""

    def run(share: Sequence[int]) -> list[tuple[int, T]]:
        with Bridge(install) as bridge:
            out = []
            for i in share:
                try:
                    out.append((i, work(bridge, paths[i])))
                except DshError as err:
                    raise BridgeError(f"{paths[i]}: the DSH bridge failed: {err}") from None
            return out

    workers = max(1, min(workers, len(paths)))
    shares = [range(k, len(paths), workers) for k in range(workers)]
    if workers == 1:
        return [value for _, value in run(shares[0])]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        done = [pair for part in pool.map(run, shares) for pair in part]
    return [value for _, value in sorted(done, key=lambda pair: pair[0])]


def read_with_dsh(bridge: Bridge, path: str, compression: str) -> DshReading:
    scratch = tempfile.mkdtemp(prefix="dsh-diff-")
    try:
        copy = _stage(path, scratch)
        session = decode_segment(os.path.basename(os.path.dirname(copy)))
        probe = bridge.request("probe", root=os.path.join(scratch, "root"), compression=compression, session=session).unwrap()
        after = None
        if os.path.exists(copy):
            with open(copy, "rb") as handle:
                after = handle.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return DshReading(dsh(probe), after)


def compare(theirs: Outcome, mine: Outcome, before: bytes, after: bytes | None, log: V0Log | None, compression: str) -> list[Difference]:
    from dsh_sim.dsh.findings import explain

    out: list[Difference] = []
    if theirs.listed != mine.listed:
        out.append(Difference("list", f"DSH lists the session: {theirs.listed}; dsh-sim: {mine.listed}"))
    elif theirs.header != mine.header:
        out.append(Difference("header", f"DSH lists the header {theirs.header}; dsh-sim {mine.header}"))
    for note in theirs.notes:
        out.append(Difference("dsh-internal", note))
    if (theirs.refusal is None) != (mine.refusal is None):
        who, refusal = ("DSH", theirs.refusal) if theirs.refusal is not None else ("dsh-sim", mine.refusal)
        assert refusal is not None
        out.append(Difference("refusal", f"only {who} refuses ({refusal.klass}, at {refusal.step}): {refusal.text}"))
    elif theirs.refusal is not None and mine.refusal is not None:
        if theirs.refusal.klass != mine.refusal.klass:
            out.append(
                Difference(
                    "refusal-class",
                    f"DSH refuses as {theirs.refusal.klass} ({theirs.refusal.text}); dsh-sim as {mine.refusal.klass} ({mine.refusal.text})",
                )
            )
    else:
        out.extend(_content(theirs, mine))
        if after is not None and log is not None:
            out.extend(_after_load(before, after, log, compression))
    context = {
        "theirs": theirs,
        "ours": mine,
        "log": log,
        "compression": compression,
        "header_record": header_record(before, compression),
        "records": records_in(before, compression),
    }
    return [attrs.evolve(d, finding=explain(d, context)) for d in out]


def header_record(data: bytes, compression: str) -> Any:
    """The raw header object (what the findings look at), or ``None`` if it does not parse."""
    try:
        if compression == "none":
            return json.loads(data[: data.index(b"\n")])
        return json.loads(decode_frame(data[: scan_frames(data).frames[0][1]], 0))
    except (ValueError, IndexError, FrameFormatError):
        return None


def records_in(data: bytes, compression: str) -> int:
    """How many events the complete records after the header stand for, valid or not (a packed
    row's members counted): what a reader that dropped nothing returns."""
    if compression == "none":
        lines = data.split(b"\n")[1:-1]
    else:
        try:
            lines = [line for s, e in scan_frames(data).frames[1:] for line in decode_frame(data[s:e], s).split(b"\n")[:-1]]
        except FrameFormatError:
            return 0
    count = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        payload = record.get("data", {}) if isinstance(record, dict) and str(record.get("type")).endswith("-chunks") else None
        members = payload.get("texts", payload.get("args")) if isinstance(payload, dict) else None
        count += len(members) if isinstance(members, list) and members else 1
    return count


def _first_mismatch(a: tuple[str, ...], b: tuple[str, ...]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at index {i}: DSH {x[:160]} | dsh-sim {y[:160]}"
    return f"DSH has {len(a)}, dsh-sim {len(b)}"


def _content(theirs: Outcome, mine: Outcome) -> list[Difference]:
    out = []
    if theirs.events != mine.events:
        out.append(
            Difference(
                "events",
                f"stored prefix differs ({len(theirs.events)} vs {len(mine.events)} events); "
                + _first_mismatch(theirs.events, mine.events),
            )
        )
    if theirs.closers != mine.closers:
        out.append(
            Difference(
                "closers",
                f"recovery differs ({len(theirs.closers)} vs {len(mine.closers)} closers); "
                + _first_mismatch(theirs.closers, mine.closers),
            )
        )
    if theirs.verdicts != mine.verdicts:
        out.append(Difference("verdicts", f"DSH {theirs.verdicts} vs dsh-sim {mine.verdicts}"))
    return out


def _after_load(before: bytes, after: bytes, log: V0Log, compression: str) -> list[Difference]:
    """DSH's repaired file must keep the committed bytes and decode to prefix + closers."""
    committed = log.torn.truncate_to if log.torn is not None else len(before)
    out = []
    if after[:committed] != before[:committed]:
        out.append(Difference("after-load", f"DSH changed committed bytes before offset {committed}"))
    expected = [canonical(e.to_record()) for e in log.events] + [canonical(e.to_record()) for e in v0_closers(log.events)]
    try:
        repaired = decode_v0(after, compression)
    except (LogCorruption, V0Unsupported) as err:
        return out + [Difference("after-load", f"dsh-sim cannot read the file DSH repaired: {err}")]
    got = [canonical(e.to_record()) for e in repaired.events]
    if repaired.torn is not None:
        out.append(Difference("after-load", f"the file DSH repaired still ends in a torn tail at {repaired.torn.truncate_to}"))
    if got != expected:
        out.append(
            Difference(
                "after-load",
                f"the repaired file holds {len(got)} events, dsh-sim expected {len(expected)}; "
                + _first_mismatch(tuple(got), tuple(expected)),
            )
        )
    if log.torn is None and not v0_closers(log.events) and after != before:
        out.append(Difference("after-load", "DSH rewrote a log that needed no repair"))
    return out


def summary(diff: LogDiff) -> dict[str, Any]:
    def side(o: Outcome) -> dict[str, Any]:
        return {
            "refusal": None if o.refusal is None else {"class": o.refusal.klass, "step": o.refusal.step, "text": o.refusal.text},
            "listed": o.listed,
            "events": len(o.events),
            "closers": len(o.closers),
            "verdicts": o.verdicts,
        }

    return {
        "path": diff.path,
        "compression": diff.compression,
        "dsh": side(diff.dsh),
        "dsh_sim": side(diff.ours),
        "differences": [attrs.asdict(d) for d in diff.differences],
        "unexplained": len(diff.unexplained),
    }

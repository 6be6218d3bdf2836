"""``--against dsh``: every crash state our runtime recovers is also read by the real DSH.

After the first boot that follows a crash (where ``reference_model`` judges the recovery),
the post-crash log is projected to the v0 log DSH rc.8 reads (:mod:`dsh_sim.dsh.project`),
laid out in a scratch root as DSH expects, and probed by the real reader through the bridge
(``list``, ``readFrom``, ``inspect``, ``load``, a second ``load``).  Our runtime's answer —
the prefix it kept and the closers it appended, or the error it refused with — is projected
the same way, and both are compared exactly as ``dsh-sim dsh diff`` compares them
(:func:`dsh_sim.dsh.diff.compare`: listing, refusal and its class, events, closers,
verdicts, DSH against itself, DSH's repaired bytes).  A difference a known finding explains
is counted under that finding; any other is a violation of ``dsh_agrees``, so explore and
fuzz save it as a replayable scenario like every other violation, and ``dsh-sim replay
--against dsh`` reproduces it.

Cost is bounded: one Node process per run (started on first use), and one probe per distinct
projected log — identical post-crash bytes are asked about once.  The oracle is switched on
for a block of code (:func:`enabled`), like a mutant, so the drivers need no new parameters:
whatever runs inside the block — explore's recoveries, fuzz examples, minimisation replays,
a replay — is compared.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_sim.dsh.bridge import Bridge
    from dsh_sim.dsh.install import Installation
    from dsh_sim.dsh.normalize import Outcome
    from dsh_sim.engine.crash import CrashRecord
    from dsh_sim.engine.lifetime import Lifetime
    from dsh_sim.evidence.invariants.base import Judge

NAME = "dsh_agrees"
SUFFIX = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}


class DshOracle:
    """The real DSH reader for one run: a bridge, a scratch root, and what was asked already."""

    def __init__(self, install: Installation) -> None:
        self.install = install
        self._bridge: Bridge | None = None
        self._scratch = tempfile.mkdtemp(prefix="dsh-against-")
        self._probes: dict[bytes, tuple[dict[str, Any], bytes | None]] = {}
        self.stats: dict[str, int] = {"compared": 0, "probes": 0, "no_log": 0, "not_projectable": 0, "differences": 0}
        self.explained: dict[str, int] = {}  # finding id -> occurrences

    def probe(self, v0: bytes, compression: str, location: tuple[str, str], session: str) -> tuple[dict[str, Any], bytes | None]:
        """DSH's probe of one v0 log and the bytes its ``load`` left (remembered per log)."""
        key = hashlib.sha256(repr((compression, location, session)).encode() + v0).digest()
        known = self._probes.get(key)
        if known is not None:
            return known
        from dsh_sim.dsh.bridge import Bridge

        if self._bridge is None:
            self._bridge = Bridge(self.install)
        root = os.path.join(self._scratch, "root")
        shutil.rmtree(root, ignore_errors=True)
        directory = os.path.join(root, *location)
        os.makedirs(directory, mode=0o700)
        path = os.path.join(directory, SUFFIX[compression])
        with open(path, "wb") as handle:
            handle.write(v0)
        answer = self._bridge.request("probe", root=root, compression=compression, session=session).unwrap()
        after = None
        if os.path.exists(path):
            with open(path, "rb") as handle:
                after = handle.read()
        self.stats["probes"] += 1
        self._probes[key] = (answer, after)
        return answer, after

    def summary(self) -> dict[str, Any]:
        return {**self.stats, "explained": dict(sorted(self.explained.items()))}

    def close(self) -> None:
        if self._bridge is not None:
            self._bridge.close()
            self._bridge = None
        shutil.rmtree(self._scratch, ignore_errors=True)


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the oracle did between two :meth:`DshOracle.summary` calls (one scenario of a run)."""
    out: dict[str, Any] = {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, int)}
    out["explained"] = {k: n - before["explained"].get(k, 0) for k, n in after["explained"].items() if n - before["explained"].get(k, 0)}
    return out


_ACTIVE: list[DshOracle | None] = [None]  # the innermost enabled() block's oracle


def active() -> DshOracle | None:
    """The oracle recoveries are compared with now (``None``: no comparison)."""
    return _ACTIVE[-1]


@contextlib.contextmanager
def enabled(oracle: DshOracle | None) -> Iterator[DshOracle | None]:
    """Compare every recovery inside the block with DSH (``None``: no comparison)."""
    from dsh_sim.evidence.extra import judging

    _ACTIVE.append(oracle)
    try:
        with judging(check):
            yield oracle
    finally:
        _ACTIVE.pop()


@contextlib.contextmanager
def session(install: Installation) -> Iterator[DshOracle]:
    """An oracle for the block, switched on, and its Node process ended after it."""
    oracle = DshOracle(install)
    try:
        with enabled(oracle):
            yield oracle
    finally:
        oracle.close()


def _listed(data: bytes, compression: str) -> bool:
    """Whether the log has a complete header (what a listing needs), by the harness's walk."""
    import json

    import zstandard

    from dsh_sim.adapters.simfs.frames import FrameStructureError, layout_at

    try:
        if compression == "zstd":
            layout = layout_at(data, 0)
            if layout is None:
                return False
            line = zstandard.ZstdDecompressor().decompressobj().decompress(data[: layout.end])
        else:
            line = data[: data.index(b"\n") + 1]
        header = json.loads(line)
    except (ValueError, FrameStructureError, zstandard.ZstdError):
        return False
    return isinstance(header, dict) and header.get("type") == "session"


def ours(life: Lifetime, listed: bool, header: str | None) -> Outcome:
    """What our runtime's recovery said, in v0 terms (the prefix and closers projected together);
    ``header`` is the header it lists, projected (``None`` when not ``listed``)."""
    from dsh_sim.dsh.normalize import Outcome, Refusal, canonical, closer_verdicts, refusal_class
    from dsh_sim.dsh.project import Projector

    if life.boot_error is not None:
        text = f"{type(life.boot_error).__name__}: {life.boot_error}"
        return Outcome(Refusal(refusal_class(text), text, "boot"), listed, header=header)
    report = life.report
    if report is None:
        return Outcome(Refusal("new-session", "recovery started a new session over the existing log", "boot"), listed, header=header)
    projector = Projector()
    stored = [r for e in report.events for r in projector.records(e.to_record())]
    closers = [r for e in getattr(report, "closers", ()) for r in projector.records(e.to_record())]
    return Outcome(None, listed, tuple(map(canonical, stored)), tuple(map(canonical, closers)), closer_verdicts(closers), header=header)


def check(obs: Judge, life: Lifetime, crash: CrashRecord) -> None:
    """After the first boot that follows ``crash``: DSH reads the crash image as we did."""
    from dsh_sim.adapters.simfs.disk import Disk
    from dsh_sim.dsh.diff import compare
    from dsh_sim.dsh.normalize import dsh, listed_header
    from dsh_sim.dsh.project import NotProjectable, project
    from dsh_sim.evidence.invariants.base import fail
    from runtime.persistence.log_format import LogCorruption
    from runtime.persistence.v0_format import V0Unsupported, decode_v0

    oracle = active()
    sim = obs.sim
    if oracle is None or obs.history.seeded is not None:
        return  # a historical source is migration's business (migration_atomic), not DSH's reader
    compression, path = sim.config.compression, sim.config.log_path
    data = Disk.from_image(crash.image).read_path(path)
    if data is None:
        oracle.stats["no_log"] += 1  # nothing on the disk: DSH finds no session, ours starts one
        return
    try:
        v0 = project(data, compression)
    except NotProjectable:
        oracle.stats["not_projectable"] += 1
        return
    assert v0 is not None
    obs.count(NAME)
    oracle.stats["compared"] += 1
    session_dir = os.path.dirname(path)
    location = (os.path.basename(os.path.dirname(session_dir)), os.path.basename(session_dir))
    probe, after = oracle.probe(v0, compression, location, sim.config.session_id)
    try:
        log = decode_v0(v0, compression)
    except (LogCorruption, V0Unsupported, ValueError):
        log = None
    where = f"crash {crash.label} at {crash.point or 'quiescence'} ({crash.phase})"
    listed = _listed(data, compression)
    header = listed_header(v0, compression) if listed else None
    for difference in compare(dsh(probe), ours(life, listed, header), v0, after, log, compression):
        if difference.finding is not None:
            oracle.explained[difference.finding] = oracle.explained.get(difference.finding, 0) + 1
            continue
        oracle.stats["differences"] += 1
        fail(obs, NAME, f"DSH reads the crash image otherwise ({difference.kind}): {difference.detail}", None, where)

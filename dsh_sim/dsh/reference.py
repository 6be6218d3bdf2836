"""DSH's readings recorded once, so that dsh-sim's side of the differential is judged without Node.

A mutation run tests hundreds of mutants of the runtime's v0 reader and migration.  Probing the
real DSH costs ~20 ms a log and a Node process beside every mutant, yet DSH's answers do not
depend on our code.  :func:`record` therefore generates the differential corpus (written and
damaged by the real DSH, :mod:`.generate`, the malformed sources of :mod:`.malformed` included),
probes every log once, and stores each log's bytes, where it lay, and DSH's reading
(zstd-compressed JSON lines, typed through cattrs).  :func:`judge_recorded` reads each stored
log with dsh-sim as it is *now* and compares exactly as ``dsh-sim dsh diff`` does, findings
included: about 2 ms a log, no Node.

A finding explains a difference, so a change that makes dsh-sim *agree* with DSH where DSH is
wrong (tolerating the records after a damaged line, DSH-1) would leave no unexplained
difference.  So the findings each log of the seed-3 corpus gets are pinned
(``pinned-findings.json``, rewritten by ``tools/pin_dsh_findings.py`` with a stated reason), and
:func:`judge_recorded` given ``pinned`` reports a log whose findings moved, either way.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources

import attrs
import cattrs
import zstandard

from dsh_sim.dsh.diff import DshReading, LogDiff, collect, in_parallel, judge, location_of, log_compression, read_with_dsh
from dsh_sim.dsh.generate import generate_corpus
from dsh_sim.dsh.install import DSH_VERSION, Installation
from dsh_sim.dsh.normalize import Outcome
from dsh_sim.errors import InputError

FAMILIES = ("damage", "header", "row", "event", "structure")
FORMAT = 1
PINNED = "pinned-findings.json"
PINNED_SEED = 3
_CONVERTER = cattrs.Converter()


@attrs.frozen
class Recorded:
    """One log of the corpus: its bytes, where it was found, and what the real DSH made of it."""

    name: str  # relative to the corpus root
    location: tuple[str, str]  # (project directory name, session directory name)
    data: bytes
    dsh: DshReading

    @property
    def compression(self) -> str:
        return log_compression(self.name)

    @property
    def family(self) -> str:
        case = self.name.split("/")[1]
        prefix = case.split("-", 1)[0]
        return prefix if prefix in FAMILIES else "damage"


def record(install: Installation, out_path: str, *, seed: int = 3, workers: int = 2) -> int:
    """Generate the corpus, read every log with the real DSH, store it all at ``out_path``."""
    with tempfile.TemporaryDirectory(prefix="dsh-reference-") as scratch:
        root = os.path.join(scratch, "corpus")
        generate_corpus(install, root, seed=seed, sigkills=0)
        paths = list(collect([root]))
        readings = in_parallel(install, paths, workers, lambda bridge, path: read_with_dsh(bridge, path, log_compression(path)))
        lines = [json.dumps({"format": FORMAT, "seed": seed, "logs": len(paths)})]
        for path, reading in zip(paths, readings):
            with open(path, "rb") as handle:
                data = handle.read()
            lines.append(
                json.dumps(
                    {
                        "name": os.path.relpath(path, root).replace(os.sep, "/"),
                        "location": list(location_of(path)),
                        "data": base64.b64encode(data).decode(),
                        "after": None if reading.after is None else base64.b64encode(reading.after).decode(),
                        "dsh": _CONVERTER.unstructure(reading.outcome),
                    }
                )
            )
    blob = zstandard.ZstdCompressor(level=9).compress(("\n".join(lines) + "\n").encode())
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(blob)
    os.replace(tmp, out_path)
    return len(paths)


def load(path: str) -> list[Recorded]:
    """The recorded corpus at ``path`` (refused in one line if it is not one)."""
    try:
        with open(path, "rb") as handle:
            text = zstandard.ZstdDecompressor().decompressobj().decompress(handle.read()).decode()
        head, *rows = text.splitlines()
        if json.loads(head).get("format") != FORMAT:
            raise ValueError(f"not format {FORMAT}")
        return [_recorded(json.loads(row)) for row in rows]
    except (OSError, ValueError, KeyError, TypeError, zstandard.ZstdError, cattrs.BaseValidationError) as err:
        raise InputError(f"{path}: not a recorded DSH reference corpus ({err})") from None


def _recorded(row: dict[str, object]) -> Recorded:
    after = row["after"]
    location = row["location"]
    assert isinstance(location, list) and len(location) == 2
    return Recorded(
        name=str(row["name"]),
        location=(str(location[0]), str(location[1])),
        data=base64.b64decode(str(row["data"])),
        dsh=DshReading(_CONVERTER.structure(row["dsh"], Outcome), None if after is None else base64.b64decode(str(after))),
    )


def judge_recorded(
    recorded: Sequence[Recorded], families: Sequence[str] = FAMILIES, pinned: Mapping[str, Sequence[str]] | None = None
) -> Iterator[str]:
    """Every difference no finding explains, between the recorded DSH readings and dsh-sim now;
    with ``pinned`` (:func:`pinned_findings`), every log whose findings are not the pinned ones."""
    for log in recorded:
        if log.family not in families:
            continue
        diff = judge(log.name, log.compression, log.location, log.data, log.dsh)
        for difference in diff.unexplained:
            yield f"{log.name}: {difference.kind}: {difference.detail}"
        if pinned is not None:
            found, want = _finding_ids(diff), list(pinned.get(log.name, ()))
            if found != want:
                yield f"{log.name}: findings {', '.join(found) or 'none'}, pinned {', '.join(want) or 'none'} ({PINNED})"


def _finding_ids(diff: LogDiff) -> list[str]:
    return sorted({d.finding for d in diff.differences if d.finding is not None})


def findings_of(recorded: Sequence[Recorded]) -> dict[str, list[str]]:
    """The findings each log that has any gets from dsh-sim now (what :data:`PINNED` holds)."""
    out: dict[str, list[str]] = {}
    for log in recorded:
        found = _finding_ids(judge(log.name, log.compression, log.location, log.data, log.dsh))
        if found:
            out[log.name] = found
    return out


def pinned_findings() -> dict[str, list[str]]:
    """The findings pinned for the seed-:data:`PINNED_SEED` corpus (log name → finding ids)."""
    document = json.loads(resources.files("dsh_sim.dsh").joinpath(PINNED).read_text())
    assert (document["seed"], document["dsh"]) == (PINNED_SEED, DSH_VERSION), (document["seed"], document["dsh"])
    findings: dict[str, list[str]] = document["findings"]
    return findings

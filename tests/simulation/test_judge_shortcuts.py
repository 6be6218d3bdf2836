"""Shortcuts and memos of the judges (explore judges thousands of recoveries): each answer
follows every part of what it depends on, and a shortcut keeps refusing what it refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dsh_sim.evidence.oracles.event_records import of_kinds
from runtime.session.events import Event


def test_stray_names_follow_every_part_of_their_memo_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """stray_names is remembered per (entries, lock name, parser): a new entry, another
    parser, another lock name each give a fresh answer."""
    from dsh_sim.adapters.simfs.disk import DirNode
    from dsh_sim.evidence.invariants import residue
    from runtime.persistence import layout

    log = layout.generation_filename(3, "zstd")
    listing = {"entries": ((layout.LOCK_FILENAME, 2), (log, 3))}
    disk = SimpleNamespace(resolve=lambda path: 1, is_dir=lambda ino: True, dir=lambda ino: DirNode(1, listing["entries"]))
    obs = SimpleNamespace(sim=SimpleNamespace(disk=disk, config=SimpleNamespace(log_path=f"/root/s/{log}")))
    assert residue.stray_names(obs) == set()
    assert residue.stray_names(obs) == set()  # (remembered)
    listing["entries"] = ((layout.LOCK_FILENAME, 2), (log, 3), ("x.tmp", 4))
    assert residue.stray_names(obs) == {"x.tmp"}
    monkeypatch.setattr(layout, "parse_generation_filename", lambda name: None)  # no name is a generation now
    assert residue.stray_names(obs) == {"x.tmp", log}
    lock = layout.LOCK_FILENAME
    monkeypatch.setattr(layout, "LOCK_FILENAME", "other.lock")  # the old lock file is a stray name now
    assert residue.stray_names(obs) == {"x.tmp", log, lock}


def _kinds_reference(events, kinds):
    return [e for e in events if (e["type"] if type(e) is dict else e.type) in kinds]


def test_of_kinds_keeps_the_events_of_those_kinds_in_order() -> None:
    records = [{"type": t, "seq": i} for i, t in enumerate(["a", "b", "a", "c", "b"])]
    assert of_kinds(records, frozenset({"a", "c"})) == _kinds_reference(records, {"a", "c"})
    events = [Event(t, i, 0, {}) for i, t in enumerate("abca")]
    assert of_kinds(events, frozenset({"a"})) == _kinds_reference(events, {"a"})
    mixed = [records[0], SimpleNamespace(type="a"), {"type": "b"}]  # records and events in one log: the plain walk
    assert of_kinds(mixed, frozenset({"a"})) == [mixed[0], mixed[1]]
    assert of_kinds([{"type": ["odd"]}, {"type": "a"}], frozenset({"a"})) == [{"type": "a"}]  # (an unhashable type)
    assert of_kinds((), frozenset({"a"})) == ()


def test_the_checker_still_refuses_an_undeclared_point() -> None:
    """Its shortcut past the simulator's own points keeps refusing a name nobody declared."""
    from dsh_sim.evidence.checker import Checker

    checker = Checker.__new__(Checker)
    with pytest.raises(KeyError, match="undeclared named point"):
        checker.on_point(SimpleNamespace(), "no.such.point", {})


def test_idempotent_findings_follow_the_ledger_and_the_services() -> None:
    """check_idempotent_keys remembers its findings per (ledger entries, idempotent flags):
    a new entry, a replaced entry, a service that becomes idempotent are each judged anew."""
    from dsh_sim.adapters.world import World
    from dsh_sim.evidence.invariants.effects import check_idempotent_keys

    def entry(world, service, call_id, key):
        from dsh_sim.adapters.world import LedgerEntry

        return LedgerEntry(len(world.ledger), service, "charge", call_id, key, True, "applied", 0.0, 1)

    class Obs:
        def __init__(self, world):
            self.sim = SimpleNamespace(world=world)
            self.violations = []
            self.checked = {"idempotent_retry_converges": 0}

        def count(self, name):
            self.checked[name] += 1

        def report(self, violation):
            self.violations.append(violation)

    world = World()
    world.ledger.append(entry(world, "payments", "c1", "k1"))
    obs = Obs(world)
    check_idempotent_keys(obs)
    check_idempotent_keys(obs)
    assert obs.violations == [] and obs.checked["idempotent_retry_converges"] == 2
    world.ledger.append(entry(world, "payments", "c1-retry1", "k1"))  # a second effect for the key
    check_idempotent_keys(obs)
    assert [v.call_id for v in obs.violations] == ["k1", "c1"]

    legacy = World()
    legacy.ledger.extend([entry(legacy, "legacy_payments", "c2", "k2"), entry(legacy, "legacy_payments", "c2-retry1", "k2")])
    quiet = Obs(legacy)
    check_idempotent_keys(quiet)
    assert quiet.violations == []  # a service without keys is not judged
    legacy.services["legacy_payments"].idempotent = True
    check_idempotent_keys(quiet)
    assert [v.call_id for v in quiet.violations] == ["k2", "c2"]

    replaced = World()
    replaced.ledger.extend(legacy.ledger)
    replaced.services["legacy_payments"].idempotent = True
    replaced.ledger[1] = entry(replaced, "legacy_payments", "c3", "k3")  # same length, another entry
    fresh = Obs(replaced)
    check_idempotent_keys(fresh)
    assert fresh.violations == []


def test_the_repaired_tail_verdict_follows_the_expectation() -> None:
    """reference.repaired_tail remembers the grammar's findings per expectation: another
    expectation (other stored records, other closers) is judged anew, an equal one alike."""
    from dsh_sim.evidence.oracles import reference

    start = {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}
    end = {"type": "turn/end", "seq": 1, "time": 2, "data": {"turn": 1, "reason": {"kind": "interrupted"}}}
    stray_end = {"type": "turn/end", "seq": 0, "time": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}}
    reference.clear_memos()
    open_turn = reference.Expected((start,), ())
    assert reference.repaired_tail(open_turn) == ((start,), ["the repaired log ends inside turn 1"])
    assert reference.repaired_tail(open_turn)[1] == ["the repaired log ends inside turn 1"]  # (remembered)
    closed = reference.Expected((start,), (end,))  # other closers
    assert reference.repaired_tail(closed) == ((start, end), [])
    broken = reference.Expected((stray_end,), ())  # other stored records
    assert reference.repaired_tail(broken)[1] == ["the repaired log is not well formed: seq 0: turn/end 1 but the open turn is None"]
    assert reference.repaired_tail(reference.Expected((start,), ()))[1] == ["the repaired log ends inside turn 1"]

"""World agreement: the session log and the world's ledger tell the same story for every call.

The ledger is the ground truth of what reached each service.  For every ``tool/result`` of
the simulated tools:

* a **success** means the call's own request reached the service it names, with the
  arguments the model gave and under its own idempotency key; a side effect was applied by
  it — or, at a keyed idempotent service, by the first request with that key, which must have
  meant the same effect (a duplicate key never hides a distinct intended effect); and the
  result carries exactly the response of that request;
* a result saying the call was **not dispatched** (aborted before dispatch, not started, no
  sandbox, refused approval) means nothing of it — not even a read — reached any service;
* nested calls (``batch_pay``), the shell's writes and retries under an earlier key are held
  to the same rules, and every request of a call's tree names that call as its root.

Errors that leave the outcome open (a lost response, a timeout, an injected failure) carry
no claim, so they are not judged.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.world import LedgerEntry
from dsh_sim.adapters.world_tools import SERVICES
from dsh_sim.evidence.oracles.shared_prefix import shared_length

KEYED = frozenset({"payments"})  # services that deduplicate by idempotency key
READS = frozenset({("balances", "read"), ("payments", "lookup")})
# The spec's canonical cancellation results (§4, §5.2): the text and the error info agree.
CANONICAL = {
    "Error: tool call aborted before dispatch": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
    "Error: tool call aborted": {"name": "AbortError", "code": "ABORTED"},
}
NOT_DISPATCHED_CODES = frozenset({"ABORTED_BEFORE_DISPATCH", "TOOL_NOT_STARTED", "SANDBOX_UNAVAILABLE"})
REFUSAL_TEXTS = ("requires approval", "the user rejected", "was cancelled")


@attrs.frozen
class Disagreement:
    call_id: str
    message: str


def _get(event: Any, field: str) -> Any:
    return event[field] if type(event) is dict else getattr(event, field)


def _result_text(data: dict[str, Any]) -> str:
    block = data["message"]["content"][0]
    inner = block.get("content") or [{}]
    return str(inner[0].get("text", ""))


def _is_error(data: dict[str, Any]) -> bool:
    return bool(data["message"]["content"][0].get("isError"))


class Tracker:
    """Judges a log incrementally: feed it new events as they appear, with the ledger as it is.

    A result is judged once, when it is first fed; refusals are judged again against the
    final ledger by :meth:`recheck_refusals` (a request that arrives late still counts).
    """

    def __init__(self, *, workspace: str) -> None:
        self.workspace = workspace
        self.blocks: dict[str, tuple[str, Any]] = {}
        self.index: LedgerIndex | None = None
        self._refusals: list[tuple[str, dict[str, Any]]] = []

    def _index(self, ledger: Sequence[LedgerEntry]) -> LedgerIndex:
        if self.index is None:
            self.index = LedgerIndex.of(ledger)
        else:
            self.index.extend(ledger)
        return self.index

    def feed(self, events: Iterable[Any], ledger: Sequence[LedgerEntry]) -> list[Disagreement]:
        index = self._index(ledger)
        out: list[Disagreement] = []
        for event in events:
            kind, data = _get(event, "type"), _get(event, "data")
            if kind == "assistant/message":
                for block in data["message"]["content"]:
                    if block.get("type") == "tool-call":
                        self.blocks[block["id"]] = (block["name"], parse_arguments(block.get("arguments", "")))
            elif kind == "tool/result":
                out.extend(self._judge(data, index))
        return out

    def _judge(self, data: dict[str, Any], index: LedgerIndex) -> list[Disagreement]:
        call_id = data["message"]["source"]["callId"]
        canonical = _canonical_problem(data)
        if canonical is not None:
            return [Disagreement(call_id, canonical)]
        if _not_dispatched(data):
            self._refusals.append((call_id, data))
            return _judge_refusal(call_id, data, index)
        rootless = _root_problem(call_id, index)
        if rootless is not None:
            return [rootless]
        if call_id not in self.blocks or _is_error(data):
            return []
        name, args = self.blocks[call_id]
        return _judge_success(call_id, name, args, data, index.by_call, index.by_key, self.workspace)

    def recheck_refusals(self, ledger: Sequence[LedgerEntry]) -> list[Disagreement]:
        index = self._index(ledger)
        return [d for call_id, data in self._refusals for d in _judge_refusal(call_id, data, index)]


class LedgerIndex:
    """The ledger's entries by call and by (service, key), and each call's family (itself and
    the calls nested under it, ``call:...``, in the order they first reached the world).

    A tracker starts from the index of the ledger the last tracker began with when its ledger
    extends that one (explore starts a tracker per recovery, over a ledger that is mostly the
    recorded run's): values are tuples, so an index is copied without its entries."""

    def __init__(self) -> None:
        self.entries: tuple[LedgerEntry, ...] = ()
        self.by_call: dict[str, tuple[LedgerEntry, ...]] = {}
        self.by_key: dict[tuple[str, str], tuple[LedgerEntry, ...]] = {}
        self.family: dict[str, tuple[str, ...]] = {}

    @classmethod
    def of(cls, ledger: Sequence[LedgerEntry]) -> LedgerIndex:
        base = _LAST_INDEX[0]
        index = base.copy() if base.entries and shared_length(ledger, base.entries) == len(base.entries) else cls()
        index.extend(ledger)
        _LAST_INDEX[0] = index.copy()
        return index

    def copy(self) -> LedgerIndex:
        other = LedgerIndex()
        other.entries, other.by_call, other.by_key, other.family = self.entries, dict(self.by_call), dict(self.by_key), dict(self.family)
        return other

    def extend(self, ledger: Sequence[LedgerEntry]) -> None:
        fresh = ledger[len(self.entries) :]
        if not fresh:
            return
        for entry in fresh:
            known = self.by_call.get(entry.call_id)
            self.by_call[entry.call_id] = (*known, entry) if known is not None else (entry,)
            if known is None:
                parts = entry.call_id.split(":")
                for end in range(1, len(parts) + 1):
                    head = ":".join(parts[:end])
                    self.family[head] = (*self.family.get(head, ()), entry.call_id)
            if entry.key is not None:
                self.by_key[(entry.service, entry.key)] = (*self.by_key.get((entry.service, entry.key), ()), entry)
        self.entries = (*self.entries, *fresh)

    def reached(self, call_id: str) -> list[tuple[str, tuple[LedgerEntry, ...]]]:
        """Each call of ``call_id``'s family with its entries, in the order they first reached the world."""
        return [(cid, self.by_call[cid]) for cid in self.family.get(call_id, ())]


_LAST_INDEX = [LedgerIndex()]


def check(events: Iterable[Any], ledger: Sequence[LedgerEntry], *, workspace: str) -> list[Disagreement]:
    """Every disagreement between the log ``events`` (records or runtime events) and ``ledger``."""
    return Tracker(workspace=workspace).feed(events, ledger)


def parse_arguments(raw: str) -> Any:
    """A tool call's raw argument text as the spec reads it: empty is ``{}``, non-JSON stays text."""
    if raw == "":
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _canonical_problem(data: dict[str, Any]) -> str | None:
    """A cancellation result whose text and error info disagree (one of them lies)."""
    text, error = _result_text(data), data.get("error")
    expected = CANONICAL.get(text)
    if expected is not None and (error != expected or not _is_error(data)):
        return f"the result reads {text!r} but carries error {error!r}"
    code = (error or {}).get("code")
    for canonical_text, info in CANONICAL.items():
        if code == info["code"] and text != canonical_text:
            return f"the result carries error {code} but reads {text[:60]!r}"
    return None


def _not_dispatched(data: dict[str, Any]) -> bool:
    code = (data.get("error") or {}).get("code")
    return code in NOT_DISPATCHED_CODES or (_is_error(data) and any(t in _result_text(data) for t in REFUSAL_TEXTS))


def _root_problem(call_id: str, index: LedgerIndex) -> Disagreement | None:
    """Every request of the call and of the calls nested under it names the call as its root
    (spec §5.4: ``rootCallId`` is the root of a nested tree, the call's own id at the top)."""
    for cid, entries in index.reached(call_id):
        for entry in entries:
            if entry.root != call_id:
                return Disagreement(
                    call_id, f"the request {cid} reached {entry.service}.{entry.op} naming root call {entry.root!r}, not {call_id!r}"
                )
    return None


def _judge_refusal(call_id: str, data: dict[str, Any], index: LedgerIndex) -> list[Disagreement]:
    """Nothing of a call the log says was not dispatched reached any service (nested calls included)."""
    family = index.reached(call_id)
    reached = [e for cid, entries in family if cid == call_id for e in entries] + [
        e for cid, entries in family if cid != call_id for e in entries
    ]
    if not reached:
        return []
    code = (data.get("error") or {}).get("code") or _result_text(data)[:60]
    what = ", ".join(f"{e.service}.{e.op}" + (" (applied)" if e.applied else "") for e in reached)
    return [Disagreement(call_id, f"the log says the call was not dispatched ({code}), but it reached {what}")]


def _judge_success(
    call_id: str, name: str, args: Any, data: dict[str, Any], by_call: Any, by_key: Any, workspace: str
) -> list[Disagreement]:
    if name in SERVICES:
        return _judge_world_call(call_id, name, args, data, by_call, by_key)
    if name == "batch_pay":
        items = args.get("payments", []) if isinstance(args, dict) else []
        out = []
        for index, item in enumerate(items):
            nested = f"{call_id}:nested:{index}"
            for problem in _effect_problems(nested, "payments", "charge", item, nested, by_call, by_key):
                out.append(Disagreement(call_id, f"batch item {index}: {problem}"))
        return out
    if name == "shell":
        argv = args.get("argv") if isinstance(args, dict) else None
        if isinstance(argv, list) and len(argv) == 3 and argv[0] == "write":
            path = posixpath.normpath(posixpath.join(workspace, argv[1]))
            return [
                Disagreement(call_id, p)
                for p in _effect_problems(call_id, "workspace", "write", {"path": path, "text": argv[2]}, None, by_call, by_key)
            ]
        if by_call.get(call_id):
            return [Disagreement(call_id, f"the shell command {argv!r} reached a service")]
    return []


def _judge_world_call(call_id: str, name: str, args: Any, data: dict[str, Any], by_call: Any, by_key: Any) -> list[Disagreement]:
    service, op = SERVICES[name]
    sent = args if isinstance(args, dict) else {}
    key = str(sent.get("idempotency_key") or call_id) if service in KEYED and (service, op) not in READS else None
    problems = _effect_problems(call_id, service, op, sent, key, by_call, by_key)
    entries = by_call.get(call_id, [])
    if entries:
        last = entries[-1]
        expected_text = repr(sorted(last.response.items()))
        if _result_text(data) != expected_text:
            problems.append(f"the result does not carry this call's response from {service} ({_result_text(data)[:60]!r})")
        meta = data.get("meta") or {}
        if meta.get("key") != (sent.get("idempotency_key") or call_id):
            problems.append(f"the result names idempotency key {meta.get('key')!r}, not the call's own")
    return [Disagreement(call_id, p) for p in problems]


def _effect_problems(call_id: str, service: str, op: str, sent: Any, key: str | None, by_call: Any, by_key: Any) -> list[str]:
    """The call's request reached ``service.op`` with ``sent`` (and ``key``), and — for an
    effectful op — its effect was applied by it or by the first request under that key."""
    entries = by_call.get(call_id, [])
    if not entries:
        return [f"a success result, but no request of this call reached {service}"]
    wrong = [e for e in entries if (e.service, e.op) != (service, op)]
    if wrong:
        return [f"the call reached {wrong[0].service}.{wrong[0].op}, not {service}.{op}"]
    if any(e.args != sent for e in entries):
        return [f"the request carried {entries[0].args!r}, not the model's arguments {sent!r}"]
    if key is not None and any(e.key != key for e in entries):
        return [f"the request was keyed {entries[0].key!r}, not {key!r}"]
    if (service, op) in READS or any(e.applied for e in entries):
        return []
    if key is not None:
        first = next((e for e in by_key.get((service, key), ()) if e.applied), None)
        if first is None:
            return [f"a success result, but no effect under key {key!r} was ever applied at {service}"]
        intended = {k: v for k, v in sent.items() if k != "idempotency_key"}
        original = {k: v for k, v in first.args.items() if k != "idempotency_key"}
        if intended != original:
            return [f"key {key!r} was first used for {original!r}; this call's distinct effect {intended!r} was swallowed as a duplicate"]
        return []
    return [f"a success result, but {service} applied no effect for it"]

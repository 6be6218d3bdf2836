"""The sandbox contract (spec §7): modes, the per-call policy, providers and their refusal.

A provider turns an argv into an *enforcing* argv or raises; it never hands back the
command unconfined, because a silent passthrough would run an agent's command with more
access than the session granted.  ``danger-full-access`` is the one explicit bypass: its
consumers do not call :meth:`SandboxProvider.confine` at all.

This module is pure (no ``os``/``subprocess``): OS backends live in :mod:`runtime.adapters`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

import attrs

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
ConfinableMode = Literal["read-only", "workspace-write"]
Enforcement = Literal["full", "partial"]

SANDBOX_MODES: tuple[str, ...] = ("read-only", "workspace-write", "danger-full-access")
CONFINABLE_MODES: tuple[str, ...] = ("read-only", "workspace-write")
DEFAULT_SANDBOX_MODE: SandboxMode = "read-only"
SANDBOX_MODE_EVENT = "sandbox/mode"
SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"


class SandboxUnavailableError(Exception):
    """A confined mode was requested but no backend can enforce it on this host."""

    name = "SandboxUnavailableError"
    code = SANDBOX_UNAVAILABLE

    def __init__(self, mode: str, detail: str | None = None) -> None:
        message = (
            f'sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing to run the command unconfined.'
        )
        if detail:
            message += f" Runner failure: {detail}"
        super().__init__(message)
        self.mode = mode
        self.detail = detail
        self.message = message


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _rules(values: Iterable[RunnerFailureRule]) -> tuple[RunnerFailureRule, ...]:
    return tuple(values)


def _absolute(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if type(value) is not str or not value.startswith("/") or "\0" in value:
        raise ValueError(f"{attribute.name} must be an absolute path, got {value!r}")


@attrs.frozen
class SandboxPolicy:
    """What one call may touch.  Passed per call, never stored in a provider.

    ``network`` is off unless a policy asks for it: a confined command that could reach the
    network could hand the workspace to anyone, whatever the filesystem rules say.
    """

    mode: SandboxMode = attrs.field(validator=attrs.validators.in_(SANDBOX_MODES))
    workspace_root: str = attrs.field(validator=_absolute)
    session_id: str | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str)))
    network: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


class UnsafeWorkspaceError(Exception):
    """The workspace would expose too much: ``/``, the home directory, an ancestor of either,
    a system directory, or a directory outside the configured root.

    Refused before anything runs: ``workspace-write`` on ``/`` would make the whole host
    writable, and a read-only bind of the home directory would hand its secrets to the command.
    """

    name = "UnsafeWorkspaceError"
    code = "UNSAFE_WORKSPACE"

    def __init__(self, workspace: str, why: str) -> None:
        super().__init__(f'refusing to confine a command to workspace "{workspace}": {why}')
        self.workspace = workspace
        self.why = why


# Host directories a workspace may never be, nor lie inside: binding one writable (or even
# readable, for /proc and /sys) gives away the host.
SYSTEM_DIRS: tuple[str, ...] = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin", "/sys", "/usr")


# Shared top-level directories: fine to work below, never to be the workspace itself (in
# workspace-write, every user's files there would become writable).
SHARED_DIRS: tuple[str, ...] = ("/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var")


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def unsafe_workspace(resolved: str, *, homes: Iterable[str] = (), allowed_root: str | None = None) -> str | None:
    """Why ``resolved`` (a workspace with every symlink resolved) must be refused, else None.

    Pure: the OS adapters resolve the path and find the home directories, then ask here.
    """
    path = posixpath.normpath(resolved)
    if path == "/":
        return "it is the filesystem root"
    for home in (posixpath.normpath(h) for h in homes):
        if home != "/" and _within(home, path):
            return "it is the home directory" if home == path else f"it is an ancestor of the home directory {home}"
    for system in SYSTEM_DIRS:
        if _within(path, system):
            return f"it lies in the system directory {system}"
    if path in SHARED_DIRS:
        return f"it is the shared directory {path} itself (use a directory below it)"
    if allowed_root is not None and not _within(path, posixpath.normpath(allowed_root)):
        return f"it is outside the configured root {allowed_root}"
    return None


@attrs.frozen
class RunnerFailureRule:
    """How to tell the runner's own failure (setup, namespaces) from the command's failure.

    The rule fires when the exit code is not in ``allowed_exit_codes`` and the first stderr
    line, skipping the ``informational_lines`` the runner prints harmlessly, contains one of
    the ``fatal_signatures`` (case-insensitive substrings).  Only the first line counts: a
    runner fails before the command starts, and later lines are the command's own.
    """

    allowed_exit_codes: tuple[int, ...] = attrs.field(converter=_ints)
    fatal_signatures: tuple[str, ...] = attrs.field(converter=_strings)
    informational_lines: tuple[str, ...] = attrs.field(converter=_strings, default=())


@attrs.frozen
class ConfinedArgv:
    """An enforcing argv: runner, profile, separator, then the original argv."""

    argv: tuple[str, ...] = attrs.field(converter=_strings)
    enforcement: Enforcement = attrs.field(validator=attrs.validators.in_(("full", "partial")))
    denial_signatures: tuple[str, ...] = attrs.field(converter=_strings, default=())
    runner_failure_rules: tuple[RunnerFailureRule, ...] = attrs.field(converter=_rules, default=())
    # What this backend leaves unconfined for this call (empty with "full"): said, not hidden.
    unconfined: tuple[str, ...] = attrs.field(converter=_strings, default=())

    def __attrs_post_init__(self) -> None:
        if self.enforcement == "partial" and not self.unconfined:
            raise ValueError("a partial confinement must say what it leaves unconfined")

    def looks_denied(self, stderr: str) -> bool:
        """Whether stderr carries this backend's denial signature (a hint, not a proof)."""
        lowered = stderr.lower()
        return any(signature.lower() in lowered for signature in self.denial_signatures)

    def runner_failure(self, exit_code: int, stderr: str) -> str | None:
        """The runner's failure line if the run failed in the sandbox itself, else None."""
        return detect_runner_failure(self.runner_failure_rules, exit_code, stderr)


def detect_runner_failure(rules: Iterable[RunnerFailureRule], exit_code: int, stderr: str) -> str | None:
    for rule in rules:
        if exit_code in rule.allowed_exit_codes:
            continue
        informational = {line.strip().lower() for line in rule.informational_lines}
        for line in stderr.splitlines():
            lowered = line.strip().lower()
            if not lowered or lowered in informational:
                continue
            if any(signature.lower() in lowered for signature in rule.fatal_signatures):
                return line.strip()
            break
    return None


class SandboxProvider(Protocol):
    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        """Return an enforcing argv, or raise :class:`SandboxUnavailableError`."""
        ...


def check_confinable(argv: Sequence[str], policy: SandboxPolicy) -> ConfinableMode:
    """The checks every provider runs first; programming errors are ``ValueError``."""
    if policy.mode not in CONFINABLE_MODES:
        raise ValueError(
            f'sandbox mode "{policy.mode}" cannot be confined; only {", ".join(CONFINABLE_MODES)} '
            "are (danger-full-access bypasses confinement explicitly, without calling confine)"
        )
    if isinstance(argv, str) or not argv or not all(type(arg) is str for arg in argv):
        raise ValueError("argv must be a non-empty sequence of strings")
    return policy.mode  # type: ignore[return-value]


class UnavailableProvider:
    """The provider when no backend is configured: every confinement is refused."""

    def __init__(self, detail: str | None = None) -> None:
        self._detail = detail

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        raise SandboxUnavailableError(mode, self._detail)


def sandbox_mode_event_data(mode: SandboxMode, *, delegation: bool = False) -> dict[str, Any]:
    """The ``data`` of a ``sandbox/mode`` event."""
    if mode not in SANDBOX_MODES:
        raise ValueError(f"unknown sandbox mode {mode!r}; known modes: {', '.join(SANDBOX_MODES)}")
    return {"mode": mode, "source": "delegation"} if delegation else {"mode": mode}


def effective_sandbox_mode(events: Iterable[Any], default: SandboxMode = DEFAULT_SANDBOX_MODE) -> SandboxMode:
    """The mode of the last ``sandbox/mode`` event, else ``default``.

    A malformed mode event raises instead of being skipped: skipping it could silently
    fall back to an earlier, more permissive mode.
    """
    if default not in SANDBOX_MODES:
        raise ValueError(f"unknown default sandbox mode {default!r}")
    mode: SandboxMode = default
    for event in events:
        if event.type != SANDBOX_MODE_EVENT:
            continue
        data = event.data
        found = data.get("mode") if isinstance(data, dict) else None
        if found not in SANDBOX_MODES:
            seq = getattr(event, "seq", "?")
            raise ValueError(f"sandbox/mode event at seq {seq} has an unknown mode {found!r}")
        mode = found
    return mode

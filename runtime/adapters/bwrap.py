"""The local sandbox backend: bubblewrap (``bwrap``), spec §7.

``bwrap`` being installed proves nothing (user namespaces may be off, a container may
forbid mounts), so the provider runs one trivial confined command before trusting it and
caches the answer; when that fails, :meth:`BubblewrapProvider.confine` refuses with the
probe's failure rather than returning the command unconfined.

Flags beyond the filesystem view are there because without them writes escape:

* ``--cap-drop ALL`` and ``--unshare-user-try``: bwrap run by root (not setuid) keeps every
  capability inside, so the command could ``mount -o remount,rw /``.
* ``--unshare-pid``: with the host's pids in ``/proc``, ``/proc/<pid>/root`` of a process
  of the same user (bwrap's own parent, say) leads back into the host's writable tree.
* ``--new-session``: no ``TIOCSTI`` keystroke injection into the caller's terminal.

Nothing runs at import time; the OS is reached only through the injectable runner.
"""

from __future__ import annotations

import posixpath
import shutil
import subprocess
from collections.abc import Callable, Sequence

import attrs

from runtime.agent.sandbox import (
    ConfinableMode,
    ConfinedArgv,
    RunnerFailureRule,
    SandboxPolicy,
    SandboxUnavailableError,
    check_confinable,
)

PROBE_TIMEOUT_S = 10.0
PRIVATE_TMP = "/tmp"

BWRAP_DENIAL_SIGNATURES: tuple[str, ...] = ("read-only file system", "operation not permitted")

# bwrap's own setup errors (bubblewrap 0.8); `bwrap: execvp ...` is deliberately absent:
# a missing command is the command's failure, not the sandbox's.
BWRAP_FAILURE_RULES: tuple[RunnerFailureRule, ...] = (
    RunnerFailureRule(
        allowed_exit_codes=(0,),
        fatal_signatures=(
            "bwrap: can't ",
            "bwrap: cannot ",
            "bwrap: unable to ",
            "bwrap: failed to ",
            "bwrap: creating new namespace failed",
            "bwrap: no permissions to create new namespace",
            "bwrap: setting up uid map",
            "bwrap: setting up gid map",
            "bwrap: setting pidns failed",
            "bwrap: setting userns2 failed",
            "bwrap: creating newroot failed",
            "bwrap: creating oldroot failed",
            "bwrap: capset failed",
            "bwrap: capget",
            "bwrap: prctl(",
            "bwrap: unexpected capabilities",
            "bwrap: unknown option",
            "bwrap: loopback:",
        ),
        informational_lines=(),
    ),
)


@attrs.frozen
class RunResult:
    exit_code: int
    stdout: str = ""
    stderr: str = ""


Runner = Callable[[Sequence[str], "float | None"], RunResult]
"""Runs an argv to completion: ``runner(argv, timeout_s) -> RunResult``; never raises for a
process that cannot start or times out (exit codes 127 and 124, as a shell reports them)."""


def subprocess_runner(argv: Sequence[str], timeout: float | None = None) -> RunResult:
    try:
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return RunResult(124, "", f"{argv[0]}: timed out after {timeout}s")
    except OSError as err:
        return RunResult(127, "", f"{argv[0]}: {err.strerror or err}")
    return RunResult(
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def bwrap_profile(mode: ConfinableMode, workspace_root: str) -> list[str]:
    """The bwrap options for ``mode``; order matters, later mounts cover earlier ones."""
    root = posixpath.normpath(workspace_root)
    profile = [
        "--unshare-user-try",
        "--unshare-pid",
        "--cap-drop",
        "ALL",
        "--new-session",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        # The backend temp area: private, discarded when the command ends.
        "--tmpfs",
        PRIVATE_TMP,
    ]
    if mode == "workspace-write":
        profile += ["--bind", root, root]
    elif root != "/":
        # Re-expose the workspace (read-only) in case it lies under the private /tmp.
        profile += ["--ro-bind-try", root, root]
    # After the workspace, so that even a workspace of "/" cannot cover them.
    profile += ["--dev", "/dev", "--proc", "/proc", "--setenv", "TMPDIR", PRIVATE_TMP]
    return profile


_UNPROBED = object()


class BubblewrapProvider:
    """A :class:`~runtime.agent.sandbox.SandboxProvider` over a working ``bwrap``."""

    def __init__(
        self,
        bwrap: str = "bwrap",
        *,
        runner: Runner = subprocess_runner,
        which: Callable[[str], str | None] = shutil.which,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self._bwrap = bwrap
        self._runner = runner
        self._which = which
        self._probe_timeout_s = probe_timeout_s
        self._probed: object = _UNPROBED
        self._path: str | None = None

    def probe(self) -> str | None:
        """None when bwrap works here, else why not.  Runs once per provider."""
        if self._probed is _UNPROBED:
            self._probed = self._probe_once()
        return self._probed  # type: ignore[return-value]

    def _probe_once(self) -> str | None:
        path = self._which(self._bwrap)
        if path is None:
            return f"bwrap executable not found: {self._bwrap}"
        argv = [path, *bwrap_profile("read-only", "/"), "--", "true"]
        try:
            result = self._runner(argv, self._probe_timeout_s)
        except Exception as err:  # an injected runner's crash must also mean "unusable"
            return f"bwrap probe raised {type(err).__name__}: {err}"
        if result.exit_code != 0:
            said = " ".join(result.stderr.split()) or "no stderr"
            return f"bwrap probe `true` exited with {result.exit_code}: {said}"
        self._path = path
        return None

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        failure = self.probe()
        if failure is not None or self._path is None:
            raise SandboxUnavailableError(mode, failure or "bwrap probe did not succeed")
        return ConfinedArgv(
            argv=(self._path, *bwrap_profile(mode, policy.workspace_root), "--", *argv),
            enforcement="full",
            denial_signatures=BWRAP_DENIAL_SIGNATURES,
            runner_failure_rules=BWRAP_FAILURE_RULES,
        )

    def run(self, argv: Sequence[str], policy: SandboxPolicy, *, timeout: float | None = None) -> RunResult:
        """Confine and run ``argv``; a sandbox setup failure raises instead of returning."""
        confined = self.confine(argv, policy)
        result = self._runner(confined.argv, timeout)
        failure = confined.runner_failure(result.exit_code, result.stderr)
        if failure is not None:
            raise SandboxUnavailableError(policy.mode, failure)
        return result

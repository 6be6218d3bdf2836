"""The local sandbox backend: bubblewrap (``bwrap``), spec §7.

``bwrap`` being installed proves nothing (user namespaces may be off, a container may
forbid mounts or network namespaces), so the provider runs one trivial confined command with
the same isolation flags before trusting it and caches the answer; when that fails,
:meth:`BubblewrapProvider.confine` refuses with the probe's failure rather than returning the
command unconfined (the provider chain then tries Landlock).

Deny by default, flag by flag, because each one closed an escape:

* ``--unshare-all`` (user where possible, IPC, PID, network, UTS, cgroup where possible):
  without a network namespace the host's interfaces, its loopback listeners and its abstract
  unix sockets are all reachable; ``--share-net`` only when the policy asks for the network.
* ``--cap-drop ALL``: bwrap run by root (not setuid) keeps every capability inside, so the
  command could ``mount -o remount,rw /``.
* ``env -i`` before ``bwrap`` and ``--clearenv`` with an allow-list
  (:func:`~runtime.adapters.sandbox_host.sandbox_env`) after it: the parent's secrets were
  visible in the command's environment, and with ``--clearenv`` alone still in
  ``/proc/1/environ`` (bwrap's own process, inside the sandbox's PID namespace).
* Minimal read-only binds (``/usr``, ``/bin``, ``/lib*``, selected ``/etc`` files) instead of
  ``--ro-bind / /``, which showed ``/etc/shadow`` and ``/root`` to the command.
* A private PID namespace and ``/proc``: ``/proc/<pid>/root`` of a host process led back
  into the host's writable tree.
* ``--new-session`` (no ``TIOCSTI`` into the caller's terminal), ``--die-with-parent``.
* ``/proc/sys`` read-only: bubblewrap covers it only when the directory is writable, and it
  is not (mode 0555), so its sysctl files stayed writable; the command's uid 0 is the host's
  root (mapped 0 → 0), which the kernel lets write a 0644 sysctl without any capability —
  a confined command set the host's ``vm.swappiness`` (and could set ``kernel.core_pattern``).
* The wrapper :mod:`runtime.adapters.sandbox_exec` before ``env -i bwrap``: a fresh session
  keyring and a seccomp filter (``--seccomp``) refusing the keyring syscalls — the command
  read a secret from the runtime's session keyring.
* The workspace is refused when it is ``/``, the home directory, an ancestor of either, a
  system directory, or outside the configured root (``--bind / /`` made everything writable).

Nothing runs at import time; the OS is reached only through the injectable runner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from runtime.adapters import sandbox_exec
from runtime.adapters.sandbox_host import (
    ETC_NETWORK,
    ETC_READ,
    SANDBOX_TMP,
    HostView,
    default_homes,
    host_view,
    resolve_workspace,
    sandbox_env,
)
from runtime.agent.sandbox import (
    ConfinableMode,
    ConfinedArgv,
    RunnerFailureRule,
    SandboxPolicy,
    SandboxUnavailableError,
    check_confinable,
)

PROBE_TIMEOUT_S = 10.0
PRIVATE_TMP = SANDBOX_TMP
WRAPPER_SCRIPT = sandbox_exec.__file__

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
            "sandbox: cannot ",
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


def bwrap_profile(
    mode: ConfinableMode | None,
    workspace: str | None,
    *,
    network: bool = False,
    host: HostView,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The bwrap options; order matters, later mounts cover earlier ones.

    ``workspace`` must already be resolved and checked (:func:`resolve_workspace`); ``None``
    (the probe) shows no workspace at all.
    """
    profile = ["--unshare-all"]
    if network:
        profile.append("--share-net")
    profile += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    for name, value in sorted((env if env is not None else sandbox_env({}, workspace)).items()):
        profile += ["--setenv", name, value]
    for directory in host.binds:
        profile += ["--ro-bind", directory, directory]
    for target, link in host.symlinks:
        profile += ["--symlink", target, link]
    for path in ETC_READ + (ETC_NETWORK if network else ()):
        profile += ["--ro-bind-try", path, path]
    # The backend temp area: private, discarded when the command ends (before the workspace,
    # which may lie under /tmp and must then stay visible).
    profile += ["--tmpfs", PRIVATE_TMP]
    if workspace is not None:
        profile += ["--bind" if mode == "workspace-write" else "--ro-bind", workspace, workspace, "--chdir", workspace]
    # Last: the skeleton bwrap builds (its root, /etc, the mount points) becomes read-only, so
    # the only writable places are the workspace in workspace-write and the private /tmp.
    profile += ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--remount-ro", "/"]
    # The keyring filter, on a descriptor the wrapper (sandbox_exec.py) opens and names here.
    profile += ["--seccomp", sandbox_exec.SECCOMP_FD]
    return profile


_UNPROBED = object()


class BubblewrapProvider:
    """A :class:`~runtime.agent.sandbox.SandboxProvider` over a working ``bwrap``.

    ``allowed_root``, when given, is the directory every workspace must lie in.
    """

    name = "bwrap"

    def __init__(
        self,
        bwrap: str = "bwrap",
        *,
        runner: Runner = subprocess_runner,
        which: Callable[[str], str | None] = shutil.which,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
        realpath: Callable[[str], str] = os.path.realpath,
        homes: Iterable[str] | None = None,
        allowed_root: str | None = None,
        host: HostView | None = None,
        python: str = sys.executable,
    ) -> None:
        self._bwrap = bwrap
        self._python = python
        self._runner = runner
        self._which = which
        self._probe_timeout_s = probe_timeout_s
        self._environ = environ
        self._realpath = realpath
        self._homes = tuple(homes) if homes is not None else None
        self._allowed_root = allowed_root
        self._host = host
        self._probed: object = _UNPROBED
        self._path: str | None = None
        self._env_path: str | None = None

    def _host_view(self) -> HostView:
        if self._host is None:
            self._host = host_view()
        return self._host

    def _wrapper(self) -> tuple[str, ...]:
        return (self._python, "-I", "-S", WRAPPER_SCRIPT, "--")

    def probe(self) -> str | None:
        """None when bwrap works here, else why not.  Runs once per provider."""
        if self._probed is _UNPROBED:
            self._probed = self._probe_once()
        return self._probed  # type: ignore[return-value]

    def _probe_once(self) -> str | None:
        path = self._which(self._bwrap)
        if path is None:
            return f"bwrap executable not found: {self._bwrap}"
        env_path = self._which("env")
        if env_path is None:
            return "env executable not found (needed to start bwrap with an empty environment)"
        argv = [*self._wrapper(), env_path, "-i", path, *bwrap_profile(None, None, host=self._host_view()), "--", "true"]
        try:
            result = self._runner(argv, self._probe_timeout_s)
        except Exception as err:  # an injected runner's crash must also mean "unusable"
            return f"bwrap probe raised {type(err).__name__}: {err}"
        if result.exit_code != 0:
            said = " ".join(result.stderr.split()) or "no stderr"
            return f"bwrap probe `true` exited with {result.exit_code}: {said}"
        self._path, self._env_path = path, env_path
        return None

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        homes = self._homes if self._homes is not None else default_homes()
        workspace = resolve_workspace(policy.workspace_root, realpath=self._realpath, homes=homes, allowed_root=self._allowed_root)
        failure = self.probe()
        if failure is not None or self._path is None or self._env_path is None:
            raise SandboxUnavailableError(mode, failure or "bwrap probe did not succeed")
        env = sandbox_env(os.environ if self._environ is None else self._environ, workspace)
        profile = bwrap_profile(mode, workspace, network=policy.network, host=self._host_view(), env=env)
        return ConfinedArgv(
            argv=(*self._wrapper(), self._env_path, "-i", self._path, *profile, "--", *argv),
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

"""The second Linux sandbox backend: Landlock, for hosts where bubblewrap cannot start.

Bubblewrap needs namespaces; inside some containers (no user namespaces, no mount rights) it
fails, and without a second backend every shell call would be refused.  Landlock needs none:
an unprivileged process restricts itself and every child.  The wrapped argv is
``env -i PYTHON -I -S landlock_exec.py SPEC -- argv...``: ``env -i`` so the runner itself
starts with an empty environment, the runner script (standard library only) so the ruleset
is applied in the child process, never in the runtime.

What it confines: filesystem reads (system program directories, selected ``/etc`` files and
the workspace only; not ``/proc``, not ``/root``), filesystem writes (the workspace and a
private temp directory in ``workspace-write``; ``/dev/null`` and friends always), TCP
bind/connect (ABI v4+), abstract unix sockets and signals to processes outside the sandbox
(ABI v6+), ptrace of outside processes, setuid gains (``no_new_privs``), the environment,
capabilities (all dropped, even when started by root), kernel keyrings (a fresh session
keyring and a seccomp filter), and processes outliving the call (the runner is a subreaper
and kills what the command leaves behind).
What it does not, and so reports as ``partial``: no PID, IPC or UTS namespace (host processes
exist for it, System V IPC is shared), no control over connecting to a unix socket by its path
(a host service listening on one stays reachable), no UDP or other non-TCP network control,
and whatever the kernel's ABI lacks from the list above.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from runtime.adapters import landlock_exec, sandbox_exec
from runtime.adapters.bwrap import Runner, RunResult, subprocess_runner
from runtime.adapters.sandbox_host import (
    DEVICES,
    ETC_NETWORK,
    ETC_READ,
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
RUNNER_SCRIPT = landlock_exec.__file__
LANDLOCK_DENIAL_SIGNATURES: tuple[str, ...] = ("permission denied", "operation not permitted")
LANDLOCK_FAILURE_RULES: tuple[RunnerFailureRule, ...] = (RunnerFailureRule(allowed_exit_codes=(0,), fatal_signatures=("landlock: ",)),)


def unconfined_by(abi: int, network: bool) -> tuple[str, ...]:
    """What a Landlock sandbox of ABI ``abi`` leaves open: said in every confinement."""
    gaps = [
        "processes (no PID namespace: host processes are visible)",
        "System V IPC",
        "hostname (no UTS namespace)",
        "unix sockets by path (connecting to one is not a Landlock right)",
    ]
    if not network:
        gaps.append("network (all of it)" if abi < 4 else "non-TCP network (UDP, ICMP)")
    if abi < 6:
        gaps += ["abstract unix sockets", "signals to host processes"]
    if sandbox_exec.keyring_filter() is None:
        gaps.append(f"kernel keyrings (no keyring filter for {platform.machine()}: root's user keyring is shared)")
    return tuple(gaps)


def landlock_spec(
    mode: ConfinableMode | None, workspace: str | None, *, network: bool, host: HostView, env: Mapping[str, str]
) -> dict[str, object]:
    """The runner's SPEC: what the command may read, write and use (deny by default)."""
    read = [*host.binds, *ETC_READ, *(ETC_NETWORK if network else ())]
    write: list[str] = []
    if workspace is not None:
        (write if mode == "workspace-write" else read).append(workspace)
    return {
        "read": read,
        "write": write,
        "devices": list(DEVICES),
        "temp": mode == "workspace-write",
        "network": network,
        "env": dict(env),
        "cwd": workspace or "/",
    }


class LandlockProvider:
    """A :class:`~runtime.agent.sandbox.SandboxProvider` over the kernel's Landlock LSM."""

    name = "landlock"

    def __init__(
        self,
        *,
        runner: Runner = subprocess_runner,
        python: str = sys.executable,
        which: Callable[[str], str | None] = shutil.which,
        abi: Callable[[], int] = landlock_exec.abi_version,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
        realpath: Callable[[str], str] = os.path.realpath,
        homes: Iterable[str] | None = None,
        allowed_root: str | None = None,
        host: HostView | None = None,
    ) -> None:
        self._runner = runner
        self._python = python
        self._which = which
        self._abi_of = abi
        self._probe_timeout_s = probe_timeout_s
        self._environ = environ
        self._realpath = realpath
        self._homes = tuple(homes) if homes is not None else None
        self._allowed_root = allowed_root
        self._host = host
        self._probed: str | bool | None = False
        self._abi = 0
        self._env_path: str | None = None

    def _host_view(self) -> HostView:
        if self._host is None:
            self._host = host_view()
        return self._host

    def _wrap(self, spec: Mapping[str, object], argv: Sequence[str]) -> tuple[str, ...]:
        assert self._env_path is not None
        return (self._env_path, "-i", self._python, "-I", "-S", RUNNER_SCRIPT, json.dumps(spec, sort_keys=True), "--", *argv)

    @property
    def abi(self) -> int:
        """The kernel's Landlock ABI version (0 before a successful probe)."""
        return self._abi

    def probe(self) -> str | None:
        """None when Landlock confines a command here, else why not.  Runs once."""
        if self._probed is False:
            self._probed = self._probe_once()
        return self._probed  # type: ignore[return-value]

    def _probe_once(self) -> str | None:
        try:
            abi = self._abi_of()
        except Exception as err:
            return f"Landlock ABI probe raised {type(err).__name__}: {err}"
        if abi < 1:
            return "Landlock is not supported or not enabled by this kernel"
        self._env_path = self._which("env")
        if self._env_path is None:
            return "env executable not found (needed to start the Landlock runner with an empty environment)"
        spec = landlock_spec(None, None, network=False, host=self._host_view(), env=sandbox_env({}, None))
        try:
            result = self._runner(self._wrap(spec, ["true"]), self._probe_timeout_s)
        except Exception as err:
            return f"Landlock probe raised {type(err).__name__}: {err}"
        if result.exit_code != 0:
            said = " ".join(result.stderr.split()) or "no stderr"
            return f"Landlock probe `true` exited with {result.exit_code}: {said}"
        self._abi = abi
        return None

    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        homes = self._homes if self._homes is not None else default_homes()
        workspace = resolve_workspace(policy.workspace_root, realpath=self._realpath, homes=homes, allowed_root=self._allowed_root)
        failure = self.probe()
        if failure is not None:
            raise SandboxUnavailableError(mode, failure)
        env = sandbox_env(os.environ if self._environ is None else self._environ, workspace)
        spec = landlock_spec(mode, workspace, network=policy.network, host=self._host_view(), env=env)
        return ConfinedArgv(
            argv=self._wrap(spec, argv),
            enforcement="partial",
            denial_signatures=LANDLOCK_DENIAL_SIGNATURES,
            runner_failure_rules=LANDLOCK_FAILURE_RULES,
            unconfined=unconfined_by(self._abi, policy.network),
        )

    def run(self, argv: Sequence[str], policy: SandboxPolicy, *, timeout: float | None = None) -> RunResult:
        """Confine and run ``argv``; a sandbox setup failure raises instead of returning."""
        confined = self.confine(argv, policy)
        result = self._runner(confined.argv, timeout)
        failure = confined.runner_failure(result.exit_code, result.stderr)
        if failure is not None:
            raise SandboxUnavailableError(policy.mode, failure)
        return result

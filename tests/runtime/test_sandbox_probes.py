"""Escape probes against the real sandbox backends (bubblewrap and Landlock).

Each probe runs from inside the sandbox and tries one way out: a TCP connection to a
listener this test opens on 127.0.0.1 (loopback only, never another address), a host
abstract unix socket, a secret in the parent's environment, files outside the binds, writes
outside the workspace.  Every probe is also run against the flags the bubblewrap provider
used before this hardening (``legacy``), where it must escape: that is what shows each
probe can see the hole it guards.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runtime.adapters.bwrap import BubblewrapProvider, RunResult, subprocess_runner
from runtime.adapters.landlock import LandlockProvider
from runtime.agent.sandbox import SandboxPolicy, UnsafeWorkspaceError

SECRET = "dsh-secret-" + secrets.token_hex(4)


class Legacy:
    """The bubblewrap flags of the provider before this hardening, kept to prove the probes."""

    name = "legacy"

    def run(self, argv: Sequence[str], policy: SandboxPolicy, *, timeout: float | None = None) -> RunResult:
        ws = policy.workspace_root
        rw = ["--bind", ws, ws] if policy.mode == "workspace-write" else ["--ro-bind-try", ws, ws]
        flags = ["--unshare-user-try", "--unshare-pid", "--cap-drop", "ALL", "--new-session", "--die-with-parent"]
        flags += ["--ro-bind", "/", "/", "--tmpfs", "/tmp", *rw, "--dev", "/dev", "--proc", "/proc", "--setenv", "TMPDIR", "/tmp"]
        return subprocess_runner(["bwrap", *flags, "--", *argv], timeout)


def _bwrap() -> BubblewrapProvider:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed (Debian: apt-get install bubblewrap)")
    provider = BubblewrapProvider()
    if (failure := provider.probe()) is not None:
        pytest.skip(f"bwrap does not work on this host: {failure}")
    return provider


def _landlock() -> LandlockProvider:
    provider = LandlockProvider()
    if (failure := provider.probe()) is not None:
        pytest.skip(f"Landlock does not work on this host: {failure}")
    return provider


@pytest.fixture(params=["bwrap", "landlock"])
def box(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> BubblewrapProvider | LandlockProvider:
    monkeypatch.setenv("DSH_PROBE_SECRET", SECRET)
    return _bwrap() if request.param == "bwrap" else _landlock()


@pytest.fixture
def legacy(monkeypatch: pytest.MonkeyPatch) -> Legacy:
    _bwrap()
    monkeypatch.setenv("DSH_PROBE_SECRET", SECRET)
    return Legacy()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "ws" / "present.txt").write_text("hello\n")
    (tmp_path / "outside" / "private.txt").write_text("private\n")
    return tmp_path / "ws", tmp_path / "outside"


def sh(box: object, mode: str, ws: Path, script: str) -> RunResult:
    return box.run(["sh", "-c", script], SandboxPolicy(mode=mode, workspace_root=str(ws)), timeout=60)  # type: ignore[attr-defined]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    yield server
    server.close()


def connected(server: socket.socket) -> bool:
    try:
        peer, _ = server.accept()
    except TimeoutError:
        return False
    peer.close()
    return True


CONNECT = "python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=3)' {port}"


def _landlock_abi_at_least(box: object, abi: int) -> None:
    if isinstance(box, LandlockProvider) and box.abi < abi:
        pytest.skip(f"this kernel's Landlock ABI v{box.abi} has no such control (needs v{abi})")


# ------------------------------------------------------------------- the network


@pytest.mark.slow
def test_tcp_to_a_loopback_listener_fails(box: object, dirs: tuple[Path, Path], listener: socket.socket) -> None:
    _landlock_abi_at_least(box, 4)
    ws, _ = dirs
    for mode in ("read-only", "workspace-write"):
        result = sh(box, mode, ws, CONNECT.format(port=listener.getsockname()[1]))
        assert result.exit_code != 0, result
        assert not connected(listener)


def test_legacy_flags_let_tcp_out(legacy: Legacy, dirs: tuple[Path, Path], listener: socket.socket) -> None:
    result = sh(legacy, "read-only", dirs[0], CONNECT.format(port=listener.getsockname()[1]))
    assert result.exit_code == 0, result
    assert connected(listener)


def test_network_when_the_policy_asks_for_it(dirs: tuple[Path, Path], listener: socket.socket) -> None:
    bwrap = _bwrap()
    policy = SandboxPolicy(mode="read-only", workspace_root=str(dirs[0]), network=True)
    result = bwrap.run(["sh", "-c", CONNECT.format(port=listener.getsockname()[1])], policy, timeout=60)
    assert result.exit_code == 0, result
    assert connected(listener)


ABSTRACT = "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(b\"\\0\" + sys.argv[1].encode())' {name}"


@pytest.fixture
def abstract_socket() -> Iterator[tuple[socket.socket, str]]:
    name = "dsh-probe-" + secrets.token_hex(6)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(b"\0" + name.encode())
    server.listen(4)
    server.settimeout(0.2)
    yield server, name
    server.close()


def test_host_abstract_unix_socket_is_unreachable(box: object, dirs: tuple[Path, Path], abstract_socket: tuple[socket.socket, str]) -> None:
    _landlock_abi_at_least(box, 6)
    server, name = abstract_socket
    result = sh(box, "workspace-write", dirs[0], ABSTRACT.format(name=name))
    assert result.exit_code != 0, result
    assert not connected(server)


def test_legacy_flags_reach_the_abstract_socket(
    legacy: Legacy, dirs: tuple[Path, Path], abstract_socket: tuple[socket.socket, str]
) -> None:
    server, name = abstract_socket
    assert sh(legacy, "read-only", dirs[0], ABSTRACT.format(name=name)).exit_code == 0
    assert connected(server)


# ------------------------------------------------------------- environment, files

ENV_PROBE = "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n'"


def test_a_secret_of_the_parent_is_absent(box: object, dirs: tuple[Path, Path]) -> None:
    result = sh(box, "workspace-write", dirs[0], ENV_PROBE)
    assert result.exit_code == 0 or "PATH=" in result.stdout, result
    assert SECRET not in result.stdout and "DSH_PROBE_SECRET" not in result.stdout
    assert "PATH=" in result.stdout and f"HOME={dirs[0]}" in result.stdout


def test_legacy_flags_pass_the_secret(legacy: Legacy, dirs: tuple[Path, Path]) -> None:
    assert SECRET in sh(legacy, "read-only", dirs[0], ENV_PROBE).stdout


def _read_probe(outside: Path) -> str:
    return f"for f in /etc/shadow {outside}/private.txt; do cat $f && echo LEAKED; done; ls /root && echo LEAKED; ls /home && echo LEAKED"


def test_files_outside_the_binds_are_unreadable(box: object, dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    for mode in ("read-only", "workspace-write"):
        result = sh(box, mode, ws, _read_probe(outside))
        assert "LEAKED" not in result.stdout and "private" not in result.stdout, result


def test_legacy_flags_show_the_host(legacy: Legacy, dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    outside_only = dirs[1].parent / "visible"
    outside_only.mkdir()
    (outside_only / "private.txt").write_text("private\n")
    # the legacy /tmp is private, so look where the host tree shows: /etc and the home dir
    result = sh(legacy, "read-only", ws, "cat /etc/shadow >/dev/null && echo LEAKED; ls ~root >/dev/null && echo LEAKED")
    assert "LEAKED" in result.stdout


def test_ordinary_commands_work_in_both_modes(box: object, dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    script = "ls -l . >/dev/null && cat present.txt && echo x > /dev/null && awk 'BEGIN{print 2}' && python3 -c 'print(3)'"
    for mode in ("read-only", "workspace-write"):
        result = sh(box, mode, ws, script)
        assert (result.exit_code, result.stdout) == (0, "hello\n2\n3\n"), result


# ------------------------------------------------------------------------ writes


@pytest.mark.slow
def test_writes_inside_the_workspace_succeed_outside_fail(box: object, dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, outside = dirs
    before = sorted(os.listdir(outside))
    ok = sh(box, "workspace-write", ws, 'mkdir sub && echo x > sub/f && echo t > "$TMPDIR/scratch" && cat "$TMPDIR/scratch"')
    assert (ok.exit_code, ok.stdout) == (0, "t\n"), ok
    assert (ws / "sub" / "f").read_text() == "x\n"
    host_dir = Path(tempfile.mkdtemp(prefix="dsh-probe-", dir="/var/tmp"))
    try:
        # Outside /tmp every write fails; under /tmp bubblewrap's /tmp is private, so a write
        # may succeed there but never reaches the host (checked below).
        for target in (f"{host_dir}/g", "/etc/dsh-escape", "/usr/dsh-escape", "/dsh-escape"):
            denied = sh(box, "workspace-write", ws, f"echo x > {target}")
            assert denied.exit_code != 0, (target, denied)
        for target in (f"{outside}/g", f"{ws.parent}/h", f"{outside}/private.txt"):
            sh(box, "workspace-write", ws, f"echo x > {target}")
        assert os.listdir(host_dir) == []
    finally:
        shutil.rmtree(host_dir)
    assert sorted(os.listdir(outside)) == before and (outside / "private.txt").read_text() == "private\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "ws"]
    for escape in ("/etc/dsh-escape", "/usr/dsh-escape", "/dsh-escape"):
        assert not os.path.exists(escape)


def test_read_only_refuses_writes_in_the_workspace(box: object, dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    denied = sh(box, "read-only", ws, "echo x > f")
    assert denied.exit_code != 0 and not (ws / "f").exists()
    assert box.confine(["true"], SandboxPolicy(mode="read-only", workspace_root=str(ws))).looks_denied(denied.stderr), denied  # type: ignore[attr-defined]


def test_host_processes_cannot_be_signalled(box: object, dirs: tuple[Path, Path]) -> None:
    _landlock_abi_at_least(box, 6)
    result = sh(box, "workspace-write", dirs[0], f"kill -0 {os.getpid()} && echo REACHED")
    assert "REACHED" not in result.stdout, result


# ---------------------------------------------------------------- unsafe workspaces


def _unsafe(tmp_path: Path) -> list[str]:
    home = os.path.realpath(os.path.expanduser("~"))
    to_root, to_home = tmp_path / "to-root", tmp_path / "to-home"
    to_root.symlink_to("/")
    to_home.symlink_to(home)
    return [
        "/",
        home,
        os.path.dirname(home),
        "/usr",
        "/etc",
        "/proc",
        "/usr/lib",
        str(to_root),
        str(to_home),
        "/tmp/..",
        "/tmp",
        "/home",
        "/var",
    ]


def test_unsafe_workspaces_are_refused_before_anything_runs(box: object, tmp_path: Path) -> None:
    for workspace in _unsafe(tmp_path):
        for mode in ("read-only", "workspace-write"):
            with pytest.raises(UnsafeWorkspaceError, match="refusing to confine"):
                box.confine(["true"], SandboxPolicy(mode=mode, workspace_root=workspace))  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", [BubblewrapProvider, LandlockProvider])
def test_a_workspace_outside_the_configured_root_is_refused(backend: type, tmp_path: Path) -> None:
    (tmp_path / "root" / "ws").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "link-out").symlink_to(tmp_path / "elsewhere")
    provider = backend(allowed_root=str(tmp_path / "root"), runner=lambda argv, timeout: RunResult(0))
    for workspace in (tmp_path / "elsewhere", tmp_path / "root" / "link-out", tmp_path):
        with pytest.raises(UnsafeWorkspaceError, match="outside the configured root"):
            provider.confine(["true"], SandboxPolicy(mode="workspace-write", workspace_root=str(workspace)))


def test_legacy_flags_make_the_whole_host_writable_for_workspace_root(legacy: Legacy, tmp_path: Path) -> None:
    host_dir = Path(tempfile.mkdtemp(prefix="dsh-probe-", dir="/var/tmp"))
    try:
        result = legacy.run(
            ["sh", "-c", f"echo x > {host_dir}/escaped"], SandboxPolicy(mode="workspace-write", workspace_root="/"), timeout=60
        )
        assert result.exit_code == 0 and (host_dir / "escaped").exists()
    finally:
        shutil.rmtree(host_dir)


def test_bwrap_has_its_own_ipc_uts_and_net_namespaces(dirs: tuple[Path, Path]) -> None:
    bwrap = _bwrap()
    kinds = ("ipc", "uts", "net", "pid")
    result = sh(bwrap, "read-only", dirs[0], " ; ".join(f"readlink /proc/self/ns/{kind}" for kind in kinds))
    inside = result.stdout.split()
    assert len(inside) == len(kinds), result
    for kind, seen in zip(kinds, inside):
        assert seen != os.readlink(f"/proc/self/ns/{kind}"), kind


def test_landlock_reports_the_unix_socket_gap_it_has(dirs: tuple[Path, Path]) -> None:
    """Measured, not assumed: a Landlock-confined command reaches a host unix socket by path,
    and the provider says so in ``unconfined``; bubblewrap does not show the socket at all."""
    landlock = _landlock()
    host_dir = Path(tempfile.mkdtemp(prefix="dsh-probe-", dir="/var/tmp"))
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(host_dir / "s.sock"))
        server.listen(1)
        script = f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{host_dir}/s.sock\")'"
        policy = SandboxPolicy(mode="read-only", workspace_root=str(dirs[0]))
        assert landlock.run(["sh", "-c", script], policy, timeout=60).exit_code == 0
        assert any("unix sockets by path" in gap for gap in landlock.confine(["true"], policy).unconfined)
        if shutil.which("bwrap") is not None and BubblewrapProvider().probe() is None:
            assert BubblewrapProvider().run(["sh", "-c", script], policy, timeout=60).exit_code != 0
    finally:
        server.close()
        shutil.rmtree(host_dir)


# ------------------------------------------ kernel state outside the filesystem (held-out probes)

KEYCTL, ADD_KEY = 250, 248  # x86_64
SWAPPINESS = "/proc/sys/vm/swappiness"


def _x86_64() -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("the probe's syscall numbers are x86_64's")


def test_host_sysctls_are_not_writable(box: object, dirs: tuple[Path, Path]) -> None:
    """uid 0 in bubblewrap is the host's root (mapped 0 -> 0): without /proc/sys read-only
    it rewrote a global sysctl with no capability at all.  The probe writes back the value
    already there, so even an escape changes nothing."""
    before = Path(SWAPPINESS).read_text()
    result = sh(box, "workspace-write", dirs[0], f"v=$(cat {SWAPPINESS}) && echo $v > {SWAPPINESS} && echo WROTE")
    assert "WROTE" not in result.stdout, result
    assert Path(SWAPPINESS).read_text() == before


def test_legacy_flags_let_a_global_sysctl_be_written(legacy: Legacy, dirs: tuple[Path, Path]) -> None:
    if os.geteuid() != 0:
        pytest.skip("the sandbox's uid is the host's root only when the test runs as root")
    result = sh(legacy, "workspace-write", dirs[0], f"v=$(cat {SWAPPINESS}) && echo $v > {SWAPPINESS} && echo WROTE")
    assert "WROTE" in result.stdout, result


SESSION_KEY_PROBE = """
import ctypes, os, subprocess, sys, json
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
if libc.syscall(250, 1, b"dsh-probe-session") < 0:  # KEYCTL_JOIN_SESSION_KEYRING
    print("NOKEYS"); sys.exit(0)
libc.syscall(248, b"user", b"dsh-probe-secret", SECRET.encode(), len(SECRET), ctypes.c_long(-3))
inside = (
    "import ctypes; libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long; "
    "k = libc.syscall(250, 10, ctypes.c_long(-3), b'user', b'dsh-probe-secret', 0); "
    "buf = ctypes.create_string_buffer(200); n = libc.syscall(250, 11, ctypes.c_long(k), buf, 200) if k > 0 else -1; "
    "print('READ', buf.value.decode() if n > 0 else '-')"
)
from runtime.agent.sandbox import SandboxPolicy
BOX = BOX_EXPR
print(BOX.run(["python3", "-c", inside], SandboxPolicy(mode="workspace-write", workspace_root=WS), timeout=60).stdout)
"""


def _session_key_probe(box_expr: str, ws: Path) -> str:
    script = SESSION_KEY_PROBE.replace("BOX_EXPR", box_expr).replace("SECRET", repr(SECRET)).replace("WS", repr(str(ws)))
    script = script.replace("SECRET.encode(), len(SECRET)", f"{SECRET!r}.encode(), {len(SECRET)}")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    if "NOKEYS" in done.stdout:
        pytest.skip("this kernel has no keyrings")
    return done.stdout


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_secret_in_the_session_keyring_is_unreadable(backend: str, dirs: tuple[Path, Path]) -> None:
    """Keyrings are neither files nor namespaced by bubblewrap's flags: the command inherited
    the runtime's session keyring and read a key stored there (both backends)."""
    _x86_64()
    _bwrap() if backend == "bwrap" else _landlock()
    expr = "__import__('runtime.adapters.bwrap').adapters.bwrap.BubblewrapProvider()"
    if backend == "landlock":
        expr = "__import__('runtime.adapters.landlock').adapters.landlock.LandlockProvider()"
    out = _session_key_probe(expr, dirs[0])
    assert "READ" in out and SECRET not in out, out


def test_legacy_flags_read_the_session_keyring(dirs: tuple[Path, Path]) -> None:
    _x86_64()
    _bwrap()
    expr = "__import__('tests.runtime.test_sandbox_probes').runtime.test_sandbox_probes.Legacy()"
    out = _session_key_probe(expr, dirs[0])
    assert SECRET in out, out


USER_KEY_PROBE = (
    "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long; "
    "k = libc.syscall(248, b'user', b'{name}', b'x', 1, ctypes.c_long(-4)); print('ADDED' if k > 0 else os.strerror(ctypes.get_errno()))"
)


def _user_key(name: str) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return int(libc.syscall(KEYCTL, 10, ctypes.c_long(-4), b"user", name.encode(), 0))  # KEYCTL_SEARCH in @u


def test_no_key_reaches_the_hosts_user_keyring(box: object, dirs: tuple[Path, Path]) -> None:
    """Sharing the host's user namespace (Landlock), root's user keyring took a key from the
    command, and kept it after the command ended."""
    _x86_64()
    name = "dsh-probe-" + secrets.token_hex(4)
    result = sh(box, "workspace-write", dirs[0], f'python3 -c "{USER_KEY_PROBE.format(name=name)}"')
    found = _user_key(name)
    if found > 0:
        import ctypes

        ctypes.CDLL(None).syscall(KEYCTL, 9, ctypes.c_long(found), ctypes.c_long(-4))  # KEYCTL_UNLINK: leave no trace
    assert found < 0, result


CAPS_PROBE = (
    "import ctypes, socket; libc = ctypes.CDLL(None, use_errno=True); "
    "hdr = (ctypes.c_uint32 * 2)(0x20080522, 0); data = (ctypes.c_uint32 * 6)(); libc.capget(hdr, data); "
    "print('CAPS', [hex(data[i]) for i in range(6)]); n = socket.gethostname().encode(); "
    "print('HOSTNAME-SET' if libc.sethostname(n, len(n)) == 0 else 'hostname refused')"
)


def test_root_keeps_no_capability(box: object, dirs: tuple[Path, Path]) -> None:
    """Landlock confines paths, not privileges: started by root the command kept every
    capability and set the host's hostname (to the same name here), made device nodes, opened
    raw and packet sockets."""
    script = f'python3 -c "{CAPS_PROBE}"; python3 -c "import os; os.mknod(\'node\', 0o600 | 0o020000, os.makedev(1, 3))" && echo MKNOD'
    result = sh(box, "workspace-write", dirs[0], script)
    assert "CAPS ['0x0', '0x0', '0x0', '0x0', '0x0', '0x0']" in result.stdout, result
    assert "HOSTNAME-SET" not in result.stdout and "MKNOD" not in result.stdout, result
    raw = sh(box, "workspace-write", dirs[0], "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' && echo RAW")
    assert "RAW" not in raw.stdout, raw


@pytest.mark.slow
def test_no_process_outlives_the_call(box: object, dirs: tuple[Path, Path]) -> None:
    """A process the command leaves behind in its own session kept running after the call
    returned (Landlock: no PID namespace) and wrote to the workspace later — after the
    session could have switched to read-only."""
    ws = dirs[0]
    script = 'setsid sh -c "sleep 2; echo LATE > late.txt" </dev/null >/dev/null 2>&1 & echo started'
    result = sh(box, "workspace-write", ws, script)
    assert result.stdout.strip() == "started", result
    time.sleep(3.5)
    assert not (ws / "late.txt").exists()

"""The sandbox contract (spec §7) and the bubblewrap provider, the latter against real bwrap."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

import pytest

from runtime.adapters.bwrap import (
    BWRAP_FAILURE_RULES,
    WRAPPER_SCRIPT,
    BubblewrapProvider,
    RunResult,
    bwrap_profile,
    subprocess_runner,
)
from runtime.adapters.sandbox_host import MERGED_USR
from runtime.agent.sandbox import (
    SANDBOX_MODES,
    SANDBOX_UNAVAILABLE,
    ConfinedArgv,
    RunnerFailureRule,
    SandboxPolicy,
    SandboxUnavailableError,
    UnavailableProvider,
    detect_runner_failure,
    effective_sandbox_mode,
    sandbox_mode_event_data,
    unsafe_workspace,
)
from runtime.session.events import Event

PREFIX = 'sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing to run the command unconfined.'


def policy(mode: str, root: object = "/work") -> SandboxPolicy:
    return SandboxPolicy(mode=mode, workspace_root=str(root))  # type: ignore[arg-type]


class FakeRunner:
    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout: float | None) -> RunResult:
        self.calls.append(tuple(argv))
        return self.result


def fake_provider(result: RunResult | None = None) -> tuple[BubblewrapProvider, FakeRunner]:
    runner = FakeRunner(result if result is not None else RunResult(0))
    provider = BubblewrapProvider(
        "bwrap",
        runner=runner,
        which=lambda name: f"/usr/bin/{name}",
        environ={"LANG": "C.UTF-8", "SECRET_TOKEN": "hunter2"},
        realpath=lambda path: path,
        homes=("/home/agent",),
        host=MERGED_USR,
    )
    return provider, runner


# ---------------------------------------------------------------- the contract


def test_error_text_code_and_name() -> None:
    err = SandboxUnavailableError("read-only")
    assert str(err) == err.message == PREFIX.format(mode="read-only")
    assert err.name == "SandboxUnavailableError" and err.code == SANDBOX_UNAVAILABLE == "SANDBOX_UNAVAILABLE"
    assert isinstance(err, Exception)
    detailed = SandboxUnavailableError("workspace-write", "bwrap: Can't mount proc")
    assert str(detailed) == PREFIX.format(mode="workspace-write") + " Runner failure: bwrap: Can't mount proc"


def test_modes_and_policy_validation() -> None:
    assert SANDBOX_MODES == ("read-only", "workspace-write", "danger-full-access")
    with pytest.raises(ValueError):
        policy("read-only", "relative/path")
    with pytest.raises(ValueError):
        policy("no-such-mode")
    assert policy("workspace-write").session_id is None


def _mode_event(seq: int, mode: str, **extra: str) -> Event:
    return Event(type="sandbox/mode", seq=seq, time=0, data={"mode": mode, **extra})


def test_effective_mode_last_event_wins() -> None:
    assert effective_sandbox_mode([], "read-only") == "read-only"
    assert effective_sandbox_mode([]) == "read-only"
    events = [
        _mode_event(0, "workspace-write"),
        Event(type="session/title", seq=1, time=0, data={"title": "x"}),
        _mode_event(2, "danger-full-access", source="delegation"),
        _mode_event(3, "read-only"),
        Event(type="plan/mode", seq=4, time=0, data={"mode": "workspace-write"}),
    ]
    assert effective_sandbox_mode(events, "workspace-write") == "read-only"
    assert effective_sandbox_mode(events[:3], "read-only") == "danger-full-access"


def test_effective_mode_refuses_a_malformed_event() -> None:
    events = [_mode_event(0, "danger-full-access"), _mode_event(1, "read-onyl")]
    with pytest.raises(ValueError, match="seq 1"):
        effective_sandbox_mode(events)


def test_mode_event_data() -> None:
    assert sandbox_mode_event_data("read-only") == {"mode": "read-only"}
    assert sandbox_mode_event_data("workspace-write", delegation=True) == {
        "mode": "workspace-write",
        "source": "delegation",
    }


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_unavailable_provider_always_refuses(mode: str) -> None:
    with pytest.raises(SandboxUnavailableError) as caught:
        UnavailableProvider().confine(["true"], policy(mode))
    assert str(caught.value) == PREFIX.format(mode=mode)


@pytest.mark.parametrize("provider", [UnavailableProvider(), fake_provider()[0]], ids=["unavailable", "bwrap"])
def test_confine_refuses_danger_full_access_and_bad_argv(provider: object) -> None:
    with pytest.raises(ValueError, match="danger-full-access"):
        provider.confine(["true"], policy("danger-full-access"))  # type: ignore[attr-defined]
    for argv in ([], "true", ["ok", 3]):
        with pytest.raises(ValueError, match="argv"):
            provider.confine(argv, policy("read-only"))  # type: ignore[attr-defined]


def test_runner_failure_rules_read_only_the_first_line() -> None:
    rules = BWRAP_FAILURE_RULES
    assert detect_runner_failure(rules, 1, "bwrap: Can't find source path /x: No such file\n") == (
        "bwrap: Can't find source path /x: No such file"
    )
    assert detect_runner_failure(rules, 0, "bwrap: Can't mount proc") is None
    assert detect_runner_failure(rules, 1, "bwrap: execvp nope: No such file or directory") is None
    assert detect_runner_failure(rules, 1, "test failed\nbwrap: Can't mount proc") is None
    custom = (RunnerFailureRule((0, 2), ("BOOM",), ("note: harmless",)),)
    assert detect_runner_failure(custom, 1, "\nnote: harmless\nboom here") == "boom here"
    assert detect_runner_failure(custom, 2, "boom") is None


def test_denial_signatures_are_case_insensitive() -> None:
    confined = ConfinedArgv(argv=["x"], enforcement="full", denial_signatures=("read-only file system",))
    assert confined.looks_denied("sh: 1: cannot create /w/f: Read-Only File System")
    assert not confined.looks_denied("No such file or directory")


# ------------------------------------------------ the bwrap provider, faked OS


def test_provider_probes_lazily_once_and_wraps_argv() -> None:
    provider, runner = fake_provider()
    assert runner.calls == []  # constructing touches nothing
    ro = provider.confine(["sh", "-c", "echo hi"], policy("read-only", "/w"))
    rw = provider.confine(["ls"], policy("workspace-write", "/w/"))
    assert len(runner.calls) == 1 and runner.calls[0][-2:] == ("--", "true")
    assert "/w" not in runner.calls[0]  # the probe shows no workspace
    env = {"HOME": "/w", "LANG": "C.UTF-8", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR": "/tmp"}
    assert ro.argv == (
        sys.executable,
        "-I",
        "-S",
        WRAPPER_SCRIPT,
        "--",
        "/usr/bin/env",
        "-i",
        "/usr/bin/bwrap",
        *bwrap_profile("read-only", "/w", host=MERGED_USR, env=env),
        "--",
        "sh",
        "-c",
        "echo hi",
    )
    assert ro.enforcement == rw.enforcement == "full" and ro.unconfined == rw.unconfined == ()
    assert ro.runner_failure_rules == BWRAP_FAILURE_RULES and ro.denial_signatures
    assert "--bind" not in ro.argv and ro.argv[ro.argv.index("--tmpfs") + 2 :][:3] == ("--ro-bind", "/w", "/w")
    i = rw.argv.index("--bind")
    assert rw.argv[i : i + 3] == ("--bind", "/w", "/w") and rw.argv[-2:] == ("--", "ls")
    for needed in ("--unshare-all", "--cap-drop", "--die-with-parent", "--new-session", "--clearenv"):
        assert needed in ro.argv and needed in rw.argv
    for absent in ("--share-net", "hunter2", "SECRET_TOKEN"):
        assert absent not in ro.argv and absent not in rw.argv
    assert ("--ro-bind", "/", "/") not in [tuple(ro.argv[k : k + 3]) for k in range(len(ro.argv))]


def test_network_only_when_the_policy_asks() -> None:
    provider, _ = fake_provider()
    closed = provider.confine(["true"], policy("read-only", "/w"))
    opened = provider.confine(["true"], SandboxPolicy(mode="read-only", workspace_root="/w", network=True))
    assert "--share-net" not in closed.argv and "/etc/resolv.conf" not in closed.argv
    assert "--share-net" in opened.argv and "/etc/resolv.conf" in opened.argv


def test_failed_probe_refuses_with_runner_failure_and_is_cached() -> None:
    provider, runner = fake_provider(RunResult(1, "", "bwrap: No permissions to create new namespace\n"))
    for _ in range(2):
        with pytest.raises(SandboxUnavailableError) as caught:
            provider.confine(["true"], policy("read-only"))
        assert str(caught.value).startswith(PREFIX.format(mode="read-only") + " Runner failure: ")
        assert "No permissions to create new namespace" in str(caught.value)
    assert len(runner.calls) == 1


def test_crashing_runner_means_unavailable() -> None:
    def runner(argv: Sequence[str], timeout: float | None) -> RunResult:
        raise RuntimeError("no fork for you")

    provider = BubblewrapProvider(runner=runner, which=lambda name: "/usr/bin/bwrap")
    with pytest.raises(SandboxUnavailableError, match="Runner failure: .*no fork for you"):
        provider.confine(["true"], policy("workspace-write"))


@pytest.mark.parametrize("which", [shutil.which, lambda name: name], ids=["which", "exec"])
def test_nonexistent_bwrap_binary_refuses(which: object) -> None:
    provider = BubblewrapProvider("/nonexistent/bin/bwrap", which=which)  # type: ignore[arg-type]
    for mode in ("read-only", "workspace-write"):
        with pytest.raises(SandboxUnavailableError) as caught:
            provider.confine(["true"], policy(mode))
        assert str(caught.value).startswith(PREFIX.format(mode=mode) + " Runner failure: ")
        assert "/nonexistent/bin/bwrap" in str(caught.value)


# ------------------------------------------------------------- real bubblewrap


@pytest.fixture(scope="module")
def bwrap() -> BubblewrapProvider:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed (Debian: apt-get install bubblewrap)")
    provider = BubblewrapProvider()
    failure = provider.probe()
    if failure is not None:
        pytest.skip(f"bwrap is installed but does not work on this host: {failure}")
    return provider


@pytest.fixture
def dirs(tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "ws" / "present.txt").write_text("hello\n")
    return tmp_path / "ws", tmp_path / "outside"


def sh(provider: BubblewrapProvider, mode: str, ws: object, script: str) -> RunResult:
    return provider.run(["sh", "-c", script], policy(mode, ws), timeout=30)


@pytest.mark.bwrap
def test_read_only_blocks_writes_but_not_reads_or_dev_null(bwrap: BubblewrapProvider, dirs) -> None:  # type: ignore[no-untyped-def]
    ws, outside = dirs
    denied = sh(bwrap, "read-only", ws, f"echo x > {ws}/f")
    assert denied.exit_code != 0 and not (ws / "f").exists()
    assert bwrap.confine(["true"], policy("read-only", ws)).looks_denied(denied.stderr), denied.stderr
    assert sh(bwrap, "read-only", ws, f"echo x > {outside}/g").exit_code != 0
    assert list(outside.iterdir()) == []
    ok = sh(bwrap, "read-only", ws, f"echo x > /dev/null && cat {ws}/present.txt")
    assert (ok.exit_code, ok.stdout) == (0, "hello\n"), ok.stderr


@pytest.mark.bwrap
def test_private_tmp_does_not_reach_the_host(bwrap: BubblewrapProvider, dirs, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    ws, _ = dirs
    marker = tmp_path_factory.getbasetemp().parent / "dsh-sandbox-private-tmp-marker"
    result = sh(bwrap, "workspace-write", ws, f"mkdir -p {marker.parent} && echo x > {marker}")
    assert result.exit_code == 0, result.stderr
    assert not marker.exists()


@pytest.mark.bwrap
def test_known_escapes_stay_closed(bwrap: BubblewrapProvider, dirs) -> None:  # type: ignore[no-untyped-def]
    """Root keeps capabilities and host /proc leads out unless bwrap is told otherwise."""
    ws, outside = dirs
    script = (
        f"mount -o remount,rw / 2>/dev/null; echo x > {outside}/remount; "
        f"for p in /proc/[0-9]*; do echo x > $p/root{outside}/viaproc; done 2>/dev/null; "
        "grep CapEff /proc/self/status"
    )
    result = sh(bwrap, "workspace-write", ws, script)
    assert list(outside.iterdir()) == []
    assert "CapEff:\t0000000000000000" in result.stdout


@pytest.mark.bwrap
def test_setup_failure_raises_but_command_failure_returns(bwrap: BubblewrapProvider, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SandboxUnavailableError, match="Runner failure: bwrap: Can't find source path"):
        sh(bwrap, "workspace-write", tmp_path / "missing", "true")
    missing_command = bwrap.run(["dsh-no-such-command"], policy("read-only", tmp_path), timeout=30)
    assert missing_command.exit_code != 0 and "execvp" in missing_command.stderr
    assert subprocess_runner(["/nonexistent/x"]).exit_code == 127


@pytest.mark.parametrize(
    ("workspace", "why"),
    [
        ("/", "filesystem root"),
        ("/home/agent", "the home directory"),
        ("/home", "ancestor of the home directory"),
        ("/usr/local/src", "system directory /usr"),
        ("/proc/1/root", "system directory /proc"),
        ("/tmp", "shared directory /tmp"),
        ("/srv/other", "outside the configured root /srv/ws"),
    ],
)
def test_unsafe_workspaces(workspace: str, why: str) -> None:
    got = unsafe_workspace(workspace, homes=("/home/agent",), allowed_root="/srv/ws")
    assert got is not None and why in got


@pytest.mark.parametrize("workspace", ["/srv/ws", "/srv/ws/project", "/home/agent/project"])
def test_safe_workspaces(workspace: str) -> None:
    assert unsafe_workspace(workspace, homes=("/home/agent",), allowed_root=None if "home" in workspace else "/srv/ws") is None

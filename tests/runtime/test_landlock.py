"""The Landlock provider and the local chain (bwrap, then Landlock, else SANDBOX_UNAVAILABLE).

These run with a faked OS; ``tests/test_sandbox_probes.py`` runs both backends for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from dsh_sim.operations.demo import shell_lines
from runtime.adapters import landlock_exec
from runtime.adapters.bwrap import BubblewrapProvider, RunResult
from runtime.adapters.landlock import RUNNER_SCRIPT, LandlockProvider, landlock_spec, unconfined_by
from runtime.adapters.local_sandbox import LocalSandboxProvider
from runtime.adapters.sandbox_host import MERGED_USR, sandbox_env
from runtime.agent.sandbox import ConfinedArgv, SandboxPolicy, SandboxUnavailableError, UnsafeWorkspaceError
from runtime.session.events import Event


class Runner:
    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout: float | None) -> RunResult:
        self.calls.append(tuple(argv))
        return self.result


def landlock(abi: int = 6, result: RunResult | None = None) -> tuple[LandlockProvider, Runner]:
    runner = Runner(result or RunResult(0))
    provider = LandlockProvider(
        runner=runner,
        python="/py",
        which=lambda name: f"/usr/bin/{name}",
        abi=lambda: abi,
        environ={"LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "hunter2"},
        realpath=lambda path: path,
        homes=("/home/agent",),
        host=MERGED_USR,
    )
    return provider, runner


def policy(mode: str = "workspace-write", ws: str = "/w", network: bool = False) -> SandboxPolicy:
    return SandboxPolicy(mode=mode, workspace_root=ws, network=network)  # type: ignore[arg-type]


def test_confine_wraps_in_the_runner_with_an_empty_environment_and_reports_partial() -> None:
    provider, runner = landlock()
    confined = provider.confine(["ls", "-l"], policy())
    assert confined.argv[:6] == ("/usr/bin/env", "-i", "/py", "-I", "-S", RUNNER_SCRIPT)
    assert confined.argv[-3:] == ("--", "ls", "-l")
    spec = json.loads(confined.argv[6])
    assert spec["write"] == ["/w"] and "/w" not in spec["read"] and spec["temp"] is True and spec["cwd"] == "/w"
    assert "/usr" in spec["read"] and "/etc/passwd" in spec["read"] and "/etc/shadow" not in spec["read"]
    assert "/proc" not in spec["read"] and "/root" not in spec["read"]
    assert spec["env"] == {**sandbox_env({"LANG": "C.UTF-8"}, "/w")} and "hunter2" not in " ".join(confined.argv)
    assert confined.enforcement == "partial" and confined.unconfined == unconfined_by(6, False)
    assert len(runner.calls) == 1 and runner.calls[0][-2:] == ("--", "true")


def test_read_only_mode_has_no_writable_path_and_no_temp_area() -> None:
    spec = json.loads(landlock()[0].confine(["true"], policy("read-only")).argv[6])
    assert spec["write"] == [] and "/w" in spec["read"] and spec["temp"] is False


def test_unconfined_says_what_each_abi_lacks() -> None:
    assert "network (all of it)" in unconfined_by(3, False)
    assert "non-TCP network (UDP, ICMP)" in unconfined_by(4, False) and "abstract unix sockets" in unconfined_by(5, False)
    assert not any("network" in gap for gap in unconfined_by(6, True))
    assert "abstract unix sockets" not in unconfined_by(6, False)
    assert all("processes" in " ".join(unconfined_by(abi, False)) for abi in (1, 4, 7))


def test_handled_rights_grow_with_the_abi() -> None:
    assert landlock_exec.handled_fs(1) == (1 << 13) - 1
    assert landlock_exec.handled_fs(2) & landlock_exec.FS_REFER and not landlock_exec.handled_fs(2) & landlock_exec.FS_TRUNCATE
    assert landlock_exec.handled_fs(5) & landlock_exec.FS_IOCTL_DEV


def test_network_policy_reaches_the_spec_and_etc_files() -> None:
    spec = landlock_spec("read-only", "/w", network=True, host=MERGED_USR, env={})
    assert spec["network"] is True and "/etc/resolv.conf" in spec["read"]  # type: ignore[operator]


@pytest.mark.parametrize(
    ("abi", "result", "why"),
    [
        (0, RunResult(0), "not supported or not enabled"),
        (6, RunResult(125, "", "landlock: cannot set up the sandbox: restrict_self: Operation not permitted\n"), "exited with 125"),
    ],
)
def test_an_unusable_landlock_refuses(abi: int, result: RunResult, why: str) -> None:
    provider, _ = landlock(abi, result)
    for _ in range(2):
        with pytest.raises(SandboxUnavailableError, match=why):
            provider.confine(["true"], policy())


def test_runner_setup_failure_is_the_sandbox_failing() -> None:
    confined = landlock()[0].confine(["true"], policy())
    assert confined.runner_failure(125, "landlock: cannot restrict the command: boom\n") == "landlock: cannot restrict the command: boom"
    assert confined.runner_failure(1, "sh: 1: cannot create f: Permission denied\n") is None
    assert confined.looks_denied("cannot create f: Permission denied")


def test_unsafe_workspace_is_refused_before_probing() -> None:
    provider, runner = landlock()
    with pytest.raises(UnsafeWorkspaceError, match="home directory"):
        provider.confine(["true"], policy(ws="/home"))
    assert runner.calls == []


def test_the_runner_script_refuses_a_bad_command_line() -> None:
    done = subprocess.run([sys.executable, "-I", "-S", RUNNER_SCRIPT, "{}"], capture_output=True, text=True, check=False)
    assert done.returncode == landlock_exec.SETUP_FAILED and done.stderr.startswith("landlock: usage")


def test_a_missing_command_is_the_commands_failure(tmp_path: Path) -> None:
    provider = LandlockProvider()
    if provider.probe() is not None:
        pytest.skip(f"Landlock does not work here: {provider.probe()}")
    result = provider.run(["dsh-no-such-command"], policy("read-only", str(tmp_path)), timeout=30)
    assert result.exit_code == 127 and "dsh-no-such-command" in result.stderr


# ------------------------------------------------------------------------- the chain


def bwrap(result: RunResult) -> BubblewrapProvider:
    return BubblewrapProvider(runner=Runner(result), which=lambda name: f"/usr/bin/{name}", realpath=lambda p: p, homes=(), host=MERGED_USR)


def test_chain_prefers_bwrap() -> None:
    chain = LocalSandboxProvider([bwrap(RunResult(0)), landlock()[0]])
    confined = chain.confine(["true"], policy())
    assert "/usr/bin/bwrap" in confined.argv and confined.enforcement == "full"


def test_chain_falls_back_to_landlock_when_bwrap_cannot_start() -> None:
    failing = bwrap(RunResult(1, "", "bwrap: No permissions to create new namespace\n"))
    chain = LocalSandboxProvider([failing, landlock()[0]])
    confined = chain.confine(["true"], policy())
    assert confined.argv[5] == RUNNER_SCRIPT and confined.enforcement == "partial"


def test_chain_refuses_when_nothing_works_naming_each_backend() -> None:
    chain = LocalSandboxProvider([bwrap(RunResult(1, "", "bwrap: setting up uid map: denied\n")), landlock(0)[0]])
    with pytest.raises(SandboxUnavailableError) as caught:
        chain.confine(["true"], policy("read-only"))
    text = str(caught.value)
    assert text.startswith('sandbox mode "read-only" is requested but no sandbox backend is usable on this host')
    assert "bwrap: bwrap probe `true` exited with 1" in text and "landlock: Landlock is not supported" in text
    with pytest.raises(SandboxUnavailableError):
        LocalSandboxProvider([]).confine(["true"], policy())


def test_chain_passes_an_unsafe_workspace_refusal_through() -> None:
    with pytest.raises(UnsafeWorkspaceError):
        LocalSandboxProvider([bwrap(RunResult(0))]).confine(["true"], policy(ws="/"))


def test_partial_confinement_must_say_what_it_leaves_open() -> None:
    with pytest.raises(ValueError, match="unconfined"):
        ConfinedArgv(argv=["x"], enforcement="partial")


# ------------------------------------------------------------------------- the demo


def _call(seq: int, call_id: str, name: str) -> Event:
    return Event("tool/call", seq, 0, {"callId": call_id, "name": name, "arguments": "{}"})


def _result(seq: int, call_id: str, **extra: object) -> Event:
    return Event("tool/result", seq, 0, {"message": {"source": {"kind": "tool", "callId": call_id}}, **extra})


def test_the_demo_says_when_the_shell_call_was_refused() -> None:
    events = [
        _call(0, "c1", "shell"),
        _result(1, "c1", error={"name": "SandboxUnavailableError", "code": "SANDBOX_UNAVAILABLE"}),
        _call(2, "c2", "shell"),
        _result(3, "c2", meta={"sandbox": "workspace-write", "enforcement": "partial", "unconfined": ["System V IPC"]}),
        _call(4, "c3", "read_file"),
        _result(5, "c3"),
    ]
    lines = shell_lines(events)
    assert len(lines) == 2
    assert lines[0].startswith("shell call c1 was REFUSED: no sandbox backend") and "nothing ran" in lines[0]
    assert lines[1] == "shell call c2 ran confined (workspace-write, enforcement partial; not confined: System V IPC)"


def test_the_demo_run_says_refused_when_no_backend_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dsh_sim.cli.main import main

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # neither bwrap nor env can be found
    assert main(["demo", "--root", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "shell call call-3 was REFUSED" in out and "nothing ran" in out and "bwrap executable not found" in out

"""Landlock runner: run a command restricted by a Landlock ruleset built from a SPEC.

Run as a script (``python -I landlock_exec.py SPEC -- argv...``), never imported by the
command: it uses the standard library only, so it works with a cleared environment and
without the runtime on ``sys.path``.  ``SPEC`` is JSON: the paths readable, writable and
usable as devices, the command's working directory and whole environment, whether it gets a
private temp directory, and whether TCP is allowed.

Landlock (Linux ≥ 5.13) is the second Linux backend of the spec: it needs no namespaces, so
it works where bubblewrap cannot start (some containers).  A ruleset is deny-by-default for
every access right it *handles*; this runner handles every filesystem right the kernel's ABI
knows, TCP bind/connect when the ABI has them (v4+) and the policy has no network, and scopes
abstract unix sockets and signals to the sandbox (v6+).  What it cannot do — a PID, IPC or
UTS namespace, UDP — the provider reports as unconfined.

Before ``exec`` the child also leaves the runtime's session keyring, drops every capability
and installs the keyring filter (:mod:`runtime.adapters.sandbox_exec`): started by root it
kept them all (hostname, device nodes, raw sockets, the host's network configuration).  The
runner is a child subreaper: a process the command leaves behind (``setsid cmd &``) is
re-parented to it, and killed when the command ends — one kept writing to the workspace
after the call had returned.

Exit status: the command's (128 + N for a signal N); 125 with a ``landlock:`` line on stderr
when the sandbox could not be set up (the provider treats that as SANDBOX_UNAVAILABLE).
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import ModuleType
from typing import Any


def _sibling(name: str) -> ModuleType:
    """A module beside this file: run as a script with ``-I``, its directory is not on sys.path."""
    spec = importlib.util.spec_from_file_location(f"_dsh_{name}", os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sandbox_exec = _sibling("sandbox_exec")

SYS_CREATE_RULESET = 444  # the same numbers on every architecture (unified syscall table)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
REAP_SECONDS = 10.0
SETUP_FAILED = 125

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    result = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(result), 0)


def handled_fs(abi: int) -> int:
    """Every filesystem right ABI ``abi`` knows (all of them are denied unless a rule allows)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def build_ruleset(spec: dict[str, Any], abi: int) -> int:
    """The ruleset of ``spec`` as a descriptor (close-on-exec), not yet applied to anyone."""
    libc = _libc()
    fs_rights = handled_fs(abi)
    attr = RulesetAttr(fs_rights, 0, 0)
    if abi >= 4 and not spec["network"]:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rule: every TCP port denied
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    ruleset = _check(libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0), "create_ruleset")
    try:
        grants = [(path, READ) for path in spec["read"]]
        grants += [(path, fs_rights) for path in spec["write"]]
        grants += [(path, FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV) for path in spec["devices"]]
        for path, wanted in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # an optional entry (/lib32, /etc/localtime...) this host lacks
            try:
                allowed = wanted & fs_rights
                if not os.path.isdir(path):
                    allowed &= FILE_RIGHTS  # a rule on a file may carry file rights only
                rule = PathBeneathAttr(allowed, fd)
                _check(libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0), f"add_rule {path}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def enter(ruleset: int, keyring_filter: bytes | None = None) -> None:
    """Restrict the calling process (and its future children) to ``ruleset`` for good: a
    fresh session keyring, no capabilities, ``no_new_privs``, the ruleset, the keyring filter."""
    libc = _libc()
    sandbox_exec.new_session_keyring()
    sandbox_exec.drop_capabilities()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    if keyring_filter is not None:
        sandbox_exec.apply_filter(keyring_filter)


def _die_with_parent() -> None:
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def main(args: list[str]) -> int:
    """Build the ruleset here, apply it in the child only (between fork and exec).

    The runner stays unrestricted so that it can remove the private temp directory (its
    parent, ``/tmp``, is outside every rule) once the command is done.
    """
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("landlock: usage: landlock_exec.py SPEC -- argv...\n")
        return SETUP_FAILED
    spec, argv = json.loads(args[0]), args[2:]
    _die_with_parent()
    temp = None
    try:
        abi = abi_version()
        if abi < 1:
            raise OSError("Landlock is not supported or not enabled by this kernel")
        env = dict(spec["env"])
        if spec["temp"]:
            temp = tempfile.mkdtemp(prefix="dsh-landlock-")
            spec = {**spec, "write": [*spec["write"], temp]}
            env["TMPDIR"] = temp
        ruleset = build_ruleset(spec, abi)
    except (OSError, ValueError, KeyError) as err:
        sys.stderr.write(f"landlock: cannot set up the sandbox: {err}\n")
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        return SETUP_FAILED
    try:
        return _run(argv, env, spec["cwd"], ruleset)
    finally:
        os.close(ruleset)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _run(argv: list[str], env: dict[str, str], cwd: str, ruleset: int) -> int:
    """Run the command restricted, in its own session; its status becomes ours."""

    keyring_filter = sandbox_exec.keyring_filter()

    def confine_child() -> None:
        _die_with_parent()
        enter(ruleset, keyring_filter)

    _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        child = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True, preexec_fn=confine_child)  # noqa: PLW1509 (no threads here)
    except subprocess.SubprocessError as err:  # enter() failed in the child: nothing ran
        sys.stderr.write(f"landlock: cannot restrict the command: {err}\n")
        return SETUP_FAILED
    except OSError as err:
        sys.stderr.write(f"{argv[0]}: {err.strerror or err}\n")  # the command's failure, not the sandbox's
        return 127

    def stop(signum: int, _frame: object) -> None:
        child.send_signal(signum)
        kill_descendants(child.pid)  # a timeout or an interrupt ends every process the command made
        sys.exit(128 + signum)

    for forwarded in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(forwarded, stop)
    code = child.wait()
    kill_descendants()
    return code if code >= 0 else 128 - code


def _children() -> list[int]:
    """This process's children (orphans of the command are re-parented here: subreaper)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def kill_descendants(first: int | None = None) -> None:
    """SIGKILL every process left of the command and reap it, until none is left (each killed
    process's own children are re-parented here in turn)."""
    deadline = time.monotonic() + REAP_SECONDS
    pending = [first] if first is not None else []
    while time.monotonic() < deadline:
        for pid in pending + _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pending = []
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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

Exit status: the command's (128 + N for a signal N); 125 with a ``landlock:`` line on stderr
when the sandbox could not be set up (the provider treats that as SANDBOX_UNAVAILABLE).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any

SYS_CREATE_RULESET = 444  # the same numbers on every architecture (unified syscall table)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
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


def enter(ruleset: int) -> None:
    """Restrict the calling process (and its future children) to ``ruleset`` for good."""
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")


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

    def confine_child() -> None:
        _die_with_parent()
        enter(ruleset)

    try:
        child = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True, preexec_fn=confine_child)  # noqa: PLW1509 (no threads here)
    except subprocess.SubprocessError as err:  # enter() failed in the child: nothing ran
        sys.stderr.write(f"landlock: cannot restrict the command: {err}\n")
        return SETUP_FAILED
    except OSError as err:
        sys.stderr.write(f"{argv[0]}: {err.strerror or err}\n")  # the command's failure, not the sandbox's
        return 127
    for forwarded in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(forwarded, lambda signum, _frame: child.send_signal(signum))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

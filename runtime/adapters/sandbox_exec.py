"""What both local sandbox backends do to a command's process before it runs (standard library only).

Measured escapes this closes (``tests/test_sandbox_probes.py``):

* **Kernel keyrings.**  Keyrings are not files, sockets or namespaced processes: a confined
  command inherited the runtime's *session* keyring and read a secret stored there (both
  backends), and — sharing the host's user namespace (Landlock, or bubblewrap where it
  cannot make one) — added keys to root's *user* keyring, which outlive the command.  The
  command now starts in a fresh anonymous session keyring, and a seccomp filter refuses
  ``add_key``, ``request_key`` and ``keyctl`` (``EPERM``) on the host's architectures.
* **Capabilities** (Landlock; bubblewrap drops them with ``--cap-drop ALL``).  Started by
  root, the command kept every capability: it set the host's hostname, made device nodes in
  the workspace, opened raw and packet sockets and could reconfigure the host's network
  (``CAP_NET_ADMIN`` in the host's network namespace).  :func:`drop_capabilities` empties
  the bounding, ambient, effective, permitted and inheritable sets before ``exec``.

Run as a script it is the bubblewrap wrapper: ``python -I -S sandbox_exec.py -- env -i bwrap
... --seccomp FD ... -- argv``: it joins a fresh session keyring, writes the filter to a pipe,
puts the pipe's descriptor where the argv says :data:`SECCOMP_FD`, and executes the rest
(bubblewrap applies the filter to the command after its own setup).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from typing import Any

SECCOMP_FD = "@DSH_SECCOMP_FD@"  # placeholder in the bubblewrap argv, replaced by the pipe's descriptor

KEYCTL_JOIN_SESSION_KEYRING = 1
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
EPERM = 1

# The audit architecture and (add_key, request_key, keyctl) per ABI a host may run.  x86_64
# programs may also use the x32 ABI (the syscall number with bit 30 set): refused whole.
KEY_SYSCALLS: dict[str, tuple[int, tuple[int, int, int], bool]] = {
    "x86_64": (0xC000003E, (248, 249, 250), True),
    "i386": (0x40000003, (286, 287, 288), False),
    "aarch64": (0xC00000B7, (217, 218, 219), False),
    "arm": (0x40000028, (309, 310, 311), False),
}
HOST_ABIS: dict[str, tuple[str, ...]] = {
    "x86_64": ("x86_64", "i386"),
    "amd64": ("x86_64", "i386"),
    "aarch64": ("aarch64", "arm"),
    "arm64": ("aarch64", "arm"),
}
X32_BIT = 0x40000000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000


def host_abis(machine: str | None = None) -> tuple[str, ...]:
    """The ABIs the filter covers on this host; empty when it knows none of them."""
    return HOST_ABIS.get((machine or platform.machine()).lower(), ())


def keyring_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program refusing the keyring syscalls (``EPERM``), or None when
    this host's architecture is not in :data:`KEY_SYSCALLS` (then keyrings stay unconfined
    and the provider says so)."""
    abis = host_abis(machine)
    if not abis:
        return None
    program: list[tuple[int, int, int, int]] = []
    for abi in abis:
        arch, numbers, x32 = KEY_SYSCALLS[abi]
        checks = [(_JGE_K, X32_BIT)] if x32 else []
        checks += [(_JEQ_K, number) for number in numbers]
        body = [(_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
        body += [(code, len(checks) - i, 0, k) for i, (code, k) in enumerate(checks)]
        body += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO | EPERM)]
        program += [(_LD_W_ABS, 0, 0, 4), (_JEQ_K, 0, len(body), arch), *body]  # seccomp_data.arch
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _fail(what: str) -> None:
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


def new_session_keyring() -> None:
    """Leave the caller's session keyring for a fresh anonymous one (no-op without keyrings)."""
    abis = host_abis()
    if not abis:
        return
    keyctl = KEY_SYSCALLS[abis[0]][1][2]
    if _libc().syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() not in (38, 95):  # ENOSYS, EOPNOTSUPP
        _fail("keyctl(JOIN_SESSION_KEYRING)")


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def apply_filter(program: bytes) -> None:
    """Install ``program`` on the calling thread (``no_new_privs`` must be set, or CAP_SYS_ADMIN)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    if _libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        _fail("prctl(PR_SET_SECCOMP)")


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


def drop_capabilities() -> None:
    """Empty every capability set of the caller, for good: the bounding set (so that an
    ``exec`` by root regains nothing), the ambient set, then effective, permitted and
    inheritable.  Raises when root cannot drop its bounding set."""
    libc = _libc()
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            if errno == 22:  # EINVAL: past the kernel's last capability
                break
            if os.geteuid() == 0:
                _fail(f"prctl(PR_CAPBSET_DROP, {cap})")
            break  # not root: no CAP_SETPCAP, and an exec grants nothing under no_new_privs
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(header), data) != 0:
        _fail("capset")


def main(args: list[str]) -> int:
    """``sandbox_exec.py -- argv...``: fresh session keyring, filter on a pipe, exec argv."""
    if len(args) < 2 or args[0] != "--":
        sys.stderr.write("sandbox: usage: sandbox_exec.py -- argv...\n")
        return 125
    argv = args[1:]
    try:
        new_session_keyring()
        program = keyring_filter()
        if SECCOMP_FD in argv:  # the first one: the wrapper's, never the command's own arguments
            at = argv.index(SECCOMP_FD)
            if program is None:
                argv = argv[: at - 1] + argv[at + 1 :]  # drop "--seccomp" and the placeholder
            else:
                read, write = os.pipe()
                os.write(write, program)  # a few hundred bytes: within any pipe's buffer
                os.close(write)
                os.set_inheritable(read, True)
                argv = [*argv[:at], str(read), *argv[at + 1 :]]
    except OSError as err:
        sys.stderr.write(f"sandbox: cannot set up the sandbox: {err}\n")
        return 125
    try:
        os.execvp(argv[0], argv)
    except OSError as err:
        sys.stderr.write(f"sandbox: cannot run {argv[0]}: {err.strerror or err}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What every local sandbox backend shows of the host, and the checks it runs first.

Deny by default: a confined command sees the system's programs and libraries (``/usr`` and
the ``/bin``, ``/sbin``, ``/lib*`` entries, which are symlinks into ``/usr`` on a merged-usr
system), a handful of ``/etc`` files that ordinary commands read, the workspace, and nothing
else of the host — not ``/root``, not ``/home``, not ``/etc/shadow``, not ``/run``'s sockets.
Its environment is rebuilt from an allow-list, so a secret in the parent's environment never
reaches it.

Both backends (bubblewrap and Landlock) build on this module, so they agree on what is
visible; each turns it into its own mechanism.  Every OS call is injectable for tests.
"""

from __future__ import annotations

import os
import posixpath
import pwd
from collections.abc import Callable, Iterable, Mapping

import attrs

from runtime.agent.sandbox import UnsafeWorkspaceError, unsafe_workspace

# Directories the command's programs come from; on merged-usr hosts all but /usr are symlinks.
SYSTEM_ROOTS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# /etc entries ordinary commands read (dynamic linker, Debian alternatives, user and group
# names for ``ls -l``/``id``, the time zone).  Nothing with a secret in it.
ETC_READ: tuple[str, ...] = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
)

# Only when a policy asks for the network: name resolution and certificates.
ETC_NETWORK: tuple[str, ...] = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
)

# Devices a command may use: the sinks and sources every shell expects.
DEVICES: tuple[str, ...] = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_TMP = "/tmp"

# Variables copied from the parent when set: locale and terminal, never credentials.
ENV_ALLOW: tuple[str, ...] = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TERM",
    "TZ",
)


@attrs.frozen
class HostView:
    """The host's program directories as the sandbox shows them.

    ``binds`` are real directories shown read-only at the same path; ``symlinks`` are
    ``(target, link)`` pairs recreated as symlinks (``/bin -> usr/bin``), so the command sees
    the same layout without a bind of anything but ``/usr``.
    """

    binds: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...] = ()


MERGED_USR = HostView(
    binds=("/usr",),
    symlinks=(("usr/bin", "/bin"), ("usr/sbin", "/sbin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64")),
)


def host_view(
    roots: Iterable[str] = SYSTEM_ROOTS,
    *,
    islink: Callable[[str], bool] = os.path.islink,
    isdir: Callable[[str], bool] = os.path.isdir,
    readlink: Callable[[str], str] = os.readlink,
) -> HostView:
    """The program directories of this host: which are directories and which are symlinks."""
    binds: list[str] = []
    links: list[tuple[str, str]] = []
    for root in roots:
        if islink(root):
            links.append((readlink(root), root))
        elif isdir(root):
            binds.append(root)
    return HostView(tuple(binds), tuple(links))


def default_homes() -> tuple[str, ...]:
    """The home directories to protect: ``$HOME`` and the password database's entry."""
    homes = {os.path.expanduser("~")}
    try:
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return tuple(sorted(os.path.realpath(h) for h in homes if h and h.startswith("/")))


def resolve_workspace(
    workspace: str,
    *,
    realpath: Callable[[str], str] = os.path.realpath,
    homes: Iterable[str] = (),
    allowed_root: str | None = None,
) -> str:
    """The workspace with every symlink resolved, or :class:`UnsafeWorkspaceError`.

    Resolved first: a workspace that is a symlink to ``/`` (or to the home directory) would
    otherwise pass a lexical check and be bound by its target.
    """
    resolved = realpath(posixpath.normpath(workspace))
    root = realpath(allowed_root) if allowed_root is not None else None
    for candidate in {posixpath.normpath(workspace), resolved}:
        why = unsafe_workspace(candidate, homes=homes, allowed_root=root if candidate == resolved else allowed_root)
        if why is not None:
            raise UnsafeWorkspaceError(workspace, why)
    return resolved


def sandbox_env(environ: Mapping[str, str], workspace: str | None, allow: Iterable[str] = ENV_ALLOW) -> dict[str, str]:
    """The whole environment of a confined command: a fixed core plus allow-listed variables."""
    env = {name: environ[name] for name in allow if name in environ and "\0" not in environ[name]}
    env.update(PATH=SANDBOX_PATH, TMPDIR=SANDBOX_TMP, HOME=workspace or SANDBOX_TMP)
    return env

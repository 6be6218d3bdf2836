"""Writing dsh-sim's own outputs (found scenarios, reports, results) without being redirected.

A symbolic link planted at ``scenarios/found`` (or ``reports/``, or one of their files) sent
findings wherever it pointed.  Output directories are therefore checked with ``lstat`` — the
directory itself and, for a relative path, every component below the working directory —
and files are written without following links: a new file by hard-linking a complete temp
file to the name (``link`` fails on any existing name, a link included), a replaced one
through a temp file renamed over the name (a rename replaces a link, it never writes
through it).  A refusal is an :class:`~dsh_sim.errors.InputError`:
one line on stderr, exit status 2.

Every file is also written *durably and whole*: the bytes go to a temp file beside the name,
are fsynced, and only then get the name (``rename`` to replace, ``link`` to create without
replacing), and the directory is fsynced.  A reader — a second run in the same directory, a
``--resume`` after a kill, a report merging runs — sees either no file or the complete file,
never a prefix: two runs that wrote one results file with ``open("w")`` read each other's
half-written JSON ("Extra data").  A temp file is removed on any failure, an interrupt included.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from dsh_sim.errors import InputError


def _components(path: str) -> list[str]:
    """The components to check: all of a relative path, only the last of an absolute one
    (directories above an absolute output path are the user's choice, not ours)."""
    norm = os.path.normpath(path)
    if os.path.isabs(norm):
        return [norm]
    parts = [p for p in norm.split(os.sep) if p not in ("", ".")]
    return [os.path.join(*parts[: i + 1]) for i in range(len(parts))] if ".." not in parts else [norm]


def check_output_dir(path: str, flag: str = "output directory") -> None:
    """Refuse now an output directory that is (or passes through) a symbolic link, or that
    cannot be made or written later; it may be absent."""
    for component in _components(path):
        try:
            mode = os.lstat(component).st_mode
        except FileNotFoundError:
            break
        except OSError as err:
            raise InputError(f"{component}: {flag}: cannot write output here: {err.strerror}") from None
        if stat.S_ISLNK(mode):
            raise InputError(f"{component}: refusing to write output through a symbolic link")
        if not stat.S_ISDIR(mode):
            raise InputError(f"{component}: {flag}: refusing to write output here: not a directory")
    if os.path.exists(path):
        if not os.access(path, os.W_OK | os.X_OK) or not _can_create_in(path):
            raise InputError(f"{path}: {flag}: directory is not writable")
        return
    parent = _existing_parent(path)
    if not os.path.isdir(parent):
        raise InputError(f"{path}: {flag}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or not _can_create_in(parent):
        raise InputError(f"{path}: {flag}: cannot create it ({parent} is not writable)")


def _can_create_in(directory: str) -> bool:
    """Whether a file can really be made here: ``os.access`` says yes to root on a read-only
    mount or in ``/sys``, and the write then failed after the whole run."""
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".dsh-sim-probe-")
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def check_output_file(path: str, flag: str = "output file") -> None:
    """Refuse now an output file that cannot be written later: a symbolic link, a directory,
    a device, or no writable parent."""
    if os.path.islink(path):
        raise InputError(f"{path}: refusing to write output through a symbolic link")
    if os.path.isdir(path):
        raise InputError(f"{path}: {flag} must be a file path, but this is a directory")
    if os.path.exists(path):
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: {flag}: is not a regular file")
        if not os.access(path, os.W_OK):
            raise InputError(f"{path}: {flag}: file is not writable")
        return
    check_output_dir(os.path.dirname(os.path.abspath(path)), flag)


def _existing_parent(path: str) -> str:
    """The nearest ancestor of ``path`` that exists."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    return parent


def ensure_output_dir(path: str) -> str:
    """Create ``path`` (and missing parents) after :func:`check_output_dir`; returns it."""
    check_output_dir(path)
    os.makedirs(path, exist_ok=True)
    check_output_dir(path)  # nothing was planted while the directories were made
    return path


def fsync_directory(path: str) -> None:
    """Make the directory entries of ``path`` durable (a new or renamed name in it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_staged(temp: str, path: str, directory: str) -> None:
    """``temp`` (staged in ``directory``) becomes ``path`` by one rename, durably; on failure it
    is removed, so nothing half-made is left."""
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_directory(directory)


def _staged(directory: str, name: str, text: str | bytes) -> str:
    """A temp file in ``directory`` holding ``text`` (UTF-8) or bytes, fsynced; the caller gives it its name.

    Text a log or a scenario holds may carry a lone surrogate, which has no UTF-8: it is written
    as its escape (``\\ud800``), which is also how JSON spells it, so a JSON document stays exact."""
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    data = text.encode("utf-8", "backslashreplace") if isinstance(text, str) else text
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def write_new(path: str, text: str) -> None:
    """Create ``path`` with ``text``, whole and durable; ``FileExistsError`` if the name exists
    (a link included).  The complete temp file is hard-linked to the name: ``link`` never
    replaces, so two writers of one name cannot both succeed, and nobody sees a prefix."""
    directory = ensure_output_dir(os.path.dirname(path) or ".")
    if os.path.islink(path):
        raise InputError(f"{path}: refusing to write output through a symbolic link")
    temp = _staged(directory, os.path.basename(path), text)
    try:
        os.link(temp, path, follow_symlinks=False)
    except FileExistsError:
        if os.path.islink(path):
            raise InputError(f"{path}: refusing to write output through a symbolic link") from None
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    fsync_directory(directory)


def write_replacing(path: str, text: str | bytes) -> None:
    """Write ``path`` atomically and durably: a temp file beside it, fsynced, renamed over the
    name (never followed), then the directory fsynced."""
    directory = ensure_output_dir(os.path.dirname(path) or ".")
    if os.path.islink(path):
        raise InputError(f"{path}: refusing to write output through a symbolic link")
    replace_staged(_staged(directory, os.path.basename(path), text), path, directory)

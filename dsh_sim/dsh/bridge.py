"""One long-lived Node process running the published DSH backend, spoken to in JSON lines.

Starting Node and mounting the backend costs ~0.3 s; a request costs a few milliseconds,
so thousands of logs cost one start.  Requests go to the child's stdin; replies come back
on a dedicated pipe (``DSH_SIM_BRIDGE_FD``), so nothing the packages print can corrupt the
protocol (their console goes to stderr, kept in a temporary file for error messages).

With a :class:`FsServer`, the child runs with ``--simfs``: its filesystem calls arrive on
the same pipe as ``{"fs": op, "args": ...}`` messages, each answered before the child goes
on — the simulator owns every operation, strictly one at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from typing import IO, Any, Protocol

import attrs

from dsh_sim.dsh.install import Installation, js_dir


def _message_line(message: dict[str, Any]) -> bytes:
    """One request as UTF-8 JSON; a lone surrogate goes escaped (``\\ud800``, what
    ``backslashreplace`` writes), which Node's ``JSON.parse`` reads back as that code unit."""
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


class BridgeError(RuntimeError):
    """The Node side died or broke the protocol (the message carries its stderr tail)."""


class FsServer(Protocol):
    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer one filesystem message: ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": ...}``."""
        ...


@attrs.frozen
class Reply:
    ok: bool
    value: Any = None
    error: dict[str, Any] | None = None

    def unwrap(self) -> Any:
        if not self.ok:
            assert self.error is not None
            raise DshError(self.error)
        return self.value


class DshError(Exception):
    """DSH rejected a request; ``error`` is its serialized exception (name, message, cause)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('name')}: {error.get('message')}")
        self.error = error


Callbacks = Callable[[dict[str, Any]], dict[str, Any]]


class Bridge:
    """``script`` is the Node program (``bridge.mjs``: the storage API; ``route-host.mjs``: the
    whole route); ``callbacks`` answers its ``{"cb": ...}`` messages (the route host's points,
    model, world and approval questions), as ``fs`` answers its filesystem messages.  A
    callback that raises ends the request: the exception propagates out of :meth:`receive`
    with the Node side still waiting for its answer (a crash: the caller kills it)."""

    def __init__(
        self, install: Installation, fs: FsServer | None = None, *, script: str = "bridge.mjs", callbacks: Callbacks | None = None
    ) -> None:
        self.install = install
        self.fs = fs
        self.callbacks = callbacks
        self._rid = 0
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the bridge; closed in close()
        read_fd, write_fd = os.pipe()
        simfs = ["--simfs"] if fs is not None and script == "bridge.mjs" else []
        args = [install.node.node, os.path.join(js_dir(), script), install.home, *simfs]
        env = dict(os.environ, DSH_SIM_BRIDGE_FD=str(write_fd))
        env.pop("NODE_OPTIONS", None)
        try:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr, pass_fds=(write_fd,), env=env
            )
        finally:
            os.close(write_fd)
        self._replies: IO[bytes] = os.fdopen(read_fd, "rb")
        self.hello: dict[str, Any] = self.request("hello").unwrap()

    # -- protocol --------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(_message_line(message))
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise BridgeError(self._died()) from None

    def _died(self) -> str:
        self.proc.poll()
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-5:]
        return f"the DSH bridge (node) stopped (exit {self.proc.returncode}): " + " | ".join(tail)

    def send(self, op: str, **fields: Any) -> int:
        """Start a request without waiting (see :meth:`receive`); its request id."""
        self._rid += 1
        self._write({"rid": self._rid, "op": op, **fields})
        return self._rid

    def receive(self) -> Reply:
        """Serve filesystem messages until the pending request's reply arrives."""
        while True:
            line = self._replies.readline()
            if not line:
                raise BridgeError(self._died())
            message = json.loads(line)
            if "fs" in message:
                if self.fs is None:
                    raise BridgeError(f"unexpected filesystem message without SimFS: {message['fs']}")
                self._write(self.fs.handle(message["fs"], message.get("args", {})))
                continue
            if "cb" in message:
                if self.callbacks is None:
                    raise BridgeError(f"unexpected callback without a handler: {message['cb']}")
                self._write(self.callbacks(message))
                continue
            return Reply(bool(message.get("ok")), message.get("value"), message.get("error"))

    def request(self, op: str, **fields: Any) -> Reply:
        self.send(op, **fields)
        return self.receive()

    # -- lifetime --------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL the Node process (a real crash of the DSH writer)."""
        self.proc.kill()
        self.proc.wait()
        self._close_pipes()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self._replies, self._stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def __enter__(self) -> Bridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

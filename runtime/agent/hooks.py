"""Named waterfalls and mountable plugins.

A waterfall is a chain of handlers ``handler(value, next)`` run in registration order; each
decides whether and with what to call ``next``, and the last ``next`` is the hook's final
function.  Policies (checkpoint, approval, sandbox) are plugins that register handlers
through a :class:`PluginContext`; disposing the context removes exactly what it registered,
so a runtime works with any subset of policies mounted.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs

Next = Callable[[Any], Awaitable[Any]]
# A handler may be async or plain: a plain handler's return value (or its exception) is used
# as is, so a synchronously throwing answerer fails through the same path as an async one.
Handler = Callable[[Any, Next], Any]

HOOK_NAMES = (
    "agent/pre-step",
    "llm/stream",
    "tools/pre-execute",
    "tools/execute",
    "tools/post-execute",
    "approval/request",
)


@attrs.define(eq=False)
class _Entry:
    handler: Handler
    owner: object


class Hooks:
    def __init__(self) -> None:
        self._chains: dict[str, list[_Entry]] = {name: [] for name in HOOK_NAMES}
        self.services: dict[str, Any] = {}  # what mounted plugins provide (e.g. "sandbox")

    def on(self, name: str, handler: Handler, *, owner: object = None, prepend: bool = False) -> Callable[[], None]:
        if name not in self._chains:
            raise KeyError(f"unknown hook {name!r}; known hooks: {', '.join(HOOK_NAMES)}")
        entry = _Entry(handler, owner)
        chain = self._chains[name]
        chain.insert(0, entry) if prepend else chain.append(entry)

        def dispose() -> None:
            if entry in chain:
                chain.remove(entry)

        return dispose

    def count(self, name: str) -> int:
        return len(self._chains[name])

    async def waterfall(self, name: str, value: Any, final: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run the handlers registered now (a snapshot), each deciding whether to call ``next``."""
        return await _Waterfall(tuple(self._chains[name]), final).call(0, value)


@attrs.frozen
class _Waterfall:
    """One run of a chain.  A method, not a closure that calls itself: such a closure is a
    reference cycle, and everything it holds (the handlers, ``final`` and what that closes
    over) would wait for the garbage collector after every hook call instead of going at once."""

    chain: tuple[_Entry, ...]
    final: Callable[[Any], Awaitable[Any]]

    async def call(self, index: int, current: Any) -> Any:
        if index == len(self.chain):
            return await self.final(current)
        result = self.chain[index].handler(current, functools.partial(self.call, index + 1))
        return await result if inspect.isawaitable(result) else result


class Plugin(Protocol):
    name: str

    def apply(self, ctx: PluginContext) -> None: ...


class PluginContext:
    """What a plugin registers through here is removed again by :meth:`dispose`."""

    def __init__(self, hooks: Hooks, plugin: Plugin) -> None:
        self._hooks = hooks
        self.plugin = plugin
        self._disposers: list[Callable[[], None]] = []
        self.disposed = False

    @property
    def hooks(self) -> Hooks:
        return self._hooks

    def on(self, name: str, handler: Handler, *, prepend: bool = False) -> None:
        self._disposers.append(self._hooks.on(name, handler, owner=self.plugin, prepend=prepend))

    def on_dispose(self, callback: Callable[[], None]) -> None:
        self._disposers.append(callback)

    def provide(self, name: str, service: Any) -> None:
        """Offer a service to tools and other plugins until this plugin is disposed."""
        services = self._hooks.services
        if name in services:
            raise ValueError(f"a {name!r} service is already provided")
        services[name] = service

        def withdraw() -> None:
            if services.get(name) is service:
                del services[name]

        self._disposers.append(withdraw)

    def dispose(self) -> None:
        while self._disposers:
            self._disposers.pop()()
        self.disposed = True


def mount(hooks: Hooks, plugin: Plugin) -> PluginContext:
    ctx = PluginContext(hooks, plugin)
    plugin.apply(ctx)
    return ctx

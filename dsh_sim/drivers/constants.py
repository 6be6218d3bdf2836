"""A fixed pool of "local constants" for Hypothesis, so a fuzz seed means the same everywhere.

Hypothesis (6.13x on) sometimes draws, instead of a random value, a literal found in the
source of the *local* modules that happen to be in ``sys.modules`` — re-scanned whenever a
module is imported, even during a run.  So the same seed and example count generated
different examples depending on what the process had imported before and meanwhile: the CLI
(which imports more) differed from a Dask worker, and both from ``dsh-sim fuzz`` — a
campaign's fuzz counts depended on where a shard ran.  Inside :func:`fixed_constants` the pool
is the literals of the whole project — every module of ``runtime`` and ``dsh_sim``, read from
their files in sorted order — the same in every process, whatever was imported.

Parsing every module for its literals cost about a second of CPU per process (a fuzz run, a
campaign shard, the benchmark under valgrind); :mod:`dsh_sim.drivers.constants_cache` keeps
each file's literals on disk, keyed by the bytes of every file, and rebuilds the very same
pool from them (:func:`project_constants`).

This reaches into Hypothesis internals (``providers._get_local_constants``, its constant
visitor); Hypothesis is pinned below 7, and ``tests/test_campaign_dask.py`` compares fuzz
counts across processes.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

import dsh_sim
import runtime
from dsh_sim.drivers import constants_cache


def project_sources() -> list[tuple[str, bytes]]:
    """Every module of ``runtime`` and ``dsh_sim`` (path relative to its package's parent,
    bytes), packages in that order, directories and files sorted."""
    sources = []
    for package in (runtime, dsh_sim):
        root = os.path.dirname(os.path.abspath(package.__file__ or ""))
        parent = os.path.dirname(root)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    with open(path, "rb") as handle:
                        sources.append((os.path.relpath(path, parent), handle.read()))
    return sources


@functools.cache
def project_constants() -> Any:
    """The literals of every module of ``runtime`` and ``dsh_sim``, as Hypothesis collects
    them from a module: what it saw in a process that had imported the whole project."""
    return constants_cache.pool(project_sources())


@contextlib.contextmanager
def fixed_constants() -> Iterator[None]:
    """Hypothesis draws its local constants from :func:`project_constants` while inside."""
    from hypothesis.internal.conjecture import providers

    original = providers._get_local_constants
    pool = project_constants()
    providers._get_local_constants = lambda: pool
    providers.CONSTANTS_CACHE.cache.clear()  # it holds choices computed from the previous pool
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()

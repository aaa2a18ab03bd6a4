"""The query report: the slowest recent searches of this process.

ZCatalog's *Query Report* tab lists the searches that took longest.  Here
each search's statements are timed as :mod:`~plone.pgcatalog.database`
runs them; the searches are kept in memory (never written: read-only
requests stay read-only), grouped by the shape of their query, at most
:data:`KEEP` of them, the slowest kept.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from plone.pgcatalog.connection import fetch
from typing import Any

import threading
import time


__all__ = ["KEEP", "Entry", "clear", "entries", "explain", "note_statement", "searching"]

KEEP = 50
"""Query shapes kept, the slowest ones."""

_statements: ContextVar[list | None] = ContextVar("pgcatalog_statements", default=None)
_lock = threading.Lock()
_entries: dict[str, Entry] = {}


@dataclass
class Entry:
    """One query shape: how often it ran and how long it took, with the
    slowest run's statement (for its plan)."""

    key: str
    count: int = 0
    total: float = 0.0  # seconds
    slowest: float = 0.0
    sql: str = ""
    params: tuple = ()

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


def _shape(query: dict) -> str:
    """The query's indexes and options, without their values."""
    return _shape_of(
        tuple([(name, tuple(value) if isinstance(value, dict) else ()) for name, value in query.items()])
    )


@lru_cache(maxsize=256)
def _shape_of(names: tuple[tuple[Any, tuple], ...]) -> str:
    parts = []
    for name, keys in sorted(names, key=lambda part: str(part[0])):
        options = sorted(str(k) for k in keys if k != "query")
        parts.append(f"{name}({', '.join(options)})" if options else str(name))
    return ", ".join(parts)


def searching[T](query: dict, search: Callable[[dict], T]) -> T:
    """*search* of *query*, its statements timed; the search is kept if it
    is among the slowest."""
    statements: list = []
    token = _statements.set(statements)
    started = time.perf_counter()
    try:
        return search(query)
    finally:
        _statements.reset(token)
        _note(_shape(query), time.perf_counter() - started, statements)


def note_statement(sql: str, params: list, seconds: float) -> None:
    """Called for each statement run; kept when a search is timing."""
    statements = _statements.get()
    if statements is not None:
        statements.append((seconds, sql, tuple(params)))


def _note(key: str, seconds: float, statements: list) -> None:
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            if len(_entries) >= KEEP:
                fastest = min(_entries.values(), key=lambda e: e.slowest)
                if fastest.slowest >= seconds:
                    return
                del _entries[fastest.key]
            entry = _entries[key] = Entry(key)
        entry.count += 1
        entry.total += seconds
        if seconds >= entry.slowest:
            entry.slowest = seconds
            if statements:
                _, entry.sql, entry.params = max(statements, key=lambda s: s[0])


def entries() -> list[Entry]:
    """The kept searches, slowest first."""
    with _lock:
        return sorted(_entries.values(), key=lambda e: e.slowest, reverse=True)


def clear() -> None:
    with _lock:
        _entries.clear()


def explain(context: Any, entry: Entry) -> str:
    """PostgreSQL's plan of *entry*'s slowest statement (not run again)."""
    if not entry.sql:
        return ""
    return "\n".join(line for (line,) in fetch(context, f"EXPLAIN {entry.sql}", list(entry.params)))

"""The catalog's own connections: a psycopg pool per DSN.

They serve searches when no storage connection is at hand, and those that
go to a replica (``PGCATALOG_READ_DSN``).  Within a request one connection
is reused by every search and given back at the end of the request by an
``IPubEnd`` subscriber; outside a request one is borrowed for one search.
Their sessions run autocommit, without JIT, under the statement timeout of
the moment.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from plone.pgcatalog import settings
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool

import psycopg
import threading


__all__ = [
    "close_pools",
    "get_pool",
    "held_connection",
    "release_request_connection",
    "request_connection",
    "session_fetch",
    "set_session",
    "timeout_sql",
]


_pools: dict[str, ConnectionPool] = {}
_pools_lock = threading.Lock()
_local = threading.local()


def get_pool(dsn: str) -> ConnectionPool:
    """The pool of *dsn*, made with the settings of the moment (see
    :mod:`plone.pgcatalog.settings`): ``pool-max`` connections.  A search
    waits for one at most ``pool-timeout``, read at each wait."""
    with _pools_lock:
        pool = _pools.get(dsn)
        if pool is None:
            pool = _pools[dsn] = ConnectionPool(
                dsn,
                min_size=1,
                max_size=settings.pool_max(),
                timeout=settings.pool_timeout(),
                kwargs={"autocommit": True},
                check=ConnectionPool.check_connection,
                open=True,
                name="plone.pgcatalog",
            )
        return pool


def close_pools() -> None:
    """Close every pool; a connection this thread held from one goes too."""
    _local.held = None
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def request_connection(dsn: str, timeout: float | None = None) -> psycopg.Connection:
    """The pooled connection of the current request, checked out once
    (waiting at most *timeout* seconds, by default ``pool-timeout``)."""
    held = getattr(_local, "held", None)
    if held is not None and held[0] == dsn and not held[1].closed:
        return held[1]
    release_request_connection()
    conn = get_pool(dsn).getconn(timeout=settings.pool_timeout() if timeout is None else timeout)
    _local.held = (dsn, conn)
    return conn


def release_request_connection(event: Any = None) -> None:
    """IPubEnd subscriber: give the request's connection back to the pool."""
    held = getattr(_local, "held", None)
    if held is None:
        return
    _local.held = None
    dsn, conn = held
    pool = _pools.get(dsn)
    if pool is not None:
        pool.putconn(conn)


def held_connection() -> psycopg.Connection | None:
    """The pooled connection the current thread holds, if any (for tests)."""
    held = getattr(_local, "held", None)
    return None if held is None else held[1]


def timeout_sql(timeout: int, scope: str = "LOCAL") -> str:
    """``SET`` the statement timeout to *timeout* ms (0: the server's)."""
    return (
        f"SET {scope} statement_timeout = {int(timeout)}"
        if timeout
        else f"SET {scope} statement_timeout TO DEFAULT"
    )


# connection -> the statement timeout its session has (None: the server's)
_session_timeouts: WeakKeyDictionary = WeakKeyDictionary()
_NEW = object()  # a session the catalog has not set up yet


def set_session(conn: psycopg.Connection, timeout: int | None) -> None:
    """Give the session of a connection of the catalog's own (only catalog
    reads use it) the statement timeout *timeout* (None: whichever it has,
    for reads of rows by id, which nothing makes slow), JIT and parallel
    workers off (see :data:`~plone.pgcatalog.connection.NO_JIT`,
    ``NO_PARALLEL``): a round trip only when the
    setting changed since the session last had it."""
    known = _session_timeouts.get(conn, _NEW)
    if timeout is None and known is not _NEW:
        return
    if known is _NEW or known != timeout:
        if known is _NEW:
            conn.execute("SET SESSION jit = off")
            conn.execute("SET SESSION max_parallel_workers_per_gather = 0")
        conn.execute(timeout_sql(timeout or 0, "SESSION"))
        _session_timeouts[conn] = timeout


def session_fetch(conn: psycopg.Connection, sql: str, params, timeout: int | None = 0) -> list[tuple]:
    """Rows of a read on a connection of the catalog's own."""
    set_session(conn, timeout)
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(sql, params)
        return cur.fetchall()

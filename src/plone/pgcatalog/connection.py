"""Where searches get their PostgreSQL connection.

In Plone the catalog lives in the same database as the content, so a
search runs on the storage's own connection, inside the REPEATABLE READ
snapshot the object loads use (catalog and objects agree).  A savepoint
keeps a failing search from aborting that snapshot.

When no storage connection is at hand, or when searches are routed to a
separate (read replica) DSN, a psycopg pool serves them: within a request
one connection is reused by every search and given back at the end of the
request by an ``IPubEnd`` subscriber; outside a request it is borrowed for
one search.
"""

from __future__ import annotations

from Acquisition import aq_base
from psycopg import pq
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool

import os
import psycopg
import threading


READ_DSN_ENV = "PGCATALOG_READ_DSN"

_pools: dict[str, ConnectionPool] = {}
_pools_lock = threading.Lock()
_local = threading.local()


def jar_of(obj):
    """The ZODB connection of *obj*, or of its nearest stored container
    (an object added in this transaction has no jar of its own yet)."""
    for holder in getattr(obj, "aq_chain", (obj,)):
        jar = getattr(aq_base(holder), "_p_jar", None)
        if jar is not None:
            return jar
    return None


def storage_instance(obj):
    """The zodb-pgjsonb storage instance behind *obj*'s ZODB connection."""
    jar = jar_of(obj)
    # After a savepoint ZODB swaps in a TmpStore; the real one stays here.
    # (No truthiness test: a storage's len() counts its objects in SQL.)
    storage = getattr(jar, "_normal_storage", None)
    if storage is None:
        storage = getattr(jar, "_storage", None)
    if storage is None or not hasattr(storage, "pg_connection"):
        return None
    return storage


def storage_dsn(obj) -> str | None:
    instance = storage_instance(obj)
    if instance is None:
        return None
    return getattr(instance._main, "_dsn", None)


def get_pool(dsn: str) -> ConnectionPool:
    with _pools_lock:
        pool = _pools.get(dsn)
        if pool is None:
            pool = _pools[dsn] = ConnectionPool(
                dsn,
                min_size=1,
                max_size=int(os.environ.get("PGCATALOG_POOL_MAX", "10")),
                kwargs={"autocommit": True},
                check=ConnectionPool.check_connection,
                open=True,
                name="plone.pgcatalog",
            )
        return pool


def close_pools() -> None:
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def request_connection(dsn: str):
    """The pooled connection of the current request, checked out once."""
    held = getattr(_local, "held", None)
    if held is not None and held[0] == dsn and not held[1].closed:
        return held[1]
    release_request_connection()
    conn = get_pool(dsn).getconn()
    _local.held = (dsn, conn)
    return conn


def release_request_connection(event=None) -> None:
    """IPubEnd subscriber: give the request's connection back to the pool."""
    held = getattr(_local, "held", None)
    if held is None:
        return
    _local.held = None
    dsn, conn = held
    pool = _pools.get(dsn)
    if pool is not None:
        pool.putconn(conn)


def held_connection():
    """The pooled connection the current thread holds, if any (for tests)."""
    held = getattr(_local, "held", None)
    return None if held is None else held[1]


def _in_request() -> bool:
    from zope.globalrequest import getRequest

    return getRequest() is not None


SAVEPOINT = "SAVEPOINT pgcatalog_search"


def _fetch_in_snapshot(conn: psycopg.Connection, sql: str, params) -> list[tuple]:
    """Run a read inside the storage's open transaction, in one round trip.

    SAVEPOINT, query and RELEASE go out as one pipeline; only when the
    query fails is a second trip needed, to roll back to the savepoint so
    that the storage's transaction stays usable.
    """
    cur = conn.cursor(row_factory=tuple_row)
    try:
        with conn.pipeline():
            conn.execute(SAVEPOINT)
            cur.execute(sql, params)
            conn.execute("RELEASE " + SAVEPOINT)
        return cur.fetchall()
    except BaseException:
        if conn.info.transaction_status == pq.TransactionStatus.INERROR:
            conn.execute("ROLLBACK TO " + SAVEPOINT)
            conn.execute("RELEASE " + SAVEPOINT)
        raise


def _fetch(conn: psycopg.Connection, sql: str, params) -> list[tuple]:
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def fetch(obj, sql: str, params, *, guarded: bool = True) -> list[tuple]:
    """Rows of one catalog read on behalf of *obj* (the tool).

    On the storage's own connection when there is one (the snapshot object
    loads use); else on the request's pooled connection, or a borrowed one.
    In the storage's transaction a read is *guarded* by a savepoint, which
    costs about a tenth of a millisecond: only reads that no data or query
    value can make fail (rows by record id) go without.
    """
    read_dsn = os.environ.get(READ_DSN_ENV)
    instance = None if read_dsn else storage_instance(obj)
    conn = instance.pg_connection if instance is not None else None
    if conn is not None and not conn.closed:
        if guarded and conn.info.transaction_status == pq.TransactionStatus.INTRANS:
            return _fetch_in_snapshot(conn, sql, params)
        return _fetch(conn, sql, params)
    dsn = read_dsn or storage_dsn(obj)
    if dsn is None:
        raise RuntimeError("plone.pgcatalog needs a zodb-pgjsonb storage or PGCATALOG_READ_DSN")
    if _in_request():
        return _fetch(request_connection(dsn), sql, params)
    with get_pool(dsn).connection() as conn:
        return _fetch(conn, sql, params)

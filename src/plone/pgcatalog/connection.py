"""Where searches get their PostgreSQL connection.

In Plone the catalog lives in the same database as the content, so a
search runs on the storage's own connection, inside the REPEATABLE READ
snapshot the object loads use (catalog and objects agree).  A savepoint
keeps a failing search from aborting that snapshot.

A search that has no storage connection at hand is served by a pool of
the catalog's own (:mod:`~plone.pgcatalog.pools`).  With replicas
(``PGCATALOG_READ_DSN``), a search of a transaction that has written
nothing goes to one that has replayed the request's snapshot, else to the
primary (:mod:`~plone.pgcatalog.replicas`).
"""

from __future__ import annotations

from typing import Any
from typing import NoReturn
from collections.abc import Sequence

from Acquisition import aq_base
from psycopg import pq
from psycopg.rows import tuple_row
from plone.pgcatalog import settings
from plone.pgcatalog.errors import CatalogNotInstalled
from plone.pgcatalog.errors import CatalogUnavailable
from plone.pgcatalog.errors import SchemaLocked
from plone.pgcatalog.errors import SearchTimeout
from plone.pgcatalog.schema import HAS_CATALOG_COLUMNS
from plone.pgcatalog.schema import SCHEMA_LOCK_TIMEOUT
from plone.pgcatalog import replicas
from plone.pgcatalog.pools import get_pool
from plone.pgcatalog.pools import request_connection
from plone.pgcatalog.pools import session_fetch
from plone.pgcatalog.pools import timeout_sql
from psycopg_pool import PoolTimeout

from weakref import WeakKeyDictionary

import logging
import os
import psycopg
import transaction


__all__ = [
    "READ_DSN_ENV",
    "change_schema",
    "fetch",
    "jar_of",
    "snapshot_tid",
    "storage_dsn",
    "storage_instance",
]


logger = logging.getLogger("plone.pgcatalog")


READ_DSN_ENV = "PGCATALOG_READ_DSN"


def jar_of(obj: Any) -> Any:
    """The ZODB connection of *obj*, or of its nearest stored container
    (an object added in this transaction has no jar of its own yet)."""
    for holder in getattr(obj, "aq_chain", (obj,)):
        jar = getattr(aq_base(holder), "_p_jar", None)
        if jar is not None:
            return jar
    return None


def storage_instance(obj: Any) -> Any:
    """The zodb-pgjsonb storage instance behind *obj*'s ZODB connection."""
    return _storage_of(jar_of(obj))


def _storage_of(jar):
    # After a savepoint ZODB swaps in a TmpStore; the real one stays here.
    # (No truthiness test: a storage's len() counts its objects in SQL.)
    storage = getattr(jar, "_normal_storage", None)
    if storage is None:
        storage = getattr(jar, "_storage", None)
    if storage is None or not hasattr(storage, "pg_connection"):
        return None
    return storage


def snapshot_tid(jar: Any) -> int | None:
    """The newest transaction id the snapshot of *jar*'s transaction holds
    (zodb-pgjsonb polls it when the transaction begins); None without one."""
    return getattr(_storage_of(jar), "_polled_tid", None)


def storage_dsn(obj: Any) -> str | None:
    return _dsn_of(storage_instance(obj))


def _dsn_of(instance) -> str | None:
    return None if instance is None else getattr(instance._main, "_dsn", None)


def _transaction_of(jar):
    manager = getattr(jar, "transaction_manager", None) or transaction.manager
    return manager.get()


def _in_request() -> bool:
    from zope.globalrequest import getRequest

    return getRequest() is not None


SAVEPOINT = "pgcatalog_search"

# connection -> the ZODB transaction whose snapshot holds our savepoint
_savepoints: WeakKeyDictionary = WeakKeyDictionary()


# PostgreSQL compiles a statement whose estimate passes jit_above_cost,
# on every run: a catalog's counts over most of a large site (100,000
# documents: 35-40 ms of a 430 ms facet count, and 20 ms of one that a
# remembered answer makes read nothing).  Catalog statements are short
# reads, which compiling never pays back: off for the snapshot, before
# its savepoint, and for the session of the catalog's own connections.
NO_JIT = "SET LOCAL jit = off"
# PostgreSQL starts parallel workers for a statement whose estimate is
# large, at its first row, even where a one-time filter then reads nothing
# (the recount branch of a count brought up to date from the change log):
# 7-10 ms a statement at a million rows, more than the statements
# themselves (a word's count 14 -> 3 ms).  A busy site's searches run side
# by side on its cores anyway: none, as for JIT.
NO_PARALLEL = "SET LOCAL max_parallel_workers_per_gather = 0"
GENERIC_PLAN = "SET LOCAL plan_cache_mode = force_generic_plan"
DEFAULT_PLAN = "SET LOCAL plan_cache_mode TO DEFAULT"
# The statement timeout the searches of the storage's connection run under,
# per snapshot, with the plan mode (connection -> (transaction, ms,
# generic)); set again only when the setting changes (the catalog's own
# connections: see plone.pgcatalog.pools)
_snapshot_settings: WeakKeyDictionary = WeakKeyDictionary()


def _fetch_in_snapshot(
    conn: psycopg.Connection, sql: str, params, txn, generic: bool, timeout: int, prepare: bool
) -> list[tuple]:
    """Run a read inside the storage's open transaction.

    A read that fails there would abort the storage's snapshot, so reads
    run after a savepoint and a failure rolls back to it.  The savepoint is
    set once per snapshot, with the first read of the ZODB transaction (the
    storage begins a new snapshot with each transaction): pipelined with
    that read, and kept, so later reads pay nothing for it.

    A *generic* read is run with PostgreSQL's generic plan for its
    prepared statement: the plan mode is set in the same round trip, for
    the rest of the snapshot, and again only when a read asks for the
    other mode.  The storage's own reads of that snapshot (objects by
    zoid) then use generic plans too, as PostgreSQL would choose for them.
    (Setting the mode before each generic read and back after it cost a
    pipeline of three statements per read: 0.1 ms in psycopg.)

    The statement timeout (*timeout* ms, 0 for none) is set for the rest of
    the snapshot, before its savepoint (so that a failed read keeps it), and
    again only when the setting changes: a search pays nothing for it.  It
    then limits the storage's own reads of that snapshot too (object loads,
    point reads); never a write, which ends the snapshot first.
    """
    cur = conn.cursor(row_factory=tuple_row)
    first = _savepoints.get(conn) is not txn
    if first:
        _snapshot_settings[conn] = (txn, 0, False)  # a new snapshot has the server's
    held = _snapshot_settings.get(conn) or (None, 0, False)
    known = held[0] is txn
    set_timeout = not known or held[1] != timeout
    set_plan = not known or held[2] != generic
    now = True if prepare else None  # (None: psycopg's own, from the fifth run)
    try:
        if not (first or set_timeout or set_plan):
            cur.execute(sql, params, prepare=now)
        else:
            with conn.pipeline():
                if set_timeout:
                    conn.execute(timeout_sql(timeout))
                if set_plan:
                    conn.execute(GENERIC_PLAN if generic else DEFAULT_PLAN)
                if first:
                    conn.execute(NO_JIT)
                    conn.execute(NO_PARALLEL)
                    conn.execute("SAVEPOINT " + SAVEPOINT)
                    _savepoints[conn] = txn
                cur.execute(sql, params, prepare=now)
            _snapshot_settings[conn] = (txn, timeout, generic)
        return cur.fetchall()
    except BaseException:
        if conn.info.transaction_status == pq.TransactionStatus.INERROR:
            _roll_back(conn)
        raise


def _roll_back(conn: psycopg.Connection) -> None:
    """Undo a failed read: back to the savepoint, which stays for later reads."""
    _snapshot_settings.pop(conn, None)  # settings made after the savepoint went
    try:
        conn.execute("ROLLBACK TO " + SAVEPOINT)
    except psycopg.Error:
        # the savepoint went with a snapshot that ended behind our back (an
        # explicit sync): end the broken transaction so the storage can go on
        logger.warning("plone.pgcatalog: a failed read ended the storage's snapshot", exc_info=True)
        _savepoints.pop(conn, None)
        conn.execute("ROLLBACK")


def change_schema(obj: Any, sql: str) -> None:
    """Run *sql*, DDL that this transaction's own reads need, in the
    storage's open transaction on behalf of *obj*.

    A connection of its own would wait for this transaction's snapshot,
    which holds ``object_state`` until the commit; here the reads that
    follow see the new columns at once.  The change commits when the
    storage ends the snapshot, with the ZODB transaction's commit or
    abort alike, so *sql* must be idempotent (``IF NOT EXISTS``).  It
    runs without a statement timeout, behind a savepoint of its own
    (failing, it leaves the snapshot usable); the search savepoint of the
    snapshot is set again after it, so that a failed read cannot roll the
    change back.
    """
    instance = storage_instance(obj)
    if instance is None:
        raise RuntimeError("plone.pgcatalog needs a zodb-pgjsonb storage")
    conn = instance.pg_connection
    outside = conn.info.transaction_status != pq.TransactionStatus.INTRANS
    if outside:
        conn.execute("BEGIN")
    conn.execute("SAVEPOINT pgcatalog_schema")
    try:
        conn.execute(
            f"SET LOCAL lock_timeout = '{SCHEMA_LOCK_TIMEOUT}'; SET LOCAL statement_timeout = 0; {sql}"
        )
    except psycopg.Error as error:
        conn.execute("ROLLBACK TO SAVEPOINT pgcatalog_schema")
        if outside:
            conn.execute("ROLLBACK")
        if isinstance(error, psycopg.errors.LockNotAvailable):
            raise SchemaLocked(
                f"plone.pgcatalog: other transactions kept object_state busy for {SCHEMA_LOCK_TIMEOUT}; "
                "nothing was changed: try again when the site is quieter"
            ) from error
        raise
    conn.execute(
        "RELEASE SAVEPOINT pgcatalog_schema; SET LOCAL lock_timeout TO DEFAULT; "
        "SET LOCAL statement_timeout TO DEFAULT"
    )
    if outside:
        conn.execute("COMMIT")
    _savepoints.pop(conn, None)
    _snapshot_settings.pop(conn, None)


UNDEFINED = (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable, psycopg.errors.UndefinedFunction)
"""What PostgreSQL answers a catalog read in a database without the catalog."""


def fetch(
    obj: Any,
    sql: str,
    params: Sequence[Any],
    *,
    guarded: bool = True,
    generic: bool = False,
    prepare: bool = False,
) -> list[tuple]:
    """Rows of one catalog read on behalf of *obj* (the tool).

    On a replica that has replayed the request's snapshot, when replicas
    are set (``PGCATALOG_READ_DSN``) and the transaction has written
    nothing (see :mod:`~plone.pgcatalog.replicas`); else on the storage's
    own connection when there is one (the snapshot object loads use); else
    on the request's pooled connection, or a borrowed one.
    In the storage's transaction a read is *guarded* by a savepoint (see
    :func:`_fetch_in_snapshot`): only reads that no data or query value can
    make fail (rows by record id) go without.

    *generic*: the statement's plan does not depend on its parameters (a
    walk down a sort index), so PostgreSQL's generic plan for it is as good
    as a custom one, without planning it again for every search.  Custom
    planning of a statement over ``object_state`` and its many partial
    indexes takes most of a millisecond, and PostgreSQL keeps choosing it
    when the generic plan's estimate looks costlier.  Only in the storage's
    transaction: on a pooled connection the statement is planned as usual.
    *prepare*: prepared at its first run, not at psycopg's fifth, for a
    statement whose text recurs but not often on one connection (each
    search's counts and the text's cells' walks: their text follows which
    words are remembered and how many cells are read); in the storage's
    transaction, as *generic*.
    """
    try:
        return _read(obj, sql, params, guarded, generic, prepare)
    except UNDEFINED as error:
        if not _read(obj, HAS_CATALOG_COLUMNS, [], True, False, False)[0][0]:
            raise CatalogNotInstalled(
                "plone.pgcatalog: this database has no catalog columns (object_state.idx): "
                "install plone.pgcatalog (Site Setup > Add-ons), or import its profile "
                "plone.pgcatalog:default again where it is installed: either creates them "
                "and catalogs the site's content"
            ) from error
        raise
    except psycopg.errors.QueryCanceled as error:
        raise SearchTimeout(
            f"PostgreSQL cancelled a catalog search after {settings.statement_timeout()} ms "
            "(the statement-timeout setting)"
        ) from error
    except (psycopg.OperationalError, psycopg.InterfaceError) as error:
        raise CatalogUnavailable(f"The catalog's database is unavailable: {error}") from error


def _read(
    obj: Any, sql: str, params: Sequence[Any], guarded: bool, generic: bool, prepare: bool
) -> list[tuple]:
    read_dsn = os.environ.get(READ_DSN_ENV)
    jar = jar_of(obj)
    instance = _storage_of(jar)
    # an unguarded read (rows by id) leaves a session's timeout as it is
    timeout = settings.statement_timeout() if guarded else None
    # Replicas serve a transaction that has written nothing (its connection
    # has not joined it: its own changes are on the primary alone), once
    # they have replayed its snapshot
    if read_dsn and instance is not None and getattr(jar, "_needs_to_join", True):
        tid = snapshot_tid(jar)
        if tid is not None:
            rows = replicas.fetch(read_dsn, sql, params, timeout, tid, _in_request())
            if rows is not None:
                return rows
    conn = instance.pg_connection if instance is not None else None
    if conn is not None and not conn.closed:
        if guarded and conn.info.transaction_status == pq.TransactionStatus.INTRANS:
            return _fetch_in_snapshot(conn, sql, params, _transaction_of(jar), generic, timeout or 0, prepare)
        return session_fetch(conn, sql, params, timeout)
    dsn = read_dsn if instance is None else _dsn_of(instance)
    if dsn is None:
        raise RuntimeError("plone.pgcatalog needs a zodb-pgjsonb storage or PGCATALOG_READ_DSN")
    try:
        if _in_request():
            return session_fetch(request_connection(dsn), sql, params, timeout)
        with get_pool(dsn).connection(timeout=settings.pool_timeout()) as conn:
            return session_fetch(conn, sql, params, timeout)
    except PoolTimeout as error:
        _no_connection(dsn, error)


PROBE_TIMEOUT = 2
"""Seconds a connection of its own may take to tell why a pool had none."""


def _no_connection(dsn: str, timed_out: PoolTimeout) -> NoReturn:
    """Fail a search that waited ``pool-timeout`` for a pooled connection
    in vain.  The pool does not say why, and a full pool calls for other
    measures than a database that is down or refuses connections: one
    connection of its own tells them apart."""
    waited = settings.pool_timeout()
    try:
        psycopg.connect(dsn, connect_timeout=PROBE_TIMEOUT).close()
    except psycopg.Error as error:
        raise CatalogUnavailable(
            f"The catalog's database is unavailable (no pooled connection within {waited} s): {error}"
        ) from error
    raise CatalogUnavailable(
        f"No catalog connection came free within {waited} s "
        f"(pool of {settings.pool_max()}: the pool-max and pool-timeout settings)"
    ) from timed_out

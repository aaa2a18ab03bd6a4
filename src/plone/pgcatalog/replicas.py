"""Searches on streaming replicas, never older than what the request saw.

``PGCATALOG_READ_DSN`` names the replicas (one, or several the way libpq
takes them: ``host=r1,r2 port=5432,5432 load_balance_hosts=random``).
A read may go there only when its transaction has written nothing yet
(its own changes are on the primary alone), and only to a replica that
has replayed the request's ZODB snapshot, the moment its objects come
from.  zodb-pgjsonb names that moment by the newest transaction id the
snapshot holds (``transaction_log``); commits are serialized under the
storage's commit lock, so a replica that has that transaction has every
commit before it.  The user's own last commit is among them, even from
the request before on another Zope instance (the redirect after a save):
a request's snapshot begins when the request does, after that commit.

The check runs in the round trip of the search itself (a pipeline), so a
replica that keeps up costs nothing more.  One that is behind is asked
again until ``replica-wait`` ms have passed; then the primary answers and
that server is left alone for :data:`RETRY_AFTER` seconds, as is one that
fails or cannot be reached.  A replica may be ahead of the snapshot, by
the commits of the last moments: never behind it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from plone.pgcatalog import settings
from plone.pgcatalog.pools import get_pool
from plone.pgcatalog.pools import request_connection
from plone.pgcatalog.pools import session_fetch
from plone.pgcatalog.pools import set_session
from psycopg.rows import tuple_row
from psycopg_pool import PoolTimeout

import logging
import psycopg
import time


__all__ = ["CONNECT_WAIT", "RETRY_AFTER", "STATS", "fetch", "forget"]

logger = logging.getLogger("plone.pgcatalog")

FRESH = "SELECT COALESCE(max(tid), 0) >= %s FROM transaction_log"
"""Whether the server has replayed the transaction with the given id."""

RETRY_AFTER = 1.0
"""Seconds a replica that lagged past the wait, or failed, is left alone."""

STATS: Counter = Counter()
"""Reads a replica served (``replica``), and those the primary served
instead, by why: ``lagging``, ``unavailable``, ``conflict``."""

# server (host, port), or a DSN none of whose servers gave a connection ->
# the monotonic time until which it is left alone
_left: dict[Any, float] = {}

CONNECT_WAIT = 1.0
"""Seconds a search waits for a connection to a replica (the pool makes a
new one when a server went away), at least."""

POLL = 0.002
"""Seconds between two questions to a replica that is behind (doubling)."""


def fetch(dsn: str, sql: str, params, timeout: int | None, tid: int, in_request: bool) -> list[tuple] | None:
    """Rows of *sql* from a replica of *dsn* that has replayed transaction
    *tid*; None when none could serve it within ``replica-wait`` (the
    primary answers).  A statement timeout (``QueryCanceled``) is raised
    as it would be on the primary."""
    if _left.get(dsn, 0) > time.monotonic():
        STATS["unavailable"] += 1
        return None
    wait = settings.replica_wait() / 1000
    connect = max(wait, CONNECT_WAIT)
    try:
        if in_request:
            conn = request_connection(dsn, timeout=connect)
            return _rows(conn, sql, params, timeout, tid, time.monotonic() + wait)
        with get_pool(dsn).connection(timeout=connect) as conn:
            return _rows(conn, sql, params, timeout, tid, time.monotonic() + wait)
    except PoolTimeout:
        _leave(dsn, "unavailable", f"no connection to {_safe(dsn)} within {connect} s")
    return None


def _rows(conn: psycopg.Connection, sql: str, params, timeout: int | None, tid: int, deadline: float):
    server = (conn.info.host, conn.info.port)
    if _left.get(server, 0) > time.monotonic():
        STATS["unavailable"] += 1
        return None
    try:
        rows = _fresh_rows(conn, sql, params, timeout, tid, deadline)
    except psycopg.errors.QueryCanceled:
        raise
    except psycopg.errors.SerializationFailure:
        # a conflict with what the replica replays cancelled the read
        STATS["conflict"] += 1
        return None
    except (psycopg.OperationalError, psycopg.InterfaceError) as error:
        _leave(server, "unavailable", f"replica {server[0]}:{server[1]} failed: {error}")
        return None
    except psycopg.Error:
        return None  # the primary answers, and raises its own error if any
    if rows is None:
        _leave(server, "lagging", f"replica {server[0]}:{server[1]} lags behind transaction {tid}")
        return None
    STATS["replica"] += 1
    return rows


def _fresh_rows(conn: psycopg.Connection, sql: str, params, timeout: int | None, tid: int, deadline: float):
    """The rows of *sql* once the server has replayed *tid*: asked with the
    read in one round trip, then again until *deadline* (None: not then)."""
    if not tid:
        return session_fetch(conn, sql, params, timeout)
    set_session(conn, timeout)
    check = conn.cursor(row_factory=tuple_row)
    read = conn.cursor(row_factory=tuple_row)
    with conn.pipeline():
        check.execute(FRESH, [tid])
        read.execute(sql, params)
    if check.fetchone()[0]:
        return read.fetchall()
    step = POLL
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(step, left))
        step *= 2
        if check.execute(FRESH, [tid]).fetchone()[0]:
            return session_fetch(conn, sql, params, timeout)
    return None


def _leave(key: Any, why: str, message: str) -> None:
    """Leave a server (or a DSN) alone for :data:`RETRY_AFTER` seconds."""
    STATS[why] += 1
    if _left.get(key, 0) <= time.monotonic():
        logger.info("plone.pgcatalog: %s: searches go to the primary for %s s", message, RETRY_AFTER)
    _left[key] = time.monotonic() + RETRY_AFTER


def _safe(dsn: str) -> str:
    """*dsn* without its password, for a log line."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the read DSN"
    parts.pop("password", None)
    return psycopg.conninfo.make_conninfo(**parts)


def forget() -> None:
    """Forget which servers were left alone, and the counts (for tests)."""
    _left.clear()
    STATS.clear()

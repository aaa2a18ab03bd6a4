"""Answers made from every row, shared by the processes of a site.

A process remembers the facet counts it made and brings them up to date
from the change log (:mod:`~plone.pgcatalog.changes`); a process new to a
query (one just started, another instance of the site) has nothing to
bring up to date and counts every matching row: at 100,000 documents,
400 ms for what Anonymous may see.  So an answer made from every row is
also kept in the database, with the commit it was made at: a process that
does not know a query reads it there and brings it up to date as its own.

A kept answer is a fact about one commit, whoever wrote it and whenever:
writers overwrite each other, and an answer whose commit the change log
no longer holds is made again from every row, as if none were kept (the
log's check in ``changes._SINCE_SQL``), and deleted by the next writer.
What identifies an answer (its statement, with the security terms among
its parameters) is kept as a digest only.  An answer that cannot be
written (a role that may only search, a replica, a busy pool) is not
shared, and the search goes on.
"""

from __future__ import annotations

from collections.abc import Hashable
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.database import read
from plone.pgcatalog.pools import get_pool
from plone.pgcatalog.schema import SHARED
from typing import Any

import hashlib
import logging
import orjson
import psycopg
import psycopg_pool


__all__ = ["shared_answer", "share"]

logger = logging.getLogger("plone.pgcatalog")

WAIT = 0.1
"""Seconds to wait for a pooled connection to write an answer with."""

_WRITE = f"""WITH gone AS (
    DELETE FROM {SHARED} WHERE counter < (SELECT logged_from FROM pgcatalog_counter WHERE id = 1))
INSERT INTO {SHARED} (key, counter, stamp, answer) VALUES (%s, split_part(%s, '.', 1)::bigint, %s, %s)
ON CONFLICT (key) DO UPDATE SET counter = EXCLUDED.counter, stamp = EXCLUDED.stamp, answer = EXCLUDED.answer"""


def digest(key: Hashable) -> str:
    """What identifies an answer in every process: *key*'s
    (:func:`~plone.pgcatalog.counts.unchanged_key`) site and statement,
    without the server's address (a replica's differs)."""
    return hashlib.sha256(repr(key[1:] if isinstance(key, tuple) else key).encode()).hexdigest()


def shared_answer(catalog: Any, site: str, key: Hashable) -> tuple[str, Any] | None:
    """The answer kept under *key* by some process of the catalog's site,
    read in this snapshot: (the stamp of its commit, its JSON value), or
    None."""
    rows = read(catalog, f"SELECT stamp, answer FROM {SHARED} WHERE key = %s", [digest(key)], site=site)
    return (rows[0][0], rows[0][1]) if rows else None


def share(catalog: Any, key: Hashable, stamp: str, answer: Any) -> None:
    """Keep *answer* (JSON-able), made from every row at the commit
    stamped *stamp*, for the other processes; an answer kept before under
    *key* gives way, and those the change log no longer reaches go."""
    dsn = storage_dsn(catalog)
    if dsn is None:
        return
    try:
        with get_pool(dsn).connection(timeout=WAIT) as conn:
            conn.execute(_WRITE, [digest(key), stamp, stamp, orjson.dumps(answer).decode()])
    except (psycopg.Error, psycopg_pool.PoolTimeout) as error:
        logger.debug("plone.pgcatalog: an answer was not shared: %s", error)

"""The zodb-pgjsonb state processor: pending catalog rows → table columns.

zodb-pgjsonb calls :meth:`CatalogStateProcessor.process` for each object it
stores and :meth:`~CatalogStateProcessor.finalize` at the end of the vote,
both inside the PostgreSQL transaction that writes the objects.  Catalog
rows therefore commit or roll back together with the content.  The
processor is shared by all threads; everything per transaction lives in
:mod:`plone.pgcatalog.pending`.

Concurrent editors: ZODB sees two transactions that store the same object.
It does not see a catalog-only write (a security reindex below a folder,
an uncatalog) racing a transaction that computed the same row from an
older snapshot: the later commit would write stale values back (or a
deleted object's row).  ZCatalog escapes by writing only the index entries
that changed; here the later commit raises ``ConflictError`` and the
publisher retries it (:func:`check_concurrent`).
"""

from __future__ import annotations

from typing import Any

from plone.pgcatalog import row
from plone.pgcatalog.connection import DEFAULT_PLAN
from plone.pgcatalog.connection import GENERIC_PLAN
from plone.pgcatalog.errors import SchemaPrivilegeError
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.schema import BUMP_COUNTER
from plone.pgcatalog.schema import DEFERRED_NOW
from plone.pgcatalog.schema import NOTE_EVERYTHING
from plone.pgcatalog.undo import hide
from plone.pgcatalog.undo import plan_repair
from plone.pgcatalog.undo import schedule
from plone.pgcatalog.values import array_literal
from psycopg.rows import tuple_row
from ZODB.POSException import ConflictError
from zodb_pgjsonb.storage import ExtraColumn

import orjson
import psycopg
import transaction


__all__ = [
    "CatalogStateProcessor",
    "check_concurrent",
    "ensure_processor",
    "retire_processor",
    "write_full_rows",
]


CHANGED_SINCE = """SELECT path FROM object_state
WHERE (zoid = ANY(%(zoids)s::bigint[]) OR path = ANY(%(paths)s::text[]))
  AND (catalog_tid > %(seen)s OR (tid > %(seen)s AND tid <> (SELECT max(tid) FROM transaction_log)))
ORDER BY path LIMIT 5"""
"""Rows this commit writes or clears that another transaction changed after
this one's snapshot: its object stored (``tid``; our own stores are the
newest tid, commits being serialised) or its catalog data alone
(``catalog_tid``, see :data:`plone.pgcatalog.row.STAMP`)."""


def check_concurrent(cursor: Any, pending: Pending) -> None:
    """Raise ``ConflictError`` if a row *pending* writes changed since the
    snapshot its values were computed in (``pending.seen``)."""
    if pending.seen is None or not (pending.rows or pending.removed):
        return
    params = {
        "zoids": array_literal(pending.rows),
        "paths": array_literal(pending.removed),
        "seen": pending.seen,
    }
    # planned once per connection: planning a statement on object_state
    # weighs every index of the catalog (0.3 ms of each commit at 20,000
    # documents), and its plan does not depend on the values
    conn = cursor.connection
    check = conn.cursor(row_factory=tuple_row)  # zodb-pgjsonb's cursors give dicts
    with conn.pipeline():
        conn.execute(GENERIC_PLAN)
        check.execute(CHANGED_SINCE, params, prepare=True)
        conn.execute(DEFAULT_PLAN)
    changed = [path for (path,) in check.fetchall()]
    if changed:
        raise ConflictError(
            f"plone.pgcatalog: catalog rows changed by another transaction since this one began: {', '.join(changed)}"
        )


FULL_ROWS_PER_STATEMENT = 1000
"""Full rows written by one statement: a few statements for a rebuild,
each parameter a few megabytes of JSON."""


def write_full_rows(cursor: Any, full: list[tuple[int, Any]]) -> int:
    """Write the full rows *full* (``(zoid, CatalogRow)``) of objects not
    stored in this transaction, where they changed
    (:func:`~plone.pgcatalog.row.full_rows_sql`); returns how many rows
    changed."""
    if not full:
        return 0
    sql, changed = row.full_rows_sql(), 0
    for start in range(0, len(full), FULL_ROWS_PER_STATEMENT):
        chunk = full[start : start + FULL_ROWS_PER_STATEMENT]
        records = [row.record(zoid, catalog_row, written=True) for zoid, catalog_row in chunk]
        cursor.execute(sql, (orjson.dumps(records).decode(),))
        changed += max(cursor.rowcount, 0)
    return changed


def ensure_processor(instance: Any) -> None:
    """Register the catalog's state processor on a zodb-pgjsonb storage
    (or a storage instance of it), once."""
    main = getattr(instance, "_main", instance)
    if getattr(main, "_pgcatalog_processor", None) is None:
        processor = CatalogStateProcessor()
        main.register_state_processor(processor)
        main._pgcatalog_processor = processor


def retire_processor(instance: Any) -> None:
    """Unregister the catalog's state processor (its columns were dropped
    by an uninstall).  zodb-pgjsonb has no public way back from
    ``register_state_processor``: its list of processors is edited."""
    main = getattr(instance, "_main", instance)
    processor = getattr(main, "_pgcatalog_processor", None)
    if processor is None:
        return
    processors = getattr(main, "_state_processors", [])
    if processor in processors:
        processors.remove(processor)
    main._pgcatalog_processor = None


class CatalogStateProcessor:
    """Writes catalog rows with their objects, clears them on uncatalog."""

    def get_extra_columns(self) -> list[ExtraColumn]:
        return [ExtraColumn(name, value) for name, value in row.extra_columns()]

    def process(self, zoid, class_mod, class_name, state):
        pending = get_pending()
        if pending is None:
            return None
        catalog_row = pending.rows.get(zoid)
        if catalog_row is None or catalog_row.partial:
            return None
        pending.written.add(zoid)
        return row.sql_params(catalog_row)

    def undone(self, cursor, tid: int, restored: list[int], deleted: list[int], entries: dict) -> None:
        """An undo is restoring *restored*: the rows whose security it may
        change are hidden in its own transaction, and all are cataloged
        again once it has committed (see :mod:`plone.pgcatalog.undo`).  The
        undo changes the catalog already (rows it deletes, states it
        restores): it counts as a catalog change (``getCounter``,
        :mod:`~plone.pgcatalog.counts`)."""
        repairs = plan_repair(cursor, restored, entries)
        hide(cursor, repairs)
        schedule(transaction.get(), repairs)
        cursor.execute(NOTE_EVERYTHING)
        cursor.execute(BUMP_COUNTER)

    def finalize(self, cursor) -> None:
        pending = get_pending()
        if not pending:
            return
        check_concurrent(cursor, pending)
        if pending.ddl:
            # PostgreSQL alters no table with trigger events pending: the
            # deferred ones fire now (the text statistics' sum so far goes
            # in, what was noted so far is stamped)
            cursor.execute(DEFERRED_NOW)
            cursor.execute(NOTE_EVERYTHING)  # new indexes, or a rebuild's
        for statement in pending.ddl:
            try:
                cursor.execute(statement)
            except psycopg.errors.InsufficientPrivilege as error:  # the checks before were bypassed
                raise SchemaPrivilegeError(
                    f"plone.pgcatalog: only the tables' owner may change the schema: {error}"
                ) from error
        for name, column in pending.cleared.items():
            cursor.execute(row.clear_index_sql(name, column), (array_literal(pending.rows),))
        if pending.emptied:
            # rows about to be written in full need no clearing first
            rewritten = pending.written | {zoid for zoid, r in pending.rows.items() if not r.partial}
            cursor.execute(
                f"UPDATE object_state SET {row.clear_all_sql()} "
                "WHERE idx IS NOT NULL AND starts_with(path || '/', %s) AND NOT (zoid = ANY(%s::bigint[]))",
                (pending.emptied + "/", array_literal(rewritten)),
            )
        full = [(z, r) for z, r in pending.rows.items() if not r.partial and z not in pending.written]
        write_full_rows(cursor, full)
        partial = {z: r for z, r in pending.rows.items() if r.partial}
        if partial:  # a workflow change's, or the rows below a moved folder (see moves)
            cursor.execute(row.partial_update_sql(), row.partial_update_params(partial))
        if pending.removed:
            cursor.execute(
                f"UPDATE object_state SET {row.clear_all_sql()} WHERE path = ANY(%s::text[]) AND NOT (zoid = ANY(%s::bigint[]))",
                (array_literal(pending.removed), array_literal(pending.rows)),
            )
        cursor.execute(BUMP_COUNTER)
        if pending.emptied or pending.ddl:
            # a rebuild or new indexes: statistics for the planner right away,
            # not when autovacuum gets to it (ANALYZE sees this transaction's rows)
            cursor.execute("ANALYZE object_state")

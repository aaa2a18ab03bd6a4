"""Read-your-writes: this transaction's catalog changes over the committed rows.

Plone searches right after it writes (create then find by UID; a workflow
change reindexes the security of a subtree it finds by path), and ZCatalog
answers from its in-memory indexes, changes included.  Here the changes wait
in :mod:`pending` until the commit writes them with the objects, so a
search made meanwhile reads from a relation that lays the pending rows over
the committed ones: committed rows that the transaction re-cataloged,
uncataloged or cleared drop out, the pending rows come in (a partial
reindex merged into the committed row, as the commit will merge it).  The
relation has the catalog's columns, so every query reads the same with or
without it.  With nothing pending, searches read the table itself.

Statements name the catalog rows :data:`ROWS` (subqueries too: an ``and``
keyword range, a navigation tree's depth check) and :func:`catalog_sql`
defines that name for them, as a common table expression that PostgreSQL
inlines wherever it is read.
"""

from __future__ import annotations

from functools import lru_cache

from collections.abc import Iterable

from plone.pgcatalog import row
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.schema import CATALOG_ROWS
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.values import text_literal
from typing import TypeGuard

import orjson


__all__ = ["catalog_sql", "has_changes", "pending_metadata", "pending_texts", "site_scope"]

_TABLE = "WITH {name} AS NOT MATERIALIZED (SELECT * FROM object_state{scope})"

_OVERLAY = """WITH {name} AS NOT MATERIALIZED (
SELECT o.zoid, {committed}
  FROM object_state o
 WHERE o.idx IS NOT NULL AND (%s::text IS NULL OR NOT starts_with(o.path || '/', %s::text))
   AND NOT (o.zoid = ANY(%s::bigint[])) AND NOT (o.path = ANY(%s::text[])){committed_scope}
UNION ALL
SELECT p.zoid, {pending}
  FROM jsonb_to_recordset(%s::jsonb) AS p({fields})
  LEFT JOIN object_state o ON o.zoid = p.zoid{pending_scope}
)"""


def site_scope(site: str, column: str) -> str:
    """A site's rows: its own and those below it, so that several sites
    can keep their catalogs in one database.  Ranges of the C-collated
    path, with the site's path as literals (Zope ids hold no quotes; they
    are doubled all the same), tested on the rows a search's own indexes
    find: inside COALESCE the planner neither reads the path index for it
    nor takes it as one more independent clause (it holds on every catalog
    row of a database with one site; taken as independent it made the
    planner expect a type's 20,000 items to be 400, and sort them all
    instead of reading the first ones off an index in order)."""
    scope = f"{column} = {text_literal(site)} OR ({column} >= {text_literal(site + '/')} AND {column} < {text_literal(site + '0')})"
    return f"COALESCE({scope}, false)"


def _overlay(pending: Pending, site: str) -> tuple[str, list]:
    """The overlay's SQL and parameters.  Indexes cleared in this
    transaction (``catalog.xml`` changed them) lose their committed values;
    ``idx`` is then an expression, which the expression indexes no longer
    match: such searches scan the table."""
    committed = {c: row.committed_sql(c, "o", pending.cleared) for c in row.COLUMNS}
    laid = {c: row.pending_sql(c, committed[c]) for c in row.COLUMNS}
    # the typed columns follow idx: stored, unless clearing changed it
    idx = next(c for c in row.COLUMNS if c.name == "idx")
    cleared_idx = committed[idx] if committed[idx] != "o.idx" else None
    sql = _OVERLAY.format(
        name=CATALOG_ROWS,
        committed_scope=f" AND {site_scope(site, 'o.path')}" if site else "",
        pending_scope=f" WHERE starts_with(p.path || '/', {text_literal(site + '/')})" if site else "",
        committed=", ".join(
            [*(f"{committed[c]} AS {c.name}" for c in row.COLUMNS), row.typed_select_sql(cleared_idx, "o")]
        ),
        pending=", ".join([*laid.values(), row.typed_select_sql(laid[idx], "p")]),
        fields=row.record_columns_sql(),
    )
    records = orjson.dumps([row.record(zoid, r) for zoid, r in pending.rows.items()]).decode()
    emptied = None if pending.emptied is None else pending.emptied + "/"
    return sql, [emptied, emptied, array_literal(pending.rows), array_literal(pending.removed), records]


def has_changes(pending: Pending | None) -> TypeGuard[Pending]:
    return pending is not None and bool(pending.rows or pending.removed or pending.emptied or pending.cleared)


def catalog_sql(sql: str, pending: Pending | None, site: str = "") -> tuple[str, list]:
    """*sql*, a statement that reads the catalog rows as :data:`ROWS`, over
    the rows this transaction sees of the site at path *site* (all, with
    none); and the parameters that go before its own."""
    params: list
    if not has_changes(pending):
        head, params = _committed(site), []
    else:
        head, params = _overlay(pending, site)
    if sql.startswith("WITH "):
        return f"{head},\n{sql[5:]}", params
    return f"{head}\n{sql}", params


@lru_cache(maxsize=64)
def _committed(site: str) -> str:
    """The head of a statement over the committed rows of the site at *site*."""
    return _TABLE.format(name=CATALOG_ROWS, scope=f" WHERE {site_scope(site, 'path')}" if site else "")


def pending_texts(pending: Pending | None, zoids: Iterable[int]) -> dict:
    """Indexed texts of *zoids* that this transaction changed (removed: None)."""
    if not has_changes(pending):
        return {}
    column = next(c for c in row.COLUMNS if c.name == row.INDEXED_TEXT)
    found = {}
    for zoid in zoids:
        catalog_row = pending.rows.get(zoid)
        if catalog_row is not None and catalog_row.carries(column):
            found[zoid] = catalog_row.value(column)
    return found


def pending_metadata(pending: Pending | None, zoids: Iterable[int]) -> dict:
    """Metadata of *zoids* that this transaction changed (or removed: None)."""
    if not has_changes(pending):
        return {}
    found = {}
    for zoid in zoids:
        catalog_row = pending.rows.get(zoid)
        if catalog_row is not None and catalog_row.meta is not None:
            found[zoid] = catalog_row.meta
    return found

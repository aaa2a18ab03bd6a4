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

from plone.pgcatalog.pending import Pending
from plone.pgcatalog.registry import name_literal
from plone.pgcatalog.registry import OWN_COLUMN_NAMES
from plone.pgcatalog.schema import CATALOG_ROWS
from plone.pgcatalog.values import array_literal

import orjson


_TYPES = {"searchable_text": "tsvector", "object_provides": "jsonb"}

_TABLE = f"WITH {CATALOG_ROWS} AS NOT MATERIALIZED (SELECT * FROM object_state)"

_OVERLAY = """WITH {name} AS NOT MATERIALIZED (
SELECT o.zoid, o.path, o.parent_path, o.path_depth, {committed_idx} AS idx, {committed_counts} AS word_counts,
       o.meta, {committed_own}
  FROM object_state o
 WHERE o.idx IS NOT NULL AND %s AND NOT (o.zoid = ANY(%s::bigint[])) AND NOT (o.path = ANY(%s::text[]))
UNION ALL
SELECT p.zoid, p.path, p.parent_path, p.path_depth,
       CASE WHEN p.partial THEN jsonb_strip_nulls(COALESCE({committed_idx}, '{{}}'::jsonb) || p.idx) ELSE p.idx END,
       CASE WHEN p.partial
            THEN NULLIF(jsonb_strip_nulls(COALESCE({committed_counts}, '{{}}'::jsonb) || p.word_counts), '{{}}')
            ELSE p.word_counts END,
       o.meta, {pending_own}
  FROM jsonb_to_recordset(%s::jsonb) AS p(
       zoid bigint, path text, parent_path text, path_depth integer, idx jsonb, word_counts jsonb,
       partial boolean,
       {pending_columns})
  LEFT JOIN object_state o ON o.zoid = p.zoid
)"""


def _overlay(pending: Pending) -> tuple[str, list]:
    """The overlay's SQL and parameters.  Indexes cleared in this
    transaction (``catalog.xml`` changed them) lose their committed values;
    only then is ``idx`` an expression, which the expression indexes no
    longer match: such searches scan the table."""
    names = [name for name, column in pending.cleared.items() if column is None]
    columns = {column for column in pending.cleared.values() if column is not None}
    committed = {c: f"NULL::{_TYPES[c]}" if c in columns else f"o.{c}" for c in OWN_COLUMN_NAMES}
    sql = _OVERLAY.format(
        name=CATALOG_ROWS,
        committed_idx="(o.idx - %s::text[])" if names else "o.idx",
        committed_counts=_without("o.word_counts", list(pending.cleared)),
        committed_own=", ".join(f"{committed[c]} AS {c}" for c in OWN_COLUMN_NAMES),
        pending_own=", ".join(
            f"CASE WHEN p.has_{c} THEN p.{c} ELSE {committed[c]} END AS {c}" for c in OWN_COLUMN_NAMES
        ),
        pending_columns=", ".join(
            [f"{c} {_TYPES[c]}" for c in OWN_COLUMN_NAMES] + [f"has_{c} boolean" for c in OWN_COLUMN_NAMES]
        ),
    )
    where = [not pending.clear_all, array_literal(pending.rows), array_literal(pending.removed)]
    if names:
        cleared = array_literal(names)
        return sql, [cleared, *where, cleared, _pending_json(pending)]
    return sql, [*where, _pending_json(pending)]


def _without(column: str, names: list[str]) -> str:
    """*column* (a JSON object keyed by index name) less the keys *names*."""
    if not names:
        return column
    return f"NULLIF({column} - ARRAY[{', '.join(map(name_literal, names))}], '{{}}')"


def has_changes(pending: Pending | None) -> bool:
    return pending is not None and bool(
        pending.rows or pending.removed or pending.clear_all or pending.cleared
    )


def _pending_json(pending: Pending) -> str:
    records = []
    for zoid, row in pending.rows.items():
        partial = row["partial"]
        record = {
            "zoid": zoid,
            "path": row["path"],
            "parent_path": row["parent_path"],
            "path_depth": row["path_depth"],
            # a partial row keeps its nulls: merged, they remove keys
            "idx": row["idx"] if partial else {k: v for k, v in row["idx"].items() if v is not None},
            "word_counts": _counts(row.get("word_counts", {}), partial),
            "partial": partial,
        }
        for column in OWN_COLUMN_NAMES:
            record[f"has_{column}"] = column in row or not partial
            record[column] = row.get(column)
        records.append(record)
    return orjson.dumps(records).decode()


def _counts(counts: dict, partial: bool) -> dict | None:
    if partial:
        return counts
    return {k: v for k, v in counts.items() if v is not None} or None


def catalog_sql(sql: str, pending: Pending | None) -> tuple[str, list]:
    """*sql*, a statement that reads the catalog rows as :data:`ROWS`, over
    the rows this transaction sees; and the parameters that go before its
    own."""
    if not has_changes(pending):
        head, params = _TABLE, []
    else:
        head, params = _overlay(pending)
    if sql.startswith("WITH "):
        return f"{head},\n{sql[5:]}", params
    return f"{head}\n{sql}", params


def pending_metadata(pending: Pending | None, zoids) -> dict:
    """Metadata of *zoids* that this transaction changed (or removed: None)."""
    if not has_changes(pending):
        return {}
    found = {}
    for zoid in zoids:
        row = pending.rows.get(zoid)
        if row is not None and row["meta"] is not None:
            found[zoid] = row["meta"]
    return found

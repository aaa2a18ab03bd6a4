"""The zodb-pgjsonb state processor: pending catalog rows → table columns.

zodb-pgjsonb calls :meth:`CatalogStateProcessor.process` for each object it
stores and :meth:`~CatalogStateProcessor.finalize` at the end of the vote,
both inside the PostgreSQL transaction that writes the objects.  Catalog
rows therefore commit or roll back together with the content.  The
processor is shared by all threads; everything per transaction lives in
:mod:`plone.pgcatalog.pending`.
"""

from __future__ import annotations

from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.registry import OWN_COLUMN_NAMES
from plone.pgcatalog.schema import CATALOG_COLUMNS
from plone.pgcatalog.schema import clear_index_sql
from plone.pgcatalog.schema import FOLD_TEXT_STATISTICS
from plone.pgcatalog.schema import schema_sql
from plone.pgcatalog.undo import plan_repair
from plone.pgcatalog.undo import schedule
from plone.pgcatalog.values import array_literal
from zodb_pgjsonb.storage import ExtraColumn

import orjson
import transaction


_CASTS = {
    "idx": "::jsonb",
    "word_counts": "::jsonb",
    "meta": "::text",
    "searchable_text": "::tsvector",
    "object_provides": "::jsonb",
}

_CLEAR = ", ".join(f"{name} = NULL" for name in CATALOG_COLUMNS)


def row_params(row: dict) -> dict:
    """A pending row as SQL parameters for the catalog columns."""
    idx = {k: v for k, v in row["idx"].items() if v is not None}
    counts = {k: v for k, v in row.get("word_counts", {}).items() if v is not None}
    return {
        "path": row["path"],
        "parent_path": row["parent_path"],
        "path_depth": row["path_depth"],
        "idx": orjson.dumps(idx).decode(),
        "word_counts": _json(counts or None),
        "meta": _json(row["meta"]),
        "searchable_text": row.get("searchable_text"),
        "object_provides": _json(row.get("object_provides")),
    }


def _json(value) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _set(column: str) -> str:
    return f"{column} = %({column})s{_CASTS.get(column, '')}"


# A full row replaces every column; a partial one merges idx and the word
# counts and keeps the own columns and metadata it does not carry.
_UPDATE_FULL = "UPDATE object_state SET {} WHERE zoid = %(zoid)s".format(
    ", ".join(map(_set, CATALOG_COLUMNS))
)
_UPDATE_PARTIAL = (
    "UPDATE object_state SET path = %(path)s, parent_path = %(parent_path)s, path_depth = %(path_depth)s, "
    "idx = jsonb_strip_nulls(COALESCE(idx, '{}'::jsonb) || %(idx)s::jsonb), "
    "word_counts = NULLIF(jsonb_strip_nulls(COALESCE(word_counts, '{}'::jsonb) || %(word_counts)s::jsonb), '{}'), "
    "meta = COALESCE(%(meta)s::text, meta), "
    + ", ".join(
        f"{column} = CASE WHEN %(has_{column})s THEN %({column})s{_CASTS[column]} ELSE {column} END"
        for column in OWN_COLUMN_NAMES
    )
    + " WHERE zoid = %(zoid)s"
)


class CatalogStateProcessor:
    """Writes catalog rows with their objects, clears them on uncatalog."""

    def get_extra_columns(self) -> list[ExtraColumn]:
        return [ExtraColumn(name, f"%({name})s{_CASTS.get(name, '')}") for name in CATALOG_COLUMNS]

    def get_schema_sql(self) -> str:
        return schema_sql()

    def process(self, zoid, class_mod, class_name, state):
        pending = get_pending()
        if pending is None:
            return None
        row = pending.rows.get(zoid)
        if row is None or row["partial"]:
            return None
        pending.written.add(zoid)
        return row_params(row)

    def undone(self, cursor, tid: int, restored: list[int], deleted: list[int], entries: dict) -> None:
        """An undo is restoring *restored*: catalog them again once it has
        committed (see :mod:`plone.pgcatalog.undo`)."""
        schedule(transaction.get(), plan_repair(cursor, restored, entries))

    def finalize(self, cursor) -> None:
        pending = get_pending()
        if not pending:
            return
        for statement in pending.ddl:
            cursor.execute(statement)
        for name, column in pending.cleared.items():
            cursor.execute(clear_index_sql(name, column), (array_literal(pending.rows),))
        if pending.clear_all:
            # rows about to be written in full need no clearing first
            rewritten = pending.written | {zoid for zoid, row in pending.rows.items() if not row["partial"]}
            cursor.execute(
                f"UPDATE object_state SET {_CLEAR} WHERE idx IS NOT NULL AND NOT (zoid = ANY(%s::bigint[]))",
                (array_literal(rewritten),),
            )
        full, partial = [], []
        for zoid, row in pending.rows.items():
            if row["partial"]:
                partial.append((zoid, row))
            elif zoid not in pending.written:
                full.append((zoid, row))
        if full:
            cursor.executemany(_UPDATE_FULL, [{**row_params(row), "zoid": zoid} for zoid, row in full])
        if partial:
            params = []
            for zoid, row in partial:
                p = row_params(row)
                p["zoid"] = zoid
                p["idx"] = orjson.dumps(row["idx"]).decode()  # keeps nulls: they remove keys
                p["word_counts"] = orjson.dumps(row.get("word_counts", {})).decode()
                for column in OWN_COLUMN_NAMES:
                    p[f"has_{column}"] = column in row
                params.append(p)
            cursor.executemany(_UPDATE_PARTIAL, params)
        if pending.removed:
            cursor.execute(
                f"UPDATE object_state SET {_CLEAR} WHERE path = ANY(%s::text[]) AND NOT (zoid = ANY(%s::bigint[]))",
                (array_literal(pending.removed), array_literal(pending.rows)),
            )
        cursor.execute(FOLD_TEXT_STATISTICS)
        cursor.execute("UPDATE pgcatalog_counter SET value = value + 1 WHERE id = 1")
        if pending.clear_all or pending.ddl:
            # a rebuild or new indexes: statistics for the planner right away,
            # not when autovacuum gets to it (ANALYZE sees this transaction's rows)
            cursor.execute("ANALYZE object_state")

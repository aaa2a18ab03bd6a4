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
from plone.pgcatalog.schema import CATALOG_COLUMNS
from plone.pgcatalog.schema import schema_sql
from zodb_pgjsonb.storage import ExtraColumn

import orjson


_CASTS = {"idx": "::jsonb", "meta": "::jsonb", "searchable_text": "::tsvector"}

_CLEAR = ", ".join(f"{name} = NULL" for name in CATALOG_COLUMNS)


def row_params(row: dict) -> dict:
    """A pending row as SQL parameters for the catalog columns."""
    idx = {k: v for k, v in row["idx"].items() if v is not None}
    return {
        "path": row["path"],
        "parent_path": row["parent_path"],
        "path_depth": row["path_depth"],
        "idx": orjson.dumps(idx).decode(),
        "meta": None if row["meta"] is None else orjson.dumps(row["meta"]).decode(),
        "searchable_text": row.get("searchable_text"),
    }


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

    def finalize(self, cursor) -> None:
        pending = get_pending()
        if not pending:
            return
        for statement in pending.ddl:
            cursor.execute(statement)
        if pending.clear_all:
            cursor.execute(
                f"UPDATE object_state SET {_CLEAR} WHERE idx IS NOT NULL AND NOT (zoid = ANY(%s))",
                (list(pending.written),),
            )
        full, partial = [], []
        for zoid, row in pending.rows.items():
            if row["partial"]:
                partial.append((zoid, row))
            elif zoid not in pending.written:
                full.append((zoid, row))
        if full:
            cursor.executemany(
                "UPDATE object_state SET path = %(path)s, parent_path = %(parent_path)s, "
                "path_depth = %(path_depth)s, idx = %(idx)s::jsonb, meta = %(meta)s::jsonb, "
                "searchable_text = %(searchable_text)s::tsvector WHERE zoid = %(zoid)s",
                [{**row_params(row), "zoid": zoid} for zoid, row in full],
            )
        if partial:
            params = []
            for zoid, row in partial:
                p = row_params(row)
                p["zoid"] = zoid
                p["idx"] = orjson.dumps(row["idx"]).decode()  # keeps nulls: they remove keys
                p["has_text"] = "searchable_text" in row
                params.append(p)
            cursor.executemany(
                "UPDATE object_state SET path = %(path)s, parent_path = %(parent_path)s, "
                "path_depth = %(path_depth)s, "
                "idx = jsonb_strip_nulls(COALESCE(idx, '{}'::jsonb) || %(idx)s::jsonb), "
                "meta = COALESCE(%(meta)s::jsonb, meta), "
                "searchable_text = CASE WHEN %(has_text)s THEN %(searchable_text)s::tsvector "
                "ELSE searchable_text END WHERE zoid = %(zoid)s",
                params,
            )
        if pending.removed:
            cursor.execute(
                f"UPDATE object_state SET {_CLEAR} "
                "WHERE path = ANY(%s) AND NOT (zoid = ANY(%s))",
                (list(pending.removed), list(pending.rows)),
            )
        cursor.execute("UPDATE pgcatalog_counter SET value = value + 1 WHERE id = 1")

"""DDL: the catalog columns on ``object_state`` and one index per catalog index.

The columns are added through zodb-pgjsonb's deferred, versioned schema
hook (it runs them when no snapshot holds the table).  Expression indexes
come from the registry's own expressions, so the SQL the query builder
emits is exactly what the index was built on.  All indexes are partial
(``WHERE <expression> IS NOT NULL``): most rows of ``object_state`` are not
content.  Queries leave out ``idx IS NOT NULL`` when a clause implies it,
and statistics on every expression give the planner real row counts.
"""

from __future__ import annotations

from plone.pgcatalog import registry as r

import hashlib
import re


CATALOG_COLUMNS = ("path", "parent_path", "path_depth", "idx", "meta", *r.OWN_COLUMN_NAMES)

CATALOGED = "idx IS NOT NULL"

CATALOG_ROWS = "pgcatalog_rows"
ROWS = f"{CATALOG_ROWS} AS object_state"
"""The catalog rows in a statement's FROM clause, under the table's name so
that column references read the same; ``overlay.catalog_sql`` defines them
as the table, or the table with this transaction's changes laid over it."""


def schema_sql() -> str:
    """Columns and the fixed indexes (path, parent, SearchableText)."""
    return f"""
ALTER TABLE object_state
    ADD COLUMN IF NOT EXISTS path TEXT COLLATE "C",
    ADD COLUMN IF NOT EXISTS parent_path TEXT COLLATE "C",
    ADD COLUMN IF NOT EXISTS path_depth INTEGER,
    ADD COLUMN IF NOT EXISTS idx JSONB,
    ADD COLUMN IF NOT EXISTS meta TEXT,
    ADD COLUMN IF NOT EXISTS searchable_text TSVECTOR,
    ADD COLUMN IF NOT EXISTS object_provides JSONB;
-- Keep idx inline and uncompressed: PostgreSQL then moves the object state,
-- metadata and wide columns out of line first, and a search reads each row's
-- idx from the heap page, without fetching or decompressing anything.
ALTER TABLE object_state ALTER COLUMN idx SET STORAGE MAIN;
-- Metadata is JSON text: only Python reads it, and PostgreSQL would spend
-- more printing a JSONB value than fetching it.  (0.1.0.dev0 stored JSONB.)
DO $$ BEGIN
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = 'object_state'::regclass AND attname = 'meta')
       = 'jsonb'::regtype THEN
        ALTER TABLE object_state ALTER COLUMN meta TYPE TEXT USING meta::text;
    END IF;
END $$;
-- Columns read whole by searches and listings decompress ten times faster
-- with lz4 (metadata of 500 rows: 5 ms with pglz, 0.3 ms); a server built
-- without lz4 keeps its default.  Values written before keep theirs.
DO $$ BEGIN
    ALTER TABLE object_state ALTER COLUMN meta SET COMPRESSION lz4,
                             ALTER COLUMN object_provides SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
CREATE INDEX IF NOT EXISTS pgcatalog_path ON object_state (path) WHERE path IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_parent ON object_state (parent_path, path_depth) WHERE parent_path IS NOT NULL;
CREATE TABLE IF NOT EXISTS pgcatalog_counter (id INTEGER PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO pgcatalog_counter VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE INDEX IF NOT EXISTS pgcatalog_searchable_text ON object_state USING gin (searchable_text)
    WHERE searchable_text IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_cataloged ON object_state (zoid) WHERE {CATALOGED};
"""


def index_name(index: r.IndexDef, expression: str) -> str:
    slug = re.sub(r"[^a-z0-9_]", "_", index.name.lower())[:40]
    digest = hashlib.sha1(f"{index.name}\0{expression}".encode()).hexdigest()[:8]
    return f"pgcatalog_{slug}_{digest}"


def index_ddl(index: r.IndexDef) -> list[str]:
    """DDL for one catalog index (may be none): an expression index (B-tree
    ones end in ``zoid``, the tie-break of every sort), partial on its
    expression being set (every query clause on it implies that, so
    the planner may use it), and statistics on the expression, so that the
    planner estimates how many rows a value matches."""
    kind = index.kind
    if index.custom:
        return list(r.custom_kind(kind).ddl(index))
    if kind == r.PATH or index.column == "searchable_text":
        return []  # served by the fixed indexes
    if kind == r.DATE_RANGE:
        exprs = list(index.range_expressions())
    else:
        exprs = [index.expression()]
    method = "gin" if kind in (r.KEYWORD, r.DATE_RECURRING, r.TEXT) else "btree"
    columns = ", ".join(exprs)
    if kind in r.BTREE_KINDS:
        columns += ", zoid"  # in sort order with the tie-break: a page is an index walk
    name = index_name(index, columns)
    ddl = [
        f"CREATE INDEX IF NOT EXISTS {name} ON object_state USING {method} ({columns}) "
        f"WHERE ({exprs[0]}) IS NOT NULL"
    ]
    if index.column is None:  # a column of its own has column statistics
        stats_on = ", ".join(f"({e})" for e in exprs)
        ddl.append(f"CREATE STATISTICS IF NOT EXISTS {name}_stats ON {stats_on} FROM object_state")
    return ddl


def clear_index_sql(name: str, column: str | None) -> str:
    """Drop the committed rows' values of index *name*, stored in its own
    *column* if it has one (ZCatalog's ``index.clear()``), except in the
    rows given as the one parameter."""
    keep = "NOT (zoid = ANY(%s::bigint[]))"
    if column is not None:
        return f"UPDATE object_state SET {column} = NULL WHERE {column} IS NOT NULL AND {keep}"
    key = r.name_literal(name)
    return f"UPDATE object_state SET idx = idx - {key} WHERE idx ? {key} AND {keep}"

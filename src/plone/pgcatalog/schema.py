"""DDL: the catalog columns on ``object_state`` and one index per catalog index.

The columns are added through zodb-pgjsonb's deferred, versioned schema
hook (it runs them when no snapshot holds the table).  Expression indexes
come from the registry's own expressions, so the SQL the query builder
emits is exactly what the index was built on.  All indexes are partial
(``WHERE idx IS NOT NULL``): most rows of ``object_state`` are not content.
"""

from __future__ import annotations

from plone.pgcatalog import registry as r

import hashlib
import re


CATALOG_COLUMNS = ("path", "parent_path", "path_depth", "idx", "meta", *r.OWN_COLUMN_NAMES)

CATALOGED = "idx IS NOT NULL"


def schema_sql() -> str:
    """Columns and the fixed indexes (path, parent, SearchableText)."""
    return f"""
ALTER TABLE object_state
    ADD COLUMN IF NOT EXISTS path TEXT COLLATE "C",
    ADD COLUMN IF NOT EXISTS parent_path TEXT COLLATE "C",
    ADD COLUMN IF NOT EXISTS path_depth INTEGER,
    ADD COLUMN IF NOT EXISTS idx JSONB,
    ADD COLUMN IF NOT EXISTS meta JSONB,
    ADD COLUMN IF NOT EXISTS searchable_text TSVECTOR,
    ADD COLUMN IF NOT EXISTS object_provides JSONB;
CREATE INDEX IF NOT EXISTS pgcatalog_path ON object_state (path) WHERE {CATALOGED};
CREATE INDEX IF NOT EXISTS pgcatalog_parent ON object_state (parent_path, path_depth) WHERE {CATALOGED};
CREATE TABLE IF NOT EXISTS pgcatalog_counter (id INTEGER PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO pgcatalog_counter VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE INDEX IF NOT EXISTS pgcatalog_searchable_text ON object_state USING gin (searchable_text)
    WHERE {CATALOGED};
"""


def index_name(index: r.IndexDef, expression: str) -> str:
    slug = re.sub(r"[^a-z0-9_]", "_", index.name.lower())[:40]
    digest = hashlib.sha1(f"{index.name}\0{expression}".encode()).hexdigest()[:8]
    return f"pgcatalog_{slug}_{digest}"


def index_ddl(index: r.IndexDef) -> list[str]:
    """CREATE INDEX statements for one catalog index (may be none)."""
    kind = index.kind
    if kind == r.PATH or index.column == "searchable_text":
        return []  # served by the fixed indexes
    if kind == r.DATE_RANGE:
        start, end = index.range_expressions()
        expr = f"({start}), ({end})"
        method = "btree"
    elif kind in (r.KEYWORD, r.DATE_RECURRING):
        expr = index.expression()
        method = "gin"
    elif kind == r.TEXT:
        expr = index.expression()
        method = "gin"
    else:
        expr = index.expression()
        method = "btree"
    name = index_name(index, expr)
    return [
        f"CREATE INDEX IF NOT EXISTS {name} ON object_state USING {method} ({expr}) WHERE {CATALOGED}"
    ]

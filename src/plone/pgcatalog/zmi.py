"""What the catalog's ZMI tabs show, read from PostgreSQL.

ZCatalog's management screens list records, indexes, metadata and a query
report from its BTrees; here each tab's data comes from the catalog rows
and PostgreSQL's catalogs, computed in Python and handed to a page
template (``www/``), which only lays it out.
"""

from __future__ import annotations

from plone.pgcatalog import registry as r
from plone.pgcatalog.database import select
from plone.pgcatalog.database import site_path
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.values import array_literal
from typing import Any

import re


__all__ = ["FIXED_INDEXES", "index_rows", "records"]

RECORDS_SHOWN = 100

FIXED_INDEXES = {
    r.PATH: ("pgcatalog_path", "pgcatalog_parent"),
    "SearchableText": ("pgcatalog_searchable_text",),
}
"""SQL indexes of the schema itself that serve a kind (or an index)."""

_NAME = re.compile(r"CREATE INDEX IF NOT EXISTS (\S+) ON")


def records(tool: Any, path: str = "", limit: int = RECORDS_SHOWN) -> dict:
    """The Catalog tab: how many records there are (under *path*, if
    given) and the first *limit* of them in path order."""
    where, params = CATALOGED, []
    if path:
        where += " AND (path = %s OR starts_with(path, %s))"
        params = [path.rstrip("/"), path.rstrip("/") + "/"]
    (count,) = select(tool, "count(*)", where, params)[0]
    rows = select(tool, "zoid, path", f"{where} ORDER BY path LIMIT {int(limit)}", params)
    return {
        "count": count,
        "path": path,
        "site": site_path(tool),
        "rows": [{"rid": zoid, "path": row_path} for zoid, row_path in rows],
    }


def _sql_indexes(index: r.IndexDef) -> tuple[str, ...]:
    fixed = FIXED_INDEXES.get(index.name) or FIXED_INDEXES.get(index.kind)
    if fixed:
        return fixed
    return tuple(match.group(1) for ddl in index_ddl(index) if (match := _NAME.match(ddl)))


def index_rows(tool: Any) -> list[dict]:
    """The Indexes tab: each index's kind, source attributes, SQL indexes
    with their sizes on disk, records with a value and distinct values."""
    defs = r.index_defs(tool)
    names = {index.name: _sql_indexes(index) for index in defs.values()}
    wanted = sorted({n for found in names.values() for n in found})
    sizes = dict(
        fetch(
            tool,
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = ANY(%s::text[])",
            [array_literal(wanted)],
            guarded=False,
        )
    )
    views = tool.Indexes
    rows = []
    for name, index in defs.items():
        view = views[name]
        rows.append(
            {
                "name": name,
                "kind": index.kind,
                "sources": ", ".join(view.getIndexSourceNames()),
                "sql": [{"name": n, "size": _size(sizes.get(n))} for n in names[name]],
                "records": view.numObjects(),
                "distinct": _distinct(view),
            }
        )
    return rows


def _distinct(view: Any) -> int | str:
    try:
        return view.indexSize()
    except AttributeError:  # a GopipIndex keeps no values
        return "-"


def _size(size: int | None) -> str:
    if size is None:
        return "not built"
    value, unit = float(size), "bytes"
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            break
        value /= 1024
    return f"{value:.0f} bytes" if unit == "bytes" else f"{value:.1f} {unit}"

"""How long the install's SQL indexes hold the write lock on ``object_state``.

The install builds one partial index per catalog index (``WHERE <expression>
IS NOT NULL``) in the transaction that swaps the tool, before any row of the
site has catalog values, and catalogs the content afterwards in committed
batches.  ``CREATE INDEX`` blocks writes to the table while it runs; built
on rows without values it only scans the table.  This script measures both
orders on a synthetic ``object_state`` (Plone's standard indexes, rows of a
Plone site's size, every third one content):

    python benchmarks/install_ddl.py [--rows 100000] [--dsn ...]

Without ``--dsn`` (or ``PGCATALOG_BENCH_DSN``) an embedded PostgreSQL runs it.
"""

from __future__ import annotations

from plone.pgcatalog import registry as r
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.schema import schema_sql

import argparse
import os
import psycopg
import statistics
import time
import uuid


PLONE_INDEXES = [
    *(
        r.IndexDef(n, r.FIELD)
        for n in ("id", "getId", "portal_type", "review_state", "sortable_title", "Type")
    ),
    *(r.IndexDef(n, r.FIELD) for n in ("Creator", "in_reply_to", "getIcon", "meta_type")),
    r.IndexDef("UID", r.UUID),
    *(r.IndexDef(n, r.DATE) for n in ("created", "modified", "effective", "expires", "start", "end")),
    r.IndexDef(
        "effectiveRange", r.DATE_RANGE, options={"since_field": "effective", "until_field": "expires"}
    ),
    *(r.IndexDef(n, r.KEYWORD) for n in ("Subject", "allowedRolesAndUsers", "getRawRelatedItems")),
    r.IndexDef("object_provides", r.KEYWORD),
    *(r.IndexDef(n, r.BOOLEAN) for n in ("is_folderish", "is_default_page", "exclude_from_nav")),
    r.IndexDef("SearchableText", r.TEXT),
    r.IndexDef("Title", r.TEXT),
    r.IndexDef("Description", r.TEXT),
    r.IndexDef("path", r.PATH),
    r.IndexDef("getObjPositionInParent", r.GOPIP),
]

_TABLE = """CREATE TABLE object_state (zoid BIGINT PRIMARY KEY, tid BIGINT NOT NULL, class_mod TEXT,
    class_name TEXT, state JSONB, state_size INTEGER, refs BIGINT[])"""
_ROWS = """INSERT INTO object_state SELECT z, 1, 'OFS.Folder', 'Folder', jsonb_build_object('title', 'x' || z), 100, '{}'
  FROM generate_series(1, %s) AS z"""

_FILL = """
UPDATE object_state SET path = '/plone/f' || (zoid % 100) || '/d' || zoid, parent_path = '/plone/f' || (zoid % 100),
  path_depth = 3, idx = jsonb_build_object(
    'id', 'd' || zoid, 'getId', 'd' || zoid, 'portal_type', 'Document', 'review_state', 'published',
    'sortable_title', 'document ' || zoid, 'Type', 'Page', 'Creator', 'admin', 'UID', md5(zoid::text),
    'created', 1000000 + zoid, 'modified', 1000000 + zoid, 'effective', 1000000 + zoid, 'expires', 9000000,
    'effectiveRange', jsonb_build_array(-10, 2000000000), 'Subject', jsonb_build_array('s' || (zoid % 50)),
    'allowedRolesAndUsers', jsonb_build_array('Anonymous'), 'is_folderish', false, 'is_default_page', false,
    'exclude_from_nav', false, 'Title', '''document'':1', 'Description', '''text'':1',
    'getObjPositionInParent', zoid % 1000),
  searchable_text = to_tsvector('simple', 'document body text ' || zoid), object_provides = '["IDocument"]'
 WHERE zoid % 3 = 0
"""


def build_seconds(conn: psycopg.Connection) -> float:
    statements = [ddl for index in PLONE_INDEXES for ddl in index_ddl(index)]
    started = time.perf_counter()
    with conn.transaction():
        for statement in statements:
            conn.execute(statement)
    return time.perf_counter() - started


def drop_indexes(conn: psycopg.Connection) -> None:
    for (name,) in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'object_state' AND indexname LIKE 'pgcatalog\\_%%' "
        "AND indexname NOT IN ('pgcatalog_path', 'pgcatalog_parent', 'pgcatalog_searchable_text', "
        "'pgcatalog_cataloged')"
    ).fetchall():
        conn.execute(f"DROP INDEX {name}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dsn", default=os.environ.get("PGCATALOG_BENCH_DSN"))
    args = parser.parse_args(argv)
    server = None
    dsn = args.dsn
    if not dsn:
        import pgserver
        import tempfile

        server = pgserver.get_server(tempfile.mkdtemp(prefix="pgcatalog-ddl-"), cleanup_mode="delete")
        dsn = server.get_uri()
    name = "pgcatalog_ddl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(psycopg.conninfo.make_conninfo(dsn, dbname=name), autocommit=True) as conn:
            conn.execute(_TABLE)
            conn.execute(_ROWS, [args.rows])
            conn.execute(schema_sql())
            conn.execute("VACUUM ANALYZE object_state")
            empty = []
            for _ in range(args.repeat):
                empty.append(build_seconds(conn))
                drop_indexes(conn)
            conn.execute(_FILL)
            conn.execute("VACUUM ANALYZE object_state")
            filled = []
            for _ in range(args.repeat):
                filled.append(build_seconds(conn))
                drop_indexes(conn)
        statements = sum(len(index_ddl(index)) for index in PLONE_INDEXES)
        print(
            f"{statements} statements for {len(PLONE_INDEXES)} indexes on {args.rows} rows "
            f"({args.rows // 3} cataloged when filled), median of {args.repeat}:"
        )
        print(
            f"  built before the site's rows have values (the install): {statistics.median(empty) * 1000:.0f} ms"
        )
        print(
            f"  built after every row has its values:                   {statistics.median(filled) * 1000:.0f} ms"
        )
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()

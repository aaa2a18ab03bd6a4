"""The SQL floor: the statements plone.pgcatalog runs, timed bare.

:func:`capture_sql` records every ``(sql, params)`` the catalog tool
sends to PostgreSQL (it wraps ``PGCatalogTool._fetch``, through which all
its reads go).  :func:`time_statements` then runs the same statements on
one plain psycopg connection, prepared, with nothing else around them:
what any implementation of the query would at least have to pay.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from measure import time_repeated

import psycopg


Statement = tuple[str, list]


@contextmanager
def capture_sql() -> Iterator[list[Statement]]:
    """Record the statements the catalog runs inside the ``with`` block."""
    from plone.pgcatalog.tool import PGCatalogTool

    captured: list[Statement] = []
    original = PGCatalogTool._fetch

    def fetch(self, sql: str, params, guarded: bool = True) -> list[tuple]:
        captured.append((sql, list(params)))
        return original(self, sql, params, guarded)

    PGCatalogTool._fetch = fetch
    try:
        yield captured
    finally:
        PGCatalogTool._fetch = original


def run_statements(conn: psycopg.Connection, statements: list[Statement]) -> int:
    """Execute and fetch every statement; return the rows fetched."""
    rows = 0
    with conn.cursor() as cur:
        for sql, params in statements:
            cur.execute(sql, params, prepare=True)
            rows += len(cur.fetchall())
    return rows


def explain(dsn: str, statements: list[Statement]) -> str:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each statement, as text."""
    parts = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql, params in statements:
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            plan = "\n".join(row[0] for row in rows)
            parts.append(f"{sql}\n-- params: {params!r}\n{plan}\n")
    return "\n".join(parts)


def time_statements(dsn: str, statements: list[Statement], iterations: int, warmup: int) -> dict:
    """Median etc. of running *statements* in sequence, on one connection."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return time_repeated(lambda: run_statements(conn, statements), None, iterations, warmup)

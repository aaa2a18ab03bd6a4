"""The SQL floor: the statements plone.pgcatalog runs, timed bare.

:func:`capture_sql` records every ``(sql, params)`` the catalog tool
sends to PostgreSQL (it wraps ``plone.pgcatalog.database.fetch``, through
which all its reads go).  :func:`time_statements` then runs the same statements on
one plain psycopg connection, prepared, with nothing else around them:
what any implementation of the query would at least have to pay.  The
statements the catalog runs with PostgreSQL's generic plan (walks down a
sort index) run on a second connection set to generic plans, so that both
sides execute the same plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from measure import time_repeated

import psycopg


Statement = tuple[str, list, bool]  # sql, params, generic plan


@contextmanager
def capture_sql() -> Iterator[list[Statement]]:
    """Record the statements the catalog runs inside the ``with`` block."""
    from plone.pgcatalog import database

    captured: list[Statement] = []
    original = database.fetch

    def fetch(context, sql: str, params, **options) -> list[tuple]:
        captured.append((sql, list(params), options.get("generic", False)))
        return original(context, sql, params, **options)

    database.fetch = fetch
    try:
        yield captured
    finally:
        database.fetch = original


def run_statements(conns: dict[bool, psycopg.Connection], statements: list[Statement]) -> int:
    """Execute and fetch every statement, on the connection for its plan
    mode (``conns[generic]``); return the rows fetched."""
    rows = 0
    for sql, params, generic in statements:
        with conns[generic].cursor() as cur:
            cur.execute(sql, params, prepare=True)
            rows += len(cur.fetchall())
    return rows


def explain(dsn: str, statements: list[Statement]) -> str:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of each statement, as text."""
    parts = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql, params, _ in statements:
            rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            plan = "\n".join(row[0] for row in rows)
            parts.append(f"{sql}\n-- params: {params!r}\n{plan}\n")
    return "\n".join(parts)


def time_statements(dsn: str, statements: list[Statement], iterations: int, warmup: int) -> dict:
    """Median etc. of running *statements* in sequence, on one connection."""
    with psycopg.connect(dsn, autocommit=True) as plain, psycopg.connect(dsn, autocommit=True) as generic:
        generic.execute("SET plan_cache_mode = force_generic_plan")
        conns = {False: plain, True: generic}
        return time_repeated(lambda: run_statements(conns, statements), None, iterations, warmup)

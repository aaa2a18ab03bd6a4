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

from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from measure import time_repeated

import psycopg
import time


Statement = tuple[str, list, bool]  # sql, params, generic plan


@contextmanager
def watching_sql(watch: Callable[[str, list, dict], object]) -> Iterator[None]:
    """Inside the ``with`` block, call *watch* with each ``(sql, params,
    options)`` the catalog tool sends, before it is sent (it wraps
    ``plone.pgcatalog.database.fetch``, through which all its reads go)."""
    from plone.pgcatalog import database

    original = database.fetch

    def fetch(context, sql: str, params, **options) -> list[tuple]:
        watch(sql, params, options)
        return original(context, sql, params, **options)

    database.fetch = fetch
    try:
        yield
    finally:
        database.fetch = original


@contextmanager
def capture_sql() -> Iterator[list[Statement]]:
    """Record the statements the catalog runs inside the ``with`` block."""
    captured: list[Statement] = []

    def record(sql: str, params, options: dict) -> None:
        captured.append((sql, list(params), options.get("generic", False)))

    with watching_sql(record):
        yield captured


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


def _plan_nodes(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", ()):
        yield from _plan_nodes(child)


def plan_facts(dsn: str, statements: list[Statement]) -> dict:
    """What PostgreSQL did for *statements*, summed over them, from
    ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)``: planning and execution
    time, the heap fetches of index-only scans (rows whose page is not
    all-visible: what writes without a VACUUM leave) and buffers.
    Planning is that of a new statement on a session whose caches the
    same statements have warmed: a prepared one reused with its generic
    plan plans nothing."""
    facts = {
        "planning_ms": 0.0,
        "execution_ms": 0.0,
        "index_only_scans": 0,
        "heap_fetches": 0,
        "shared_hit": 0,
        "shared_read": 0,
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql, params, _ in statements:  # a new session's first plans load its caches
            conn.execute("EXPLAIN " + sql, params).fetchall()
        for sql, params, _ in statements:
            ((explained,),) = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchall()
            top = explained[0]
            facts["planning_ms"] += top["Planning Time"]
            facts["execution_ms"] += top["Execution Time"]
            facts["shared_hit"] += top["Plan"].get("Shared Hit Blocks", 0)
            facts["shared_read"] += top["Plan"].get("Shared Read Blocks", 0)
            for node in _plan_nodes(top["Plan"]):
                if node["Node Type"] == "Index Only Scan":
                    facts["index_only_scans"] += 1
                    facts["heap_fetches"] += node.get("Heap Fetches", 0)
    return facts


TABLE_STATE = """SELECT c.relpages, c.relallvisible, s.n_live_tup, s.n_dead_tup,
       s.n_mod_since_analyze, s.vacuum_count, s.autovacuum_count, s.analyze_count,
       s.autoanalyze_count
  FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
 WHERE c.relname = 'object_state' AND s.schemaname = current_schema()"""


def table_state(dsn: str) -> dict:
    """``object_state`` as the planner and autovacuum see it: pages and
    all-visible pages (index-only scans skip the heap only on those), live
    and dead rows, changes since the last ANALYZE, and how often it was
    vacuumed and analyzed (by hand and by autovacuum)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(TABLE_STATE)
        row = cur.fetchone()
        return dict(zip([c.name for c in cur.description], row, strict=True)) if row else {}


@contextmanager
def first_statement_times() -> Iterator[list[float | None]]:
    """Inside the ``with`` block, the ``perf_counter()`` at which each
    search first sends a statement: the caller appends ``None`` before each
    search, the first statement it sends replaces it.  What the catalog's
    Python costs before the database works."""
    sent: list[float | None] = []

    def stamp(sql: str, params, options: dict) -> None:
        if sent and sent[-1] is None:
            sent[-1] = time.perf_counter()

    with watching_sql(stamp):
        yield sent

"""The PostgreSQL server of a run, and a fresh database per backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from psycopg import conninfo

import os
import psycopg
import shutil
import tempfile
import uuid


DSN_ENV = "PGCATALOG_BENCH_DSN"


@contextmanager
def pg_server() -> Iterator[str]:
    """The DSN of the server ``PGCATALOG_BENCH_DSN`` names, or of an
    embedded throwaway one (``pgserver``) while the block runs."""
    dsn = os.environ.get(DSN_ENV)
    if dsn:
        yield dsn
        return
    import pgserver

    tmp = tempfile.mkdtemp(prefix="pgcatalog-bench-pg-")
    server = pgserver.get_server(tmp, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def server_version(server_dsn: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


@contextmanager
def fresh_database(server_dsn: str, prefix: str) -> Iterator[str]:
    """Create a database, yield its DSN (``key=value`` form), drop it."""
    name = f"bench_{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield conninfo.make_conninfo(server_dsn, dbname=name)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')

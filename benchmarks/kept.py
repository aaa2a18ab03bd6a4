"""A benchmark site kept in a database of its own between runs, for the
sizes that take long to build (100,000 documents take most of an hour
through Plone on two cores).

    .venv/bin/python benchmarks/kept.py --database pgcatalog_bench_100k --docs 100000

creates the database on the server ``PGCATALOG_BENCH_DSN`` names (else
the local ``host=localhost user=postgres dbname=postgres``) when it is
missing, the plone.pgcatalog site in it when that is missing, and adds
the benchmark's documents (``workload.doc_spec``, through Plone as
``run.py``'s bulk path adds them) until it holds ``--docs``; run again, it
carries on where it stopped.  Before it ends it vacuums and analyzes the
database.  ``facets.py`` and ``suggestions.py`` measure
such a site with ``--kept DSN`` instead of building one.  Drop the
database when done (``--drop``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from database import DSN_ENV
from pathlib import Path
from psycopg import conninfo
from typing import Any

import argparse
import os
import psycopg
import shutil
import sys
import tempfile


LOCAL = "host=localhost user=postgres dbname=postgres"


def kept_dsn(database: str) -> str:
    """The DSN of *database* on the benchmark's server, created if missing."""
    server = os.environ.get(DSN_ENV) or LOCAL
    with psycopg.connect(server, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{database}"')
    return conninfo.make_conninfo(server, dbname=database)


def drop(database: str) -> None:
    server = os.environ.get(DSN_ENV) or LOCAL
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def vacuum(dsn: str) -> None:
    """``VACUUM (ANALYZE)``, as autovacuum would have done by the time
    anybody searches a site that has grown (a server may have it off);
    what is measured afterwards runs without (``Worker.settle``: none)."""
    import transaction

    transaction.abort()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def with_objects(site, documents: int) -> int:
    """How many of the site's first *documents* benchmark Documents are
    objects that can be edited: ``million.py``'s bulk rows, which come
    after them, have none."""
    from workload import doc_spec

    low, high = 0, documents  # the first *low* have objects; from *high* on, none
    while low < high:
        middle = (low + high) // 2
        spec = doc_spec(middle)
        folder = site.get(spec.folder)
        if folder is not None and spec.id in folder.objectIds():
            low = middle + 1
        else:
            high = middle
    return low


@contextmanager
def kept_site(dsn: str) -> Iterator[Any]:
    """A :class:`worker.Worker` on the kept site of *dsn* (built if the
    database holds none); its scratch directory is removed afterwards."""
    from worker import Worker

    home = Path(tempfile.mkdtemp(prefix="pgcatalog-kept-"))
    try:
        worker = Worker(
            {"backend": "pgcatalog", "dsn": dsn, "home": str(home), "vacuum": "none", "kept": True}
        )
        worker.build()
        yield worker
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--drop", action="store_true")
    args = parser.parse_args(argv)
    if args.drop:
        drop(args.database)
        return 0
    with kept_site(kept_dsn(args.database)) as worker:
        worker.grow_to(args.docs)
        vacuum(worker.config["dsn"])
        print(f"{worker.docs} documents in {args.database}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

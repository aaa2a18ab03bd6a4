"""A long unbatched result walked whole, as Plone's navigation walks it.

At its default depth of 3 the navigation lists the whole of a small site on
every page: one unbatched search, sorted on position, every brain's
metadata read.  This script builds, per backend, the load test's site
(2,000 seeded Documents in folders of 50), then times, each in a new
transaction, a navigation-like search walked whole reading six metadata
columns per brain, the same walk reading none, and the search alone
(``len()``); for plone.pgcatalog also the time spent in its row and
metadata loaders.

    .venv/bin/python benchmarks/navigation.py [--docs 2000] [--repeat 25]
        [--backends pgcatalog relstorage]

PostgreSQL as in ``run.py`` (``PGCATALOG_BENCH_DSN`` or an embedded server).
Each backend runs in its own process; medians in milliseconds.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from pathlib import Path

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time


COLUMNS = ("Title", "Description", "portal_type", "review_state", "exclude_from_nav", "getId")


def navigation_query(root: str) -> dict:
    """What a navigation tree of depth 3 asks the catalog for."""
    return {
        "path": {"query": root, "depth": 3},
        "portal_type": ["Folder", "Document", "News Item", "Event", "Link", "File", "Image", "Collection"],
        "sort_on": "getObjPositionInParent",
        "is_default_page": False,
    }


def median_ms(run, repeat: int) -> float:
    """The median of *repeat* timings of *run()*, each in a new transaction."""
    import transaction

    times = []
    for _ in range(repeat):
        transaction.abort()
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def measure(backend: str, dsn: str, docs: int, repeat: int) -> dict:
    """Build the site on *backend* and time the walks."""
    from workload import doc_spec

    import psycopg
    import transaction
    import zopesite

    app = zopesite.start_zope(zopesite.write_config(backend, Path(tempfile.mkdtemp()), dsn))
    site = zopesite.create_site(app, backend)
    for first in range(0, docs, 200):
        for number in range(first, min(docs, first + 200)):
            zopesite.add_document(site, doc_spec(number))
        transaction.commit()
        site._p_jar.cacheGC()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    catalog = site.portal_catalog
    query = navigation_query("/".join(site.getPhysicalPath()))

    def walk(columns=COLUMNS):
        for brain in catalog.searchResults(**query):
            brain.getPath()
            for name in columns:
                getattr(brain, name)

    result = {
        "matches": len(catalog.searchResults(**query)),
        "walk_ms": median_ms(walk, repeat),
        "walk_without_metadata_ms": median_ms(lambda: walk(()), repeat),
        "search_only_ms": median_ms(lambda: len(catalog.searchResults(**query)), repeat),
    }
    if backend == "pgcatalog":
        result.update(loaders(catalog, query, walk, repeat))
    transaction.abort()
    app._p_jar.close()
    return result


def loaders(catalog, query: dict, walk, repeat: int) -> dict:
    """Medians of the time a walk spends in plone.pgcatalog's row and
    metadata loaders, and how many statements each made."""
    from plone.pgcatalog import results

    spent = {"rows": 0.0, "metadata": 0.0}
    original = results.CatalogResults.__init__

    def timed(load, key):
        def call(*args):
            started = time.perf_counter()
            try:
                return load(*args)
            finally:
                spent[key] += time.perf_counter() - started

        return call

    def init(self, rows, columns, load_metadata, wrap, **kw):
        if kw.get("load_rows") is not None:
            kw["load_rows"] = timed(kw["load_rows"], "rows")
        original(self, rows, columns, timed(load_metadata, "metadata"), wrap, **kw)

    rows, metadata = [], []
    results.CatalogResults.__init__ = init
    try:
        for _ in range(repeat):
            spent["rows"] = spent["metadata"] = 0.0
            median_ms(walk, 1)
            rows.append(spent["rows"] * 1000)
            metadata.append(spent["metadata"] * 1000)
    finally:
        results.CatalogResults.__init__ = original
    found = catalog.searchResults(**query)
    for brain in found:
        for name in COLUMNS:
            getattr(brain, name)
    return {
        "row_loads_ms": round(statistics.median(rows), 2),
        "metadata_loads_ms": round(statistics.median(metadata), 2),
        "row_statements_after_the_first": found.row_queries,
        "metadata_statements": found.metadata_queries,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--backends", nargs="+", default=["pgcatalog", "relstorage"])
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "DSN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        backend, dsn = args.worker
        print(json.dumps({"backend": backend, **measure(backend, dsn, args.docs, args.repeat)}))
        return 0
    with pg_server() as server_dsn:
        for backend in args.backends:
            with fresh_database(server_dsn, f"nav_{backend}") as dsn:
                command = [sys.executable, __file__, "--docs", str(args.docs), "--repeat", str(args.repeat)]
                done = subprocess.run(
                    [*command, "--worker", backend, dsn], capture_output=True, text=True, check=True
                )
                print(done.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the search box sends, on a kept site: timed in-process, and the
statements it sends.

    .venv/bin/python benchmarks/searchbox.py --database pgcatalog_bench_20k [--anonymous] [--iterations 60] [--explain]

Plone's search page and ``@search`` glob the words typed and AND them
(``postgresql*``, ``report AND postgresql*`` on 6.1, ``report* AND
postgresql*`` on 6.2), in relevance order, a batch of 10.  On the site
``kept.py`` keeps in *database*, each query is timed ``--iterations``
times, each search in a transaction of its own (its length and the paths
of its first 10 brains), and its statements are counted (with
``--explain``, ``EXPLAIN (ANALYZE, BUFFERS)`` of each; ``--text`` searches
the texts given instead).  Medians and p95
in ms.  To compare two versions of the code, run it with each in turn,
alternating (``PYTHONPATH=<other checkout>/src``).
"""

from __future__ import annotations

from floor import capture_sql
from floor import explain
from kept import kept_dsn
from kept import kept_site

import argparse
import statistics
import sys
import time
import transaction


QUERIES = [
    {"SearchableText": "postgresql*", "b_start": 0, "b_size": 10},
    {"SearchableText": "report AND postgresql*", "b_start": 0, "b_size": 10},
    {"SearchableText": "report* AND postgresql*", "b_start": 0, "b_size": 10},
    {"SearchableText": "postgresql"},
]


def search(catalog, query: dict) -> int:
    results = catalog.searchResults(**query)
    [brain.getPath() for brain in results[:10]]
    return len(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--anonymous", action="store_true")
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--text", action="append", help="search these texts (b_size 10) instead")
    args = parser.parse_args(argv)
    queries = (
        [{"SearchableText": text, "b_start": 0, "b_size": 10} for text in args.text] if args.text else QUERIES
    )
    with kept_site(kept_dsn(args.database)) as worker:
        import zopesite

        from AccessControl.SecurityManagement import noSecurityManager

        if args.anonymous:
            noSecurityManager()
        else:
            zopesite.login(worker.app)
        catalog = worker.catalog
        for query in queries:
            times = []
            for _ in range(args.iterations):
                transaction.abort()
                start = time.perf_counter()
                found = search(catalog, query)
                times.append((time.perf_counter() - start) * 1000)
            transaction.abort()
            with capture_sql() as statements:
                search(catalog, query)
            times.sort()
            p95 = times[max(0, int(len(times) * 0.95) - 1)]
            print(
                f"{query['SearchableText']!r}{' b_size 10' if 'b_size' in query else ''}: {found} found,"
                f" median {statistics.median(times):.2f} ms, p95 {p95:.2f} ms, {len(statements)} statements"
            )
            if args.explain:
                print(explain(worker.config["dsn"], statements))
    return 0


if __name__ == "__main__":
    sys.exit(main())

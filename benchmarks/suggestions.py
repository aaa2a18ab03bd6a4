""""Did you mean": how long ``portal_catalog.suggestions`` takes.

    .venv/bin/python benchmarks/suggestions.py --docs 5000 20000
    .venv/bin/python benchmarks/suggestions.py --kept pgcatalog_bench_100k   # kept.py's site

A plone.pgcatalog site of the benchmark's documents on a fresh database
(as ``run.py``), then each text of :data:`TYPED` (misspellings of the
site's words) as Anonymous and as the site's admin, each run in a new
transaction: medians and p95 in ms, with what was suggested.  ZCatalog
has no such call to compare with.  Written to
``benchmarks/results/<stamp>-suggestions.json``.
"""

from __future__ import annotations

import onesite
import sys


# misspelt words alone, and among words the site holds (each of which is
# looked for too)
TYPED = (
    "postgress",
    "reserch",
    "budgett planing",
    "stratgy",
    "conferense",
    "research strategy conferense",
    "postgresql budget planning strategy reserch",
)


def measure(worker, iterations: int) -> dict:
    """Each text of :data:`TYPED` as Anonymous and as the admin."""
    from AccessControl.SecurityManagement import noSecurityManager
    from measure import time_repeated

    import transaction
    import zopesite

    timings = {}
    for who in ("Anonymous", "admin"):
        for text in TYPED:
            transaction.abort()
            noSecurityManager() if who == "Anonymous" else zopesite.login(worker.app)

            def suggest(text=text):
                return worker.catalog.suggestions(SearchableText=text)

            timed = time_repeated(suggest, transaction.abort, iterations, 3)
            name = f"{who}: {text}"
            timings[name] = {
                "median": round(timed["median"], 2),
                "p95": round(timed["p95"], 2),
                "suggested": suggest(),
            }
            print(f"[{worker.docs}] {name}: {timings[name]}", file=sys.stderr, flush=True)
    return timings


def table(results: dict) -> str:
    lines = ["| documents | typed | median / p95 ms | suggested |", "| --- | --- | --- | --- |"]
    for size, timings in results.items():
        for name, found in timings.items():
            lines.append(f"| {size} | {name} | {found['median']:.2f} / {found['p95']:.2f} | {', '.join(found['suggested'][:3])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(onesite.main(__file__, __doc__, measure, table, {"typed": TYPED}, 50))

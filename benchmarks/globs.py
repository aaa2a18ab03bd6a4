"""Text searches as Plone's search page sends them, side by side.

    .venv/bin/python benchmarks/globs.py --docs 5000
    .venv/bin/python benchmarks/globs.py --docs 500 5000 --backends pgcatalog relstorage

Plone's search page (and plone.app.querystring's search) turns each typed
word into a glob and joins them with AND (``munge_search_term``:
``postgresql`` becomes ``postgresql*``, two words ``report* AND
postgresql*``).  For each backend, in its own process on a fresh database
(as ``run.py``), a site of the benchmark's documents, then each query of
:data:`QUERIES` as a bare search and as a listing, as the site's admin,
medians in ms; the plain word beside them.  Printed as a table of
pgcatalog ÷ each other backend, and written to
``benchmarks/results/<stamp>-globs.json``.
"""

from __future__ import annotations


from functools import partial

import sidebyside
import sys


QUERIES = {
    "word": "postgresql",
    "one word typed": "postgresql*",
    "two words typed": "report* AND postgresql*",
    "a short prefix": "post*",
    "words or a glob": "report OR postgresql*",
}


def measure(backend: str, dsn: str | None, docs: list[int], iterations: int, kept: bool = False) -> dict:
    """In this process: build *backend*'s site, grow it to each size of
    *docs* and time :data:`QUERIES` there."""
    from measure import time_repeated
    from workload import run_bare
    from workload import run_listing

    import transaction
    import zopesite

    out = {}
    for worker, size in sidebyside.grown(backend, dsn, docs, kept):
        transaction.abort()
        zopesite.login(worker.app)
        timings = out[str(size)] = {}
        for name, text in QUERIES.items():
            query = {"SearchableText": text}
            found = len(worker.catalog.searchResults(**query))
            timings[name] = {"found": found}
            for variant, run in (("bare", run_bare), ("listing", run_listing)):
                timed = time_repeated(partial(run, worker.catalog, query), transaction.abort, iterations, 5)
                timings[name][variant] = round(timed["median"], 3)
            print(f"[{backend} {size}] {name}: {timings[name]}", file=sys.stderr, flush=True)
    return out


def table(results: dict) -> str:
    backends = list(results)
    ours, others = backends[0], backends[1:]
    head = ["docs", "query", "found", *(f"{b} bare / listing ms" for b in backends)]
    head += [f"÷ {b} bare / listing" for b in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, timings in results[ours].items():
        for name, mine in timings.items():
            row = [size, f"{name}: `{QUERIES[name]}`", str(mine["found"])]
            for b in backends:
                theirs = results[b][size][name]
                row.append(f"{theirs['bare']:.2f} / {theirs['listing']:.2f}")
            for b in others:
                theirs = results[b][size][name]
                row.append(f"{mine['bare'] / theirs['bare']:.2f}x / {mine['listing'] / theirs['listing']:.2f}x")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return sidebyside.main(__file__, __doc__, measure, table, {"queries": QUERIES}, [5000], 100, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Facet counts: plone.pgcatalog's one statement against the REST API
proposal's approach on stock ZCatalog, side by side.

    .venv/bin/python benchmarks/facets.py --docs 20000
    .venv/bin/python benchmarks/facets.py --docs 500 5000 --backends pgcatalog relstorage

For each backend, in its own process on a fresh database (as ``run.py``),
a site of the benchmark's documents, then the five facets of
:data:`FACETS` for each query of :data:`QUERIES`:

- plone.pgcatalog: ``portal_catalog.facetCounts(FACETS, query)``;
- ZCatalog (RelStorage): as plone.restapi's proposal for ``@facet-count``
  (PR #1637) counts a facet, one search per facet with its own criterion
  left out, its record ids intersected with the index's
  ``documentToKeyMap`` and each record's keys counted in Python; a bucket
  facet (dates: the proposal has none) as one search per bucket.

Each run in a new transaction (as a request), medians and p90 in ms; the
counts of the backends are compared.  Printed as a table, written to
``benchmarks/results/<stamp>-facets.json``.
"""

from __future__ import annotations

from pathlib import Path

import logging
import shutil
import sidebyside
import sys
import tempfile



def facets() -> dict:
    from DateTime import DateTime

    years = {
        str(year): {"query": [DateTime(f"{year}/01/01 UTC"), DateTime(f"{year}/12/31 23:59 UTC")], "range": "min:max"}
        for year in (2021, 2022, 2023, 2024)
    }
    return {"portal_type": None, "review_state": None, "Subject": None, "is_folderish": None, "effective": years}


FACETS = ("portal_type", "review_state", "Subject", "is_folderish", "effective (years)")

QUERIES = {
    "everything, as Anonymous": ({}, True),
    "a word": ({"SearchableText": "postgresql"}, False),
    "type, subjects and state chosen": (
        {"portal_type": "Document", "Subject": ["python", "plone"], "review_state": "published"},
        False,
    ),
}


def own_keys(query: dict, name: str) -> list[str]:
    return [key for key in query if key == name or key.startswith(name + "_")]


def proposal_counts(catalog, query: dict, spec: dict) -> dict:
    """plone.restapi PR #1637's counting, facet by facet, on ZCatalog."""
    found = {}
    for name, buckets in spec.items():
        others = {key: value for key, value in query.items() if key not in own_keys(query, name)}
        if buckets is not None:
            found[name] = {label: len(catalog.searchResults({**others, name: value})) for label, value in buckets.items()}
            continue
        index = catalog._catalog.getIndex(name)
        rids = {brain.getRID() for brain in catalog.searchResults(others)}
        counts: dict = {}
        for rid in rids.intersection(index.documentToKeyMap()):
            keys = index.keyForDocument(rid)
            for key in [keys] if isinstance(keys, str) or not hasattr(keys, "__iter__") else keys:
                key = bool(key) if index.meta_type == "BooleanIndex" else key  # it keeps 0 and 1
                counts[key] = counts.get(key, 0) + 1
        found[name] = counts
    return found


def our_counts(catalog, query: dict, spec: dict) -> dict:
    return {name: dict(facet.counts) for name, facet in catalog.facetCounts(spec, query).items()}


def measure(backend: str, dsn: str | None, docs: list[int], iterations: int) -> dict:
    """In this process: build *backend*'s site, grow it to each size of
    *docs* and time the facet counts of :data:`QUERIES` there."""
    from AccessControl.SecurityManagement import noSecurityManager
    from measure import time_repeated
    from worker import Worker

    import transaction
    import zopesite

    logging.disable(logging.CRITICAL)
    count = our_counts if backend == "pgcatalog" else proposal_counts
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-facets-{backend}-"))
    try:
        worker = Worker({"backend": backend, "dsn": dsn, "home": str(home), "vacuum": "each"})
        worker.build()
        out = {}
        for size in sorted(docs):
            worker.grow_to(size)
            worker.settle()
            timings = out[str(size)] = {}
            for name, (query, anonymous) in QUERIES.items():
                transaction.abort()
                if anonymous:
                    noSecurityManager()
                else:
                    zopesite.login(worker.app)
                spec = facets()
                counts = count(worker.catalog, query, spec)
                timed = time_repeated(lambda query=query, spec=spec: count(worker.catalog, query, spec), transaction.abort, iterations, 3)
                timings[name] = {
                    "median": round(timed["median"], 2),
                    "p90": round(timed["p90"], 2),
                    "counts": {facet: {str(k): v for k, v in values.items() if v} for facet, values in counts.items()},
                }
                print(f"[{backend} {size}] {name}: {timed['median']:.2f} ms (p90 {timed['p90']:.2f})", file=sys.stderr, flush=True)
        zopesite.login(worker.app)
        return out
    finally:
        shutil.rmtree(home, ignore_errors=True)


def table(results: dict) -> str:
    backends = list(results)
    ours, others = backends[0], backends[1:]
    head = ["docs", "query", *(f"{b} median / p90 ms" for b in backends), *(f"{b} ÷ ours" for b in others), "same counts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, timings in results[ours].items():
        for name, mine in timings.items():
            row = [size, name]
            row += [f"{results[b][size][name]['median']:.2f} / {results[b][size][name]['p90']:.2f}" for b in backends]
            row += [f"{results[b][size][name]['median'] / mine['median']:.1f}x" for b in others]
            row.append("yes" if all(results[b][size][name]["counts"] == mine["counts"] for b in others) else "NO")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return sidebyside.main(__file__, __doc__, measure, table, {"facets": FACETS}, [20000], 30, argv)


if __name__ == "__main__":
    sys.exit(main())

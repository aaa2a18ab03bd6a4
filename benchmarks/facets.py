"""Facet counts: plone.pgcatalog's one statement against the REST API
proposal's approach on stock ZCatalog, side by side.

    .venv/bin/python benchmarks/facets.py --docs 20000
    .venv/bin/python benchmarks/facets.py --docs 500 5000 --backends pgcatalog relstorage
    .venv/bin/python benchmarks/facets.py --kept pgcatalog_bench_100k   # kept.py's site

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
counts of the backends are compared.  Each query's first count in the
process is timed apart (``first``): plone.pgcatalog counts every matching
row then, and brings what it remembers up to date afterwards.  Printed as a table, written to
``benchmarks/results/<stamp>-facets.json``.
"""

from __future__ import annotations

from functools import partial

import sidebyside
import sys
import time



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


# What happens between two timed counts (untimed), as a busy site has it:
# nothing; an editor's committed title change; a committed subject change
# (a facet's values changed).  plone.pgcatalog brings the counts it
# remembers up to date from the rows the commit changed (changes.py).
BETWEEN = ("nothing", "a title edited", "a subject edited")


def between(worker, what: str, documents: int):
    """The untimed step before each timed count: *what* (of :data:`BETWEEN`)
    committed, on one of the first *documents* taken in turn, then a new
    transaction."""
    from workload import doc_spec
    from workload import SUBJECTS

    import transaction
    import zopesite

    turn = iter(range(10**9))

    def step() -> None:
        transaction.abort()
        if what == "nothing":
            return
        number = next(turn)
        if what == "a title edited":
            zopesite.edit_document(worker.site, number % documents)
        else:
            spec = doc_spec(number % documents)
            doc = worker.site[spec.folder][spec.id]
            # the subject after its first one: a change even where an
            # earlier run (or query) edited this document before
            held = doc.Subject()
            after = SUBJECTS.index(held[0]) + 1 if held and held[0] in SUBJECTS else number
            doc.setSubject([SUBJECTS[after % len(SUBJECTS)]])
            doc.reindexObject()
        transaction.commit()

    return step


def measure(backend: str, dsn: str | None, docs: list[int], iterations: int, kept: bool = False) -> dict:
    """In this process: build *backend*'s site, grow it to each size of
    *docs* and time the facet counts of :data:`QUERIES` there, for
    plone.pgcatalog with each of :data:`BETWEEN` between two counts (the
    proposal's approach remembers nothing: nothing between).  *kept*:
    measure the site kept in the database (``kept.py``) at its size."""
    from AccessControl.SecurityManagement import noSecurityManager
    from kept import with_objects
    from measure import time_repeated

    import transaction
    import zopesite

    count = our_counts if backend == "pgcatalog" else proposal_counts
    out = {}
    for worker, size in sidebyside.grown(backend, dsn, docs, kept):
        timings = out[str(size)] = {}
        editable = with_objects(worker.site, size) if kept else size  # (million.py's bulk rows are not)
        for name, (query, anonymous) in QUERIES.items():
            for what in BETWEEN if backend == "pgcatalog" else BETWEEN[:1]:
                transaction.abort()
                zopesite.login(worker.app)
                step = between(worker, what, editable)
                if anonymous:
                    noSecurityManager()
                spec = facets()
                counted = partial(count, worker.catalog, query, spec)
                started = time.perf_counter()
                counts = counted()  # the first of this query in this process: counted from every row
                first = (time.perf_counter() - started) * 1000
                timed = time_repeated(counted, step, iterations, 3)
                label = name if what == "nothing" else f"{name}, {what} between"
                timings[label] = {
                    "median": round(timed["median"], 2),
                    "p90": round(timed["p90"], 2),
                    "p95": round(timed["p95"], 2),
                    "first": round(first, 2),
                    "counts": {facet: {str(k): v for k, v in values.items() if v} for facet, values in counts.items()},
                }
                print(
                    f"[{backend} {size}] {label}: {timed['median']:.2f} ms (p95 {timed['p95']:.2f}, first {first:.2f})",
                    file=sys.stderr,
                    flush=True,
                )
        zopesite.login(worker.app)
        transaction.abort()
    return out


def table(results: dict) -> str:
    backends = list(results)
    ours, others = backends[0], backends[1:]
    head = ["docs", "query", *(f"{b} median / p95 ms" for b in backends), "ours first ms", *(f"{b} ÷ ours" for b in others), "same counts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, timings in results[ours].items():
        for name, mine in timings.items():
            row = [size, name]
            theirs = [results[b][size].get(name) for b in others]
            row += [f"{mine['median']:.2f} / {mine['p95']:.2f}"]
            row += [f"{t['median']:.2f} / {t['p95']:.2f}" if t else "" for t in theirs]
            row += [f"{mine['first']:.2f}" if "first" in mine else ""]
            row += [f"{t['median'] / mine['median']:.1f}x" if t else "" for t in theirs]
            row.append("" if not any(theirs) else "yes" if all(t["counts"] == mine["counts"] for t in theirs if t) else "NO")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return sidebyside.main(__file__, __doc__, measure, table, {"facets": FACETS, "between": BETWEEN}, [20000], 30, argv)


if __name__ == "__main__":
    sys.exit(main())

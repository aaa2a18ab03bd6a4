"""Where a search's and an edit's time goes, layer by layer, on one site.

    .venv/bin/python benchmarks/layers.py --docs 500 --iterations 500 --edits 200

Builds a plone.pgcatalog site (fresh database, as ``run.py``), then:

- for each scenario, its bare search repeated in one transaction, timing
  the whole search, the time inside ``psycopg.Cursor.execute`` (the
  statement and its round trip), inside ``connection._read`` (that and the
  connection layer: the snapshot's savepoint and settings), and the
  catalog's Python alone: before its first statement (the fetch refused)
  and in all (the fetch answered with the rows it gave before);
- edits (``zopesite.edit_document`` and a commit, one document after the
  other): the whole, and the time per edit in each statement the commit
  sends (by its first words), the rest being Python.

Medians in µs (searches) and ms (edits); printed, and written to
``benchmarks/results/<stamp>-layers.json``.  One process: compare layers
within a run, not runs on a shared machine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from publisher import written_site
from typing import Any
from workload import run_bare
from workload import scenarios

import argparse
import json
import logging
import statistics
import sys
import time
import transaction
import zopesite


HERE = Path(__file__).resolve().parent


class Refused(Exception):
    """The catalog's first statement, not sent."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextmanager
def patched(owner: Any, name: str, replacement: Callable) -> Any:
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield original
    finally:
        setattr(owner, name, original)


def timed_calls(owner: Any, name: str, spent: list[float]):
    """Add the time of each call of ``owner.name`` to ``spent[-1]``."""
    original = getattr(owner, name)

    def timed(*args, **kw):
        start = time.perf_counter()
        try:
            return original(*args, **kw)
        finally:
            if spent:
                spent[-1] += time.perf_counter() - start

    return patched(owner, name, timed)


def median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def python_alone(once: Callable[[], None], iterations: int) -> dict:
    """The catalog's Python in *once* (a search): before its first
    statement (the fetch refused), and in all (the fetch answered with the
    rows it gave for the same search before), medians in µs."""
    from plone.pgcatalog import database

    recorded: list = []

    def record(*args, original=database.fetch, **kw):
        rows = original(*args, **kw)
        recorded.append(rows)
        return rows

    with patched(database, "fetch", record):
        once()
    replies = iter(recorded)

    def replay(*args, **kw):
        return next(replies)

    def refuse(*args, **kw):
        raise Refused

    python = {}
    for mode, fake in (("before", refuse), ("all", replay)):
        samples = []
        with patched(database, "fetch", fake):
            for _ in range(iterations):
                replies = iter(recorded)
                start = time.perf_counter()
                try:
                    once()
                except Refused:
                    pass
                samples.append(time.perf_counter() - start)
        python[mode] = median_us(samples)
    return python


def search_layers(worker: Any, iterations: int) -> dict:
    import psycopg

    from plone.pgcatalog import connection

    out = {}
    for scenario in scenarios():
        worker.as_user(scenario)

        def once(scenario=scenario) -> None:
            len(run_bare(worker.catalog, scenario.query))

        for _ in range(20):
            once()
        whole, executing, reading = [], [], []
        with timed_calls(psycopg.Cursor, "execute", executing), timed_calls(connection, "_read", reading):
            for _ in range(iterations):
                executing.append(0.0)
                reading.append(0.0)
                start = time.perf_counter()
                once()
                whole.append(time.perf_counter() - start)
        python = python_alone(once, iterations)
        out[scenario.name] = {
            "whole_us": median_us(whole),
            "execute_us": median_us(executing),
            "connection_layer_us": round(median_us(reading) - median_us(executing), 1),
            "python_before_us": python["before"],
            "python_all_us": python["all"],
        }
        log(f"{scenario.name}: {out[scenario.name]}")
    zopesite.login(worker.app)
    return out


def edit_layers(worker: Any, edits: int) -> dict:
    import psycopg

    spent: dict[str, float] = defaultdict(float)  # seconds per statement, over all edits

    def key(query: Any) -> str:
        return " ".join(str(query).split())[:60]

    def timing(name: str):
        original = getattr(psycopg.Cursor, name)

        def timed(self, query, *args, **kw):
            start = time.perf_counter()
            try:
                return original(self, query, *args, **kw)
            finally:
                spent[("many " if name == "executemany" else "") + key(query)] += time.perf_counter() - start

        return patched(psycopg.Cursor, name, timed)

    transaction.abort()
    zopesite.login(worker.app)
    for number in range(20):
        zopesite.edit_document(worker.site, number)
        transaction.commit()
    whole = []
    with timing("execute"), timing("executemany"):
        for number in range(20, 20 + edits):
            start = time.perf_counter()
            zopesite.edit_document(worker.site, number % worker.docs)
            transaction.commit()
            whole.append(time.perf_counter() - start)
    per_edit = {name: round(seconds * 1e3 / edits, 3) for name, seconds in spent.items()}
    return {
        "whole_ms": round(statistics.median(whole) * 1e3, 2),
        "statements_ms_per_edit": dict(sorted(per_edit.items(), key=lambda item: -item[1])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--edits", type=int, default=200)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    with written_site(args.docs, "pgcatalog-layers-") as (worker, _writer, _cycle):
        result = {
            "docs": args.docs,
            "searches": search_layers(worker, args.iterations),
            "edit": edit_layers(worker, args.edits) if args.edits else None,
        }
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-layers.json"
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    log(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Remembered counts on and off, interleaved on one site, after writes.

    .venv/bin/python benchmarks/counts_ab.py --docs 20000 --iterations 60

Builds a plone.pgcatalog site (fresh database, as ``run.py``), then for
each scenario times the bare search right after another thread's committed
write and first in its request, alternating between the catalog's
remembered counts (:mod:`plone.pgcatalog.counts`) and the count made every
time, as the catalog counted before them (``count(*)`` in a window or a
subquery, no generation read).  One process, one database, the two taking
turns search by search: what differs is the statement, not the machine's
drift or the database's state.  Prints and writes medians (ms) of the
searches and of the writes before them to
``benchmarks/results/<stamp>-counts-ab.json``.
"""

from __future__ import annotations

from pathlib import Path
from publisher import written_site
from workload import run_bare
from workload import scenarios

import argparse
import json
import logging
import statistics
import sys
import time


HERE = Path(__file__).resolve().parent
SCENARIOS = ("simple", "navigation", "fulltext", "anonymous", "date_paged")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def counted_every_time(catalog, where: str, params: list, reads=(), key=None, site="", window: bool = False):
    """:func:`plone.pgcatalog.counts.count_column` without memory."""
    from plone.pgcatalog.counts import Count
    from plone.pgcatalog.schema import ROWS

    if window:
        return Count("count(*) OVER (), NULL::text", [], None)
    return Count(f"(SELECT count(*) FROM {ROWS} WHERE {where}), NULL::text", list(params), None)


def ab(docs: int, iterations: int, warmup: int) -> dict:
    from plone.pgcatalog import search

    remembered = search.count_column
    logging.disable(logging.CRITICAL)
    out: dict = {"docs": docs, "iterations": iterations, "scenarios": {}}
    with written_site(docs, "pgcatalog-counts-ab-") as (worker, writer, cycle):
        by_name = {s.name: s for s in scenarios()}
        for name in SCENARIOS:
            scenario = by_name[name]
            searches: dict = {"remembered": [], "every time": []}
            writes: dict = {"remembered": [], "every time": []}
            for i in range(warmup + iterations):
                turns = ("remembered", "every time") if i % 2 else ("every time", "remembered")
                for turn in turns:
                    search.count_column = remembered if turn == "remembered" else counted_every_time
                    writer.write()
                    worker.app, worker.site = cycle.next(scenario.anonymous)
                    started = time.perf_counter()
                    run_bare(worker.site.portal_catalog, scenario.query)
                    if i >= warmup:
                        searches[turn].append((time.perf_counter() - started) * 1000.0)
                        writes[turn].append(writer.write_ms[-1])
            search.count_column = remembered
            out["scenarios"][name] = {
                turn: {
                    "search_ms": statistics.median(searches[turn]),
                    "write_ms": statistics.median(writes[turn]),
                }
                for turn in searches
            }
            log(f"{name}: {out['scenarios'][name]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    result = ab(args.docs, args.iterations, args.warmup)
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-counts-ab.json"
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["scenarios"], indent=1))
    log(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

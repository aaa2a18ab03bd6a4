"""Where a search's milliseconds go, in the published comparison's workload.

    python benchmarks/anatomy.py --out anatomy.txt -- --backend pg --docs 500 --churn --iterations 30

Runs ``../shared/bench/bench.py`` (``--bench`` elsewhere) in this process
with the arguments after ``--``, and times each search it times (the
catalog tool's ``searchResults``) part by part: the whole search, the
round trips to PostgreSQL (waiting for the server: planning, execution,
the network), the rest of psycopg (composing and sending statements,
decoding rows), and Python outside psycopg (the query's security terms,
compiling or finding its plan, the results).  Per scenario: medians of
the recorded searches, and the statements of the median one.  For a
ZCatalog backend only the whole search is timed (its reads are ZODB
loads, in ``loads/iter`` of bench.py's own report).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import argparse
import contextlib
import importlib.util
import statistics
import sys
import time


HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent / "shared" / "bench" / "bench.py"

_search: list | None = None  # the events of the search being timed
_piped = False  # whether statements go in a pipeline (whose end waits for them)
_runs: dict[str, list[tuple[float, list]]] = defaultdict(list)


def _timed(owner: type, name: str, kind: str) -> None:
    """Record each call of ``owner.name`` made during a timed search."""
    original = getattr(owner, name)

    def timed(self, *args, **kw):
        if _search is None:
            return original(self, *args, **kw)
        started = time.perf_counter()
        try:
            return original(self, *args, **kw)
        finally:
            text = str(args[0])[:100].replace("\n", " ") if kind == "execute" and args else ""
            piped = "piped " if kind == "execute" and _piped else ""
            _search.append((piped + kind, (time.perf_counter() - started) * 1000, text))

    setattr(owner, name, timed)


def _hook_psycopg() -> None:
    import psycopg

    _timed(psycopg.Cursor, "execute", "execute")
    _timed(psycopg.Cursor, "fetchall", "fetch")
    _timed(psycopg.Connection, "wait", "wait")
    pipeline = psycopg.Connection.pipeline

    @contextlib.contextmanager
    def timed_pipeline(self):
        global _piped
        started = time.perf_counter()
        with pipeline(self) as p:
            _piped = True
            try:
                yield p
            finally:
                _piped = False
        if _search is not None:
            _search.append(("pipeline", (time.perf_counter() - started) * 1000, ""))

    psycopg.Connection.pipeline = timed_pipeline


def _hook_searches(scenarios: list) -> None:
    """Time ``searchResults`` of the catalog tools, by scenario."""
    from Products.CMFPlone.CatalogTool import CatalogTool

    owners = [CatalogTool]
    with contextlib.suppress(ImportError):
        from plone.pgcatalog.tool import PGCatalogTool

        owners.append(PGCatalogTool)
    with contextlib.suppress(ImportError):
        from plone.pgcatalog.catalog import PlonePGCatalogTool  # the published peer

        owners.append(PlonePGCatalogTool)
    names = {repr(sorted(query.items())): name for name, _, _, query in scenarios}
    for owner in owners:
        if "searchResults" not in owner.__dict__:
            continue
        original = owner.__dict__["searchResults"]

        def searchResults(self, query=None, _original=original, **kw):
            global _search
            if _search is not None:  # (a search inside a search)
                return _original(self, query, **kw)
            _search = events = []
            started = time.perf_counter()
            try:
                results = _original(self, query, **kw)
                len(results)
                return results
            finally:
                total = (time.perf_counter() - started) * 1000
                _search = None
                name = names.get(repr(sorted((query or kw).items())))
                if name is not None:
                    _runs[name].append((total, events))

        owner.searchResults = searchResults
        owner.__call__ = searchResults


def _report(out: Path, warmup: int) -> None:
    lines = []
    header = f"{'scenario':12} {'total':>7} {'waiting':>8} {'psycopg':>8} {'python':>7} {'statements':>10}"
    lines.append(header)
    details = []
    for name, runs in _runs.items():
        runs = runs[warmup:] or runs
        totals, waits, psycopgs, counts = [], [], [], []
        for total, events in runs:
            wait = sum(ms for kind, ms, _ in events if kind == "wait")
            # (a statement's execute, its fetch and a pipeline hold the waits)
            outer = sum(ms for kind, ms, _ in events if kind in ("execute", "fetch", "pipeline"))
            totals.append(total)
            waits.append(wait)
            psycopgs.append(max(0.0, outer - wait))
            counts.append(sum(1 for kind, _, _ in events if kind.endswith("execute")))
        total = statistics.median(totals)
        wait, other = statistics.median(waits), statistics.median(psycopgs)
        python = max(0.0, total - wait - other)
        lines.append(
            f"{name:12} {total:7.3f} {wait:8.3f} {other:8.3f} {python:7.3f} {statistics.median(counts):10.1f}"
        )
        middle = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
        details.append(f"\n{name}: the median search, {middle[0]:.3f} ms")
        details.extend(f"  {kind:9} {ms:7.3f}  {text}" for kind, ms, text in middle[1])
    text = "\n".join(
        [
            "Medians in ms per search (bench.py's recorded iterations): total; waiting for PostgreSQL;",
            "the rest of psycopg; Python outside psycopg; statements sent.",
            "",
            *lines,
            *details,
            "",
        ]
    )
    out.write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--warmup", type=int, default=0, help="recorded searches to leave out, per scenario")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    bench_args = [a for a in args.bench_args if a != "--"]
    spec = importlib.util.spec_from_file_location("bench", args.bench)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench"] = bench
    spec.loader.exec_module(bench)
    _hook_psycopg()
    scenarios = bench.scenarios

    def hooked(site):
        found = scenarios(site)
        _hook_searches(found)
        return found

    bench.scenarios = hooked
    try:
        bench.main(bench_args)
    finally:
        _report(args.out, args.warmup)


if __name__ == "__main__":
    main()

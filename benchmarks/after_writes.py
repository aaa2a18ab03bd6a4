"""Where a search's time goes after a write, first in its request (issue 21).

    .venv/bin/python benchmarks/after_writes.py --docs 500        # the probe
    .venv/bin/python benchmarks/after_writes.py --ab                 # interleaved A/B
    .venv/bin/python benchmarks/after_writes.py --tables RESULTS.json [...]

``--tables`` prints the medians of ``run.py --after-writes
--first-in-request`` results per mode, and their ratios to RelStorage.

The probe builds a plone.pgcatalog site (fresh database, as ``run.py``),
then times every scenario, bare and as a listing, in several modes with
timers around the storage's poll (the snapshot's ``BEGIN``), each catalog
round trip (the first one carries the savepoint) and the metadata load;
it times the captured SQL alone after writes (the SQL floor after
writes) and explains it right after a write and right after ``VACUUM``.
Results: ``benchmarks/results/<stamp>-after-writes-probe.json``.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from floor import capture_sql
from floor import run_statements
from measure import time_repeated
from pathlib import Path
from publisher import RequestCycle
from publisher import Writer
from publisher import written_site
from workload import run_bare
from workload import run_listing
from workload import scenarios

import argparse
import cProfile
import io
import json
import logging
import pstats
import psycopg
import re
import shutil
import statistics
import sys
import tempfile
import time
import transaction


HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
MODES = ("plain", "first_in_request", "after_writes", "after_writes+first_in_request")
VARIANTS = (("bare", run_bare), ("listing", run_listing))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- tables of run.py results ---------------------------------------------------------


def mode_timings(entry: dict) -> dict[str, dict]:
    """The query timings of one size's entry, by mode (plain first)."""
    return {"plain": entry["queries"], **entry.get("modes", {})}


def tables(results: dict, size: str = "500") -> str:
    """Markdown: medians (ms) of pgcatalog and RelStorage per mode, the
    ratio, and pgcatalog's ratio to its plain SQL floor."""
    pg = results["backends"]["pgcatalog"]["sizes"][size]
    rs = results["backends"]["relstorage"]["sizes"][size]
    pg_modes, rs_modes = mode_timings(pg), mode_timings(rs)
    lines = [
        "| scenario | variant | mode | pgcatalog | RelStorage | ratio | / floor |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for scenario in scenarios():
        for variant, _ in VARIANTS:
            floor = pg["floor"][scenario.name][variant]["median"]
            for mode in pg_modes:
                mine = pg_modes[mode][scenario.name][variant]["median"]
                theirs = rs_modes[mode][scenario.name][variant]["median"]
                lines.append(
                    f"| {scenario.label} | {variant} | {mode} | {mine:.2f} | {theirs:.2f} "
                    f"| {mine / theirs:.2f}x | {mine / floor:.2f}x |"
                )
    extra = []
    for backend, modes in (("pgcatalog", pg_modes), ("relstorage", rs_modes)):
        for mode, timings in modes.items():
            if "writes_ms" in timings:
                extra.append(f"- {backend}, {mode}: a write {timings['writes_ms']['median']:.1f} ms")
            begins = [
                timings[s.name][v]["request_begin_ms"]["median"]
                for s in scenarios()
                for v, _ in VARIANTS
                if "request_begin_ms" in timings[s.name][v]
            ]
            if begins:
                extra.append(
                    f"- {backend}, {mode}: a request's begin (db.open, begin, site, user) "
                    f"{statistics.median(begins):.2f} ms"
                )
    return "\n".join(lines + [""] + extra)


# -- the probe ------------------------------------------------------------------------


class Timers:
    """Wraps the storage's poll and the catalog's reads with timers; what
    they measure goes to :attr:`events` (cleared by the caller)."""

    def __init__(self) -> None:
        from plone.pgcatalog import connection
        from plone.pgcatalog import database
        from zodb_pgjsonb.instance import PGJsonbStorageInstance

        self.events: list[tuple[str, float, dict]] = []
        self._undo = []
        self._wrap(PGJsonbStorageInstance, "poll_invalidations", "poll")
        self._wrap(connection, "_fetch_in_snapshot", "snapshot_read", first=True)
        self._wrap(database, "fetch", "fetch")

    def _wrap(self, owner, name: str, kind: str, first: bool = False) -> None:
        original = getattr(owner, name)
        events = self.events

        def timed(*args, **kwargs):
            detail = {}
            if first:  # _fetch_in_snapshot(conn, sql, params, txn, generic, timeout)
                from plone.pgcatalog.connection import _savepoints

                detail = {"savepoint": _savepoints.get(args[0]) is not args[3], "generic": args[4]}
            elif kind == "fetch":
                detail = {"sql": args[1][:60], "guarded": kwargs.get("guarded", True)}
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                events.append((kind, (time.perf_counter() - started) * 1000.0, detail))

        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)


def preset_savepoint(catalog) -> None:
    """Set the search savepoint ahead of the search (untimed), so that the
    timed search goes without it: what the savepoint costs in place."""
    from plone.pgcatalog.connection import _savepoints
    from plone.pgcatalog.connection import _transaction_of
    from plone.pgcatalog.connection import jar_of
    from plone.pgcatalog.connection import SAVEPOINT
    from plone.pgcatalog.connection import storage_instance

    conn = storage_instance(catalog).pg_connection
    txn = _transaction_of(jar_of(catalog))
    if _savepoints.get(conn) is not txn:
        conn.execute("SAVEPOINT " + SAVEPOINT)
        _savepoints[conn] = txn


class Probe:
    def __init__(self, worker, dsn: str, iterations: int, warmup: int) -> None:
        self.worker = worker
        self.dsn = dsn
        self.iterations = iterations
        self.warmup = warmup

    def timed_mode(self, mode: str, savepoint_first: bool = False, profile: bool = False) -> dict:
        """Every scenario and variant in *mode*, with the parts timed."""
        worker = self.worker
        writes = "thread" if "after_writes" in mode else None
        requests = "first_in_request" in mode
        db = worker.app._p_jar.db()
        cycle = RequestCycle(db) if requests else None
        writer = Writer(db, worker.docs, writes) if writes else None
        if cycle is not None:
            transaction.abort()
            cycle.adopt(worker.app)
        timers = Timers()
        profiler = cProfile.Profile() if profile else None
        out: dict = {}
        try:
            for scenario in scenarios():
                for variant, run in VARIANTS:
                    rows = []
                    polls = []
                    for i in range(self.warmup + self.iterations):
                        timers.events.clear()
                        if writer is not None:
                            writer.write()
                        if cycle is not None:
                            worker.app, worker.site = cycle.next(scenario.anonymous)
                            worker.catalog = worker.site.portal_catalog
                        else:
                            worker.as_user(scenario)
                        if savepoint_first:
                            preset_savepoint(worker.catalog)
                        poll_ms = sum(ms for kind, ms, _ in timers.events if kind == "poll")
                        timers.events.clear()
                        started = time.perf_counter()
                        if profiler is not None:
                            profiler.runcall(run, worker.catalog, scenario.query)
                        else:
                            run(worker.catalog, scenario.query)
                        total = (time.perf_counter() - started) * 1000.0
                        if i < self.warmup:
                            continue
                        polls.append(poll_ms)
                        fetches = [(ms, d) for kind, ms, d in timers.events if kind == "fetch"]
                        snap = [(ms, d) for kind, ms, d in timers.events if kind == "snapshot_read"]
                        sql = sum(ms for ms, _ in fetches)
                        rows.append(
                            {
                                "total": total,
                                "sql": sql,
                                "python": total - sql,
                                "first_read": fetches[0][0] if fetches else 0.0,
                                "metadata": sum(ms for ms, d in fetches if not d["guarded"]),
                                "reads": len(fetches),
                                "with_savepoint": sum(1 for _, d in snap if d["savepoint"]),
                            }
                        )
                    out.setdefault(scenario.name, {})[variant] = {
                        key: statistics.median(row[key] for row in rows) for key in rows[0]
                    } | {"poll_before": statistics.median(polls)}
        finally:
            timers.restore()
            if writer is not None:
                writer.close()
            if cycle is not None:
                worker.app, worker.site = cycle.next(False)
                worker.catalog = worker.site.portal_catalog
            transaction.abort()
            worker.as_user(scenarios()[0])
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
            out["profile"] = text.getvalue()
        return out

    def statements(self) -> dict:
        """The SQL each scenario and variant sends (captured once)."""
        captured = {}
        for scenario in scenarios():
            for variant, run in VARIANTS:
                self.worker.as_user(scenario)
                with capture_sql() as statements:
                    run(self.worker.catalog, scenario.query)
                captured[(scenario.name, variant)] = statements
        transaction.abort()
        return captured

    def floors(self, captured: dict, with_writes: bool) -> dict:
        """The captured SQL timed alone on a plain prepared connection,
        with or without a committed write before each run."""
        db = self.worker.app._p_jar.db()
        writer = Writer(db, self.worker.docs, "thread") if with_writes else None
        out: dict = {}
        try:
            with (
                psycopg.connect(self.dsn, autocommit=True) as plain,
                psycopg.connect(self.dsn, autocommit=True) as generic,
            ):
                generic.execute("SET plan_cache_mode = force_generic_plan")
                conns = {False: plain, True: generic}
                for (name, variant), statements in captured.items():
                    out.setdefault(name, {})[variant] = time_repeated(
                        lambda s=statements: run_statements(conns, s),
                        writer.write if writer else None,
                        self.iterations,
                        self.warmup,
                    )["median"]
        finally:
            if writer is not None:
                writer.close()
        return out

    def explains(self, captured: dict, after_write: bool, repeats: int = 5) -> dict:
        """Planning and execution time, shared buffers and heap fetches of
        each scenario's first statement (bare), right after a committed
        write, or right after ``VACUUM``; medians of *repeats*."""
        db = self.worker.app._p_jar.db()
        writer = Writer(db, self.worker.docs, "thread") if after_write else None
        out: dict = {}
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                for scenario in scenarios():
                    sql, params, _ = captured[(scenario.name, "bare")][0]
                    samples = []
                    for _ in range(repeats):
                        if writer is not None:
                            writer.write()
                        else:
                            conn.execute("VACUUM object_state")
                        plan = "\n".join(
                            row[0]
                            for row in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
                        )
                        samples.append(plan_figures(plan))
                    out[scenario.name] = {
                        key: statistics.median(s[key] for s in samples) for key in samples[0]
                    } | {"plan": plan}
        finally:
            if writer is not None:
                writer.close()
        return out

    def table_stats(self) -> dict:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd, "
                "(SELECT relpages FROM pg_class WHERE relname = 'object_state'), "
                "(SELECT relallvisible FROM pg_class WHERE relname = 'object_state'), "
                "(SELECT count(*) FROM pg_indexes WHERE tablename = 'object_state') "
                "FROM pg_stat_user_tables WHERE relname = 'object_state'"
            ).fetchone()
        keys = ("live", "dead", "updates", "hot_updates", "relpages", "relallvisible", "indexes")
        return dict(zip(keys, row, strict=True))


def plan_figures(plan: str) -> dict:
    """Planning/execution ms, the top node's shared buffers hit+read, the
    heap fetches of index-only scans, in an EXPLAIN (ANALYZE, BUFFERS)."""

    def number(pattern: str) -> float:
        found = re.search(pattern, plan)
        return float(found.group(1)) if found else 0.0

    buffers = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", plan)
    return {
        "planning_ms": number(r"Planning Time: ([\d.]+)"),
        "execution_ms": number(r"Execution Time: ([\d.]+)"),
        "buffers": (int(buffers.group(1)) + int(buffers.group(2) or 0)) if buffers else 0,
        "heap_fetches": sum(int(n) for n in re.findall(r"Heap Fetches: (\d+)", plan)),
    }


def vacuum(dsn: str) -> None:
    transaction.abort()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def probe(docs: int, iterations: int, warmup: int) -> dict:
    """Build the site, run every measurement, return the figures."""
    from worker import Worker

    logging.disable(logging.WARNING)
    home = Path(tempfile.mkdtemp(prefix="pgcatalog-after-writes-"))
    result: dict = {"docs": docs, "iterations": iterations}
    try:
        with pg_server() as server, fresh_database(server, "pgcatalog") as dsn:
            config = {"backend": "pgcatalog", "dsn": dsn, "home": str(home), "iterations": iterations}
            worker = Worker(config)
            worker.build()
            worker.grow_to(docs)
            p = Probe(worker, dsn, iterations, warmup)
            captured = p.statements()
            modes = result["modes"] = {}
            for mode in MODES:
                vacuum(dsn)
                log(f"probe: {mode}")
                modes[mode] = p.timed_mode(mode)
                if "after_writes" in mode:
                    result[f"table_after_{mode}"] = p.table_stats()
            vacuum(dsn)
            log("probe: savepoint set ahead")
            modes["plain, savepoint ahead"] = p.timed_mode("plain", savepoint_first=True)
            vacuum(dsn)
            modes["after_writes+first_in_request, savepoint ahead"] = p.timed_mode(
                "after_writes+first_in_request", savepoint_first=True
            )
            vacuum(dsn)
            log("probe: profiles")
            result["profile_plain"] = p.timed_mode("plain", profile=True).pop("profile")
            vacuum(dsn)
            result["profile_first_in_request"] = p.timed_mode("first_in_request", profile=True).pop("profile")
            vacuum(dsn)
            result["profile_both"] = p.timed_mode("after_writes+first_in_request", profile=True).pop(
                "profile"
            )
            vacuum(dsn)
            log("probe: floors")
            result["floor_plain"] = p.floors(captured, with_writes=False)
            vacuum(dsn)
            result["floor_after_writes"] = p.floors(captured, with_writes=True)
            result["table_after_floor_writes"] = p.table_stats()
            log("probe: explains")
            result["explain_after_vacuum"] = p.explains(captured, after_write=False)
            result["explain_after_write"] = p.explains(captured, after_write=True)
            result["table_at_end"] = p.table_stats()
            transaction.abort()
            worker.app._p_jar.db().close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return result


AB_MODES = ("plain", "plain+sleep12", "plain+savepoint", "fir", "fir+sleep12", "both", "both+savepoint")
AB_CASES = (
    ("simple", run_bare),
    ("navigation", run_bare),
    ("anonymous", run_listing),
    ("date_paged", run_listing),
)


def ab(docs: int, iterations: int, warmup: int) -> dict:
    """The modes interleaved search by search (so that the machine's drift
    hits them alike): plain, after 12 ms of sleep, with the savepoint set
    ahead, first in request (``fir``), after a write and first in request
    (``both``); medians in ms."""
    logging.disable(logging.CRITICAL)
    out: dict = {}
    with written_site(docs, "pgcatalog-after-writes-") as (worker, writer, cycle):
        by_name = {s.name: s for s in scenarios()}
        for name, run in AB_CASES:
            scenario = by_name[name]
            samples: dict = {mode: [] for mode in AB_MODES}
            for i in range(warmup + iterations):
                turn = i % len(AB_MODES)
                for mode in AB_MODES[turn:] + AB_MODES[:turn]:
                    if mode.startswith("both"):
                        writer.write()
                    if mode.startswith(("both", "fir")):
                        worker.app, worker.site = cycle.next(scenario.anonymous)
                        worker.catalog = worker.site.portal_catalog
                    else:
                        worker.as_user(scenario)
                    if mode.endswith("sleep12"):
                        time.sleep(0.012)
                    if mode.endswith("savepoint"):
                        preset_savepoint(worker.catalog)
                    started = time.perf_counter()
                    run(worker.catalog, scenario.query)
                    if i >= warmup:
                        samples[mode].append((time.perf_counter() - started) * 1000.0)
            key = f"{name} {run.__name__.removeprefix('run_')}"
            out[key] = {mode: statistics.median(values) for mode, values in samples.items()}
            log(f"{key}: " + ", ".join(f"{m} {v:.2f}" for m, v in out[key].items()))
    return out


def probe_text(result: dict) -> str:
    """The probe's figures as Markdown tables."""
    lines = ["| scenario | variant | mode | total | SQL | Python | 1st read | metadata | poll before |"]
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for scenario in scenarios():
        for variant, _ in VARIANTS:
            for mode, timings in result["modes"].items():
                t = timings[scenario.name][variant]
                lines.append(
                    f"| {scenario.label} | {variant} | {mode} | {t['total']:.2f} | {t['sql']:.2f} "
                    f"| {t['python']:.2f} | {t['first_read']:.2f} | {t['metadata']:.2f} "
                    f"| {t['poll_before']:.2f} |"
                )
    lines += ["", "| scenario | variant | floor | floor after writes |", "|---|---|---:|---:|"]
    for scenario in scenarios():
        for variant, _ in VARIANTS:
            lines.append(
                f"| {scenario.label} | {variant} | {result['floor_plain'][scenario.name][variant]:.2f} "
                f"| {result['floor_after_writes'][scenario.name][variant]:.2f} |"
            )
    lines += [
        "",
        "| scenario | when | planning | execution | buffers | heap fetches |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for scenario in scenarios():
        for when in ("after_vacuum", "after_write"):
            e = result[f"explain_{when}"][scenario.name]
            lines.append(
                f"| {scenario.label} | {when} | {e['planning_ms']:.3f} | {e['execution_ms']:.3f} "
                f"| {e['buffers']:.0f} | {e['heap_fetches']:.0f} |"
            )
    lines += ["", *(f"{k}: {v}" for k, v in result.items() if k.startswith("table_"))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--ab", action="store_true", help="the interleaved A/B instead of the probe")
    parser.add_argument("--tables", type=Path, nargs="+", metavar="RESULTS_JSON")
    args = parser.parse_args(argv)
    if args.tables:
        for path in args.tables:
            print(f"## {path}\n\n{tables(json.loads(path.read_text()))}\n")
        return 0
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if args.ab:
        result = ab(args.docs, args.iterations, args.warmup)
        out = RESULTS / f"{stamp}-after-writes-ab.json"
        out.write_text(json.dumps(result, indent=1))
        print(json.dumps(result, indent=1))
    else:
        result = probe(args.docs, args.iterations, args.warmup)
        out = RESULTS / f"{stamp}-after-writes-probe.json"
        out.write_text(json.dumps(result, indent=1))
        print(probe_text(result))
    print(f"\nResults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

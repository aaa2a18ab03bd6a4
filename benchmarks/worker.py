"""One backend, in its own process: build the site, time it, write JSON.

``python benchmarks/worker.py CONFIG.json`` where the config holds
``backend``, ``dsn`` (a fresh database, none for FileStorage), ``home`` (a
scratch directory), ``sizes`` (document counts to query at, ascending),
``timed_docs``, ``rebuild_at``, ``iterations``, ``warmup``, ``profile``
and ``out`` (where to write the results), and optionally ``after_writes``
(``"thread"`` or ``"same"``) and ``first_in_request`` (see
``publisher.py``) and ``vacuum`` (``"each"``, ``"autovacuum"`` or
``"settled"``, see :meth:`Worker.settle`).  ``run.py`` starts it.

``backend`` ``peer`` (PyPI's ``plone-pgcatalog``, from its own venv) has
none of what reads our catalog's insides (the SQL floor and the captured
statements' plans, the Python before the first statement, the prepared
statements): those are ``None``; its phases record its query result
cache's counters instead (``query_cache``).
"""

from __future__ import annotations

from closure import catalog_objects
from floor import capture_sql
from floor import explain
from floor import first_statement_times
from floor import plan_facts
from floor import table_state
from floor import time_statements
from measure import summary
from measure import time_once
from measure import time_repeated
from pathlib import Path
from publisher import RequestCycle
from publisher import Writer
from workload import doc_spec
from workload import run_bare
from workload import run_listing
from workload import scenarios

import cProfile
import io
import json
import logging
import pstats
import sys
import time
import transaction
import zopesite


BULK_BATCH = 200  # documents per transaction on the bulk path


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Worker:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.backend = config["backend"]
        self.result: dict = {"backend": self.backend, "sizes": {}}
        self.docs = 0

    # -- writing -----------------------------------------------------------------

    def build(self) -> None:
        home = Path(self.config["home"])
        conf = zopesite.write_config(self.backend, home, self.config.get("dsn"))
        self.app = zopesite.start_zope(conf, peer=self.backend == "peer")
        if self.config.get("kept") and zopesite.SITE_ID in self.app.objectIds():
            self.site = zopesite.open_site(self.app)
            self.docs = zopesite.documents(self.site)
            log(f"{self.backend}: kept site opened, {self.docs} documents")
        else:
            elapsed, self.site = time_once(lambda: zopesite.create_site(self.app, self.backend))
            self.result["site_creation_s"] = elapsed / 1000.0
            log(f"{self.backend}: site created in {elapsed / 1000:.1f}s")
        self.catalog = self.site.portal_catalog

    def sizes(self, docs: list[int]) -> list[int]:
        """The sizes to measure at: *docs* in order, or a kept site's own."""
        return [self.docs] if self.config.get("kept") else sorted(docs)

    def create_timed(self, count: int) -> None:
        """*count* documents, one transaction each, timed per document."""
        samples = []
        for number in range(self.docs, self.docs + count):
            spec = doc_spec(number)

            def create(spec=spec):
                zopesite.add_document(self.site, spec)
                transaction.commit()

            samples.append(time_once(create)[0])
        self.docs += count
        self.result["create_ms_per_doc"] = summary(samples)
        log(f"{self.backend}: created {count} docs, median {summary(samples)['median']:.1f} ms/doc")

    def modify_timed(self, count: int) -> None:
        """Edit and reindex *count* documents, one transaction each."""
        samples = []
        for number in range(count):

            def modify(number=number):
                zopesite.edit_document(self.site, number)
                transaction.commit()

            samples.append(time_once(modify)[0])
        self.result["modify_ms_per_doc"] = summary(samples)
        log(f"{self.backend}: modified {count} docs, median {summary(samples)['median']:.1f} ms/doc")

    def grow_to(self, size: int) -> dict | None:
        """The bulk path: add documents, ``BULK_BATCH`` per transaction."""
        if size <= self.docs:
            return None
        added = size - self.docs
        start = time.perf_counter()
        while self.docs < size:
            for number in range(self.docs, min(size, self.docs + BULK_BATCH)):
                zopesite.add_document(self.site, doc_spec(number))
                self.docs += 1
            transaction.commit()
            self.app._p_jar.cacheGC()
        elapsed = time.perf_counter() - start
        log(f"{self.backend}: bulk-added {added} docs in {elapsed:.1f}s")
        return {"docs": added, "seconds": elapsed, "ms_per_doc": elapsed * 1000.0 / added}

    def rebuild(self) -> dict:
        def run():
            self.catalog.clearFindAndRebuild()
            transaction.commit()

        transaction.abort()
        elapsed, _ = time_once(run)
        log(f"{self.backend}: clearFindAndRebuild of {self.docs} docs in {elapsed / 1000:.1f}s")
        return {"docs": self.docs, "seconds": elapsed / 1000.0}

    # -- reading -----------------------------------------------------------------

    def settle(self) -> None:
        """Before a query phase, the database as the ``vacuum`` setting
        has it (untimed):

        - ``each`` (the default): ``VACUUM (ANALYZE)``, as if autovacuum had
          just run; without it the planner has no statistics for freshly
          loaded tables;
        - ``autovacuum``: nothing: the writes before stay unvacuumed, but
          for what the server's autovacuum (at its settings) does meanwhile,
          as on a site where editors work;
        - ``settled``: the same, after waiting two of autovacuum's naps
          (``autovacuum_naptime``): what it does given its chance.
        """
        dsn = self.config.get("dsn")
        if not dsn or self.config.get("vacuum") == "none":  # none: kept.py's site, as kept
            return
        import psycopg

        transaction.abort()
        vacuum = self.config.get("vacuum", "each")
        with psycopg.connect(dsn, autocommit=True) as conn:
            if vacuum == "each":
                conn.execute("VACUUM (ANALYZE)")
                return
            on, naptime = conn.execute(
                "SELECT current_setting('autovacuum'), current_setting('autovacuum_naptime')::interval"
            ).fetchone()
        if on != "on":
            raise SystemExit(f"--vacuum {vacuum} needs a server with autovacuum on (this one: {on})")
        if vacuum == "settled":
            wait = 2 * naptime.total_seconds()
            log(f"{self.backend}: waiting {wait:.0f}s for autovacuum")
            time.sleep(wait)

    def plan_phase(self) -> dict:
        """Planning, execution, heap fetches and buffers of every
        scenario's statements, run once more as the phase left the
        database (pgcatalog only; :func:`floor.plan_facts`)."""
        facts: dict = {}
        for scenario in scenarios():
            for variant, run in (("bare", run_bare), ("listing", run_listing)):
                self.as_user(scenario)
                with capture_sql() as statements:
                    run(self.catalog, scenario.query)
                facts.setdefault(scenario.name, {})[variant] = plan_facts(self.config["dsn"], statements)
        zopesite.login(self.app)
        return facts

    def phase(self, writes: str | None = None, requests: bool = False) -> dict:
        """:meth:`settle`, :meth:`query_phase`, then the table's state
        before and after, and (pgcatalog) :meth:`plan_phase` (peer: None)."""
        self.settle()
        dsn = self.config.get("dsn")
        before = table_state(dsn) if dsn else None
        timings = self.query_phase(writes, requests)
        if dsn:
            timings["table"] = {"before": before, "after": table_state(dsn)}
        if self.backend == "pgcatalog":
            timings["python_before_sql_us"] = self.python_before_sql()
            timings["prepared"] = self.prepared_plans()
            timings["plans"] = self.plan_phase()
        elif self.backend == "peer":
            timings.update(
                python_before_sql_us=None, prepared=None, plans=None, query_cache=self.peer_cache()
            )
        return timings

    def peer_cache(self) -> dict:
        """The peer's query result cache so far in this process: on or
        not, hits, misses, invalidations (catalog changes)."""
        from plone.pgcatalog.cache import get_query_cache  # the peer's own module

        stats = get_query_cache().stats()
        return {key: stats[key] for key in ("enabled", "max_entries", "hits", "misses", "invalidations")}

    def python_before_sql(self) -> dict:
        """Per scenario, the median microseconds from ``searchResults``
        to the first statement sent (Plone's security terms, the catalog's
        query building), the same query repeated in one request."""
        medians = {}
        for scenario in scenarios():
            self.as_user(scenario)
            samples = []
            with first_statement_times() as sent:
                for _ in range(self.config["iterations"]):
                    sent.append(None)
                    start = time.perf_counter()
                    len(run_bare(self.catalog, scenario.query))  # a lazy result sends on len()
                    if sent[-1] is not None:
                        samples.append((sent[-1] - start) * 1e6)
            medians[scenario.name] = summary(samples)["median"] if samples else None
        zopesite.login(self.app)
        return medians

    def prepared_plans(self) -> dict:
        """How PostgreSQL planned the statements prepared on the storage
        connection the searches ran on (``pg_prepared_statements``, after
        the phase): a generic plan is made once and reused, a custom plan
        is made at every execution."""
        from psycopg.rows import tuple_row

        conn = self.app._p_jar._storage._ensure_conn()  # zodb-pgjsonb's instance connection
        cur = conn.cursor(row_factory=tuple_row)
        rows = cur.execute(
            "SELECT count(*), coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0), "
            "count(*) FILTER (WHERE custom_plans > generic_plans) FROM pg_prepared_statements"
        ).fetchone()
        custom = cur.execute(
            "SELECT regexp_replace(statement, '\\s+', ' ', 'g'), generic_plans, custom_plans "
            "FROM pg_prepared_statements WHERE custom_plans > generic_plans ORDER BY custom_plans DESC"
        ).fetchall()
        transaction.abort()
        found = dict(zip(("statements", "generic_plans", "custom_plans", "mostly_custom"), map(int, rows), strict=True))
        found["custom"] = [list(row) for row in custom]
        return found

    def as_user(self, scenario) -> None:
        """End the previous 'request' and become the scenario's user."""
        from AccessControl.SecurityManagement import noSecurityManager

        transaction.abort()
        if scenario.anonymous:
            noSecurityManager()
        else:
            zopesite.login(self.app)

    def describe(self, scenario) -> dict:
        """What the query finds, to check that the backends agree."""
        self.as_user(scenario)
        results = run_bare(self.catalog, scenario.query)
        return {
            "len": len(results),
            "actual_result_count": getattr(results, "actual_result_count", len(results)),
            "first_paths": [brain.getPath() for brain in results[:10]],
        }

    def query_phase(self, writes: str | None = None, requests: bool = False) -> dict:
        """Time every scenario, bare and as a listing.  *writes*: commit a
        document change before each search (``publisher.Writer``);
        *requests*: make each search the first of a new request
        (``publisher.RequestCycle``), whose start is timed apart."""
        iterations, warmup = self.config["iterations"], self.config["warmup"]
        timings: dict = {}
        plain = writes is None and not requests
        cycle = RequestCycle(self.app._p_jar.db()) if requests else None
        writer = None
        if writes:
            writer = Writer(self.app._p_jar.db(), self.docs, writes, lambda: self.site)
        if cycle is not None:
            transaction.abort()
            cycle.adopt(self.app)

        def enter(anonymous: bool, record: bool = True) -> None:
            self.app, self.site = cycle.next(anonymous, record)
            self.catalog = self.site.portal_catalog

        def between(scenario) -> None:
            if writer is not None:
                if writes == "same" and cycle is not None:
                    enter(False, record=False)  # the write is a request of its own
                writer.write()
            if cycle is not None:
                enter(scenario.anonymous)
            else:
                self.as_user(scenario)

        try:
            for scenario in scenarios():
                entry = timings[scenario.name] = {"found": self.describe(scenario)} if plain else {}
                for variant, run in (("bare", run_bare), ("listing", run_listing)):
                    if cycle is not None:
                        cycle.begin_ms.clear()
                    entry[variant] = time_repeated(
                        lambda run=run, q=scenario.query: run(self.catalog, q),
                        lambda s=scenario: between(s),
                        iterations,
                        warmup,
                    )
                    if cycle is not None:
                        entry[variant]["request_begin_ms"] = summary(cycle.begin_ms[-iterations:])
        finally:
            if writer is not None:
                writer.close()
        if writer is not None:
            timings["writes_ms"] = summary(writer.write_ms)
        if cycle is not None:
            enter(False)
        else:
            zopesite.login(self.app)
        return timings

    def modes(self) -> list[tuple[str, str | None, bool]]:
        """The query modes asked for besides the plain one: (name, writes,
        requests), one after the other, each after :meth:`settle`."""
        writes = self.config.get("after_writes")
        requests = bool(self.config.get("first_in_request"))
        modes = []
        if requests:
            modes.append(("first_in_request", None, True))
        if writes:
            modes.append(("after_writes", writes, False))
        if writes and requests:
            modes.append(("after_writes+first_in_request", writes, True))
        return modes

    def floor_phase(self, size: int) -> dict:
        """Time the statements of each scenario bare (pgcatalog only); with
        ``profile``, write their query plans too."""
        iterations, warmup = self.config["iterations"], self.config["warmup"]
        floor: dict = {}
        plans = []
        for scenario in scenarios():
            entry = floor[scenario.name] = {}
            for variant, run in (("bare", run_bare), ("listing", run_listing)):
                self.as_user(scenario)
                with capture_sql() as statements:
                    run(self.catalog, scenario.query)
                if not statements:
                    raise RuntimeError(
                        f"no SQL captured for {scenario.name}: did plone.pgcatalog.database.fetch move?"
                    )
                entry[variant] = time_statements(self.config["dsn"], statements, iterations, warmup)
                entry[variant]["statements"] = [sql for sql, _, _ in statements]
                if self.config.get("profile") and variant == "listing":
                    plans.append(f"==== {scenario.label} ====\n{explain(self.config['dsn'], statements)}")
        zopesite.login(self.app)
        if plans:
            Path(self.config["out"]).with_suffix(f".{size}.explain.txt").write_text("\n".join(plans))
        return floor

    def profile(self, size: int) -> None:
        """cProfile the listing variant of every scenario; write the stats."""
        sections = []
        for scenario in scenarios():
            profiler = cProfile.Profile()
            for _ in range(self.config["iterations"]):
                self.as_user(scenario)
                profiler.runcall(run_listing, self.catalog, scenario.query)
            sections.append((f"{scenario.label} (listing)", profiler))
        zopesite.login(self.app)
        self.write_profile(f"{size}.prof.txt", sections)

    def profile_writes(self, count: int = 50) -> None:
        """cProfile creating and modifying *count* documents (one
        transaction each) and a ``clearFindAndRebuild``; untimed."""
        create, modify, rebuild = cProfile.Profile(), cProfile.Profile(), cProfile.Profile()
        for number in range(self.docs, self.docs + count):
            create.runcall(zopesite.add_document, self.site, doc_spec(number))
            create.runcall(transaction.commit)
        self.docs += count
        for number in range(count):
            modify.runcall(zopesite.edit_document, self.site, number)
            modify.runcall(transaction.commit)
        rebuild.runcall(self.catalog.clearFindAndRebuild)
        rebuild.runcall(transaction.commit)
        sections = [
            (f"creation, {count} docs", create),
            (f"modification, {count} docs", modify),
            (f"clearFindAndRebuild, {self.docs} docs", rebuild),
        ]
        self.write_profile("writes.prof.txt", sections)

    def write_profile(self, suffix: str, sections: list[tuple[str, cProfile.Profile]]) -> None:
        out = Path(self.config["out"]).with_suffix(f".{suffix}")
        with out.open("w") as report:
            for title, profiler in sections:
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
                report.write(f"==== {title} ====\n{text.getvalue()}\n")
        log(f"{self.backend}: profile written to {out}")

    # -- the run -----------------------------------------------------------------

    def run(self) -> dict:
        config = self.config
        sizes = sorted(config["sizes"])
        self.build()
        self.create_timed(min(config["timed_docs"], sizes[0]))
        self.modify_timed(self.docs)
        for size in sizes:
            entry: dict = {"bulk": self.grow_to(size)}
            log(f"{self.backend}: queries at {size} docs")
            entry["queries"] = self.phase()
            entry["catalog_objects"] = catalog_objects(self.catalog, (self.site, self.app))
            if self.backend == "pgcatalog":
                entry["floor"] = self.floor_phase(size)
                if config.get("profile"):
                    self.profile(size)
            elif self.backend == "peer":
                entry["floor"] = None
            for name, writes, requests in self.modes():
                log(f"{self.backend}: queries at {size} docs, {name}")
                entry.setdefault("modes", {})[name] = self.phase(writes, requests)
            if size == config.get("rebuild_at"):
                self.result["rebuild"] = self.rebuild()
            self.result["sizes"][str(size)] = entry
        if config.get("profile") and self.backend == "pgcatalog":
            self.profile_writes()
        transaction.abort()
        self.app._p_jar.db().close()
        return self.result


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[1]).read_text())
    logging.disable(logging.WARNING)  # site creation's GenericSetup chatter
    result = Worker(config).run()
    Path(config["out"]).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

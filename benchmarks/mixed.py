"""A mixed workload: worker processes serving listing requests and edits at once.

For each backend, one after the other in one invocation, on a fresh
PostgreSQL database:

1. a setup process builds the Plone site with ``--docs`` Documents on the
   bulk path of ``worker.py`` (the seeded content of ``workload.py``, 200
   per transaction, ZODB cache-size 400), adds a Member user, checks the
   catalog's class and count, then ``VACUUM (ANALYZE)`` as ``worker.py``
   does;
2. ``--workers`` processes each start their own Zope from the same
   ``zope.conf`` (their own ZODB connection and cache of 400 objects) and,
   once all have started, run a closed loop of requests (no think time)
   for ``--warmup`` seconds, then for the timed ``--duration`` seconds.

A request is one of the six scenarios of ``workload.scenarios()``, drawn
uniformly, with parameters drawn from a generator seeded per worker (the
same sequence on every backend): two Subjects of the multi-index search,
the full-text word (a word of the content or a Subject), the folder of the
navigation (``workload.folder_id`` of a random document), the page of the
date-sorted search (``b_start`` of the first ten pages), and the user
(Manager, an authenticated Member or Anonymous; the anonymous scenario is
always Anonymous).  It begins as Zope's publisher begins one (a new
transaction, a new request, the site, the user), runs the search, takes
``len()``, then for every brain of the page a listing shows (the first ten,
or the ``b_start``/``b_size`` page, through ``plone.batching``) its
``getURL()``, ``Title`` and ``getObject()``, and ends with
``transaction.abort()``.  One request in 20 is instead an edit, as the
Manager: a new title of a random Document, ``reindexObject()``, commit; a
``ConflictError`` is retried once (a second one is an error).

A request counts if it ends inside the timed window.  Per backend and per
kind (scenario, edit, searches, all): requests, requests/s, p50 and p99
latency (nearest rank, exactly as measured), mean results found, errors
and conflicts; the machine's CPU use over the window (other work on the
machine shows there); and ZCatalog's p50 and p99 divided by pgcatalog's.

    .venv/bin/python benchmarks/mixed.py [--docs 20000] [--workers 2]
        [--duration 60] [--warmup 10] [--seed 21]
        [--backends pgcatalog relstorage]

PostgreSQL as in ``run.py`` (``PGCATALOG_BENCH_DSN`` or an embedded
server).  Results: ``benchmarks/results/mixed-<timestamp>.json``.  Compare
the backends within one run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from database import fresh_database
from database import pg_server
from database import server_version
from load import machine_cpu
from load import latency_stats
from pathlib import Path
from typing import Any
from workload import folder_id
from workload import scenarios
from workload import SITE_ID
from workload import SUBJECTS
from workload import WORDS

import argparse
import editors
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time


HERE = Path(__file__).resolve().parent
BACKENDS = ("pgcatalog", "relstorage")
BASELINE = "pgcatalog"  # the other backends' latencies are divided by its own
MEMBER = "member"  # an authenticated user without Manager
USERS = ("manager", MEMBER, "anonymous")
EDIT_EVERY = 20  # one request in 20 is an edit
LISTED = 10  # brains a listing shows when the query asks for no page
PAGES = 10  # the date-sorted search asks for one of the first pages
START_TIMEOUT = 600  # seconds for every worker's Zope to start
SCENARIOS = {s.name: s for s in scenarios()}
KINDS = {**{name: s.label for name, s in SCENARIOS.items()}, "edit": "edit (title, reindex, commit)"}
ROWS = {**KINDS, "searches": "all searches", "all": "all requests"}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the requests --------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One request of a worker: a search (``query``) or an edit (``number``)."""

    kind: str
    user: str
    query: dict | None = None
    number: int | None = None  # the Document an edit changes


def plan(rng: random.Random, docs: int) -> Request:
    """The next request, drawn from *rng* alone (so the same on every backend)."""
    if rng.randrange(EDIT_EVERY) == 0:
        return Request("edit", "manager", number=rng.randrange(docs))
    scenario = SCENARIOS[rng.choice(list(SCENARIOS))]
    query = dict(scenario.query)
    if scenario.name == "complex":
        query["Subject"] = {"query": rng.sample(SUBJECTS, 2), "operator": "or"}
    elif scenario.name == "fulltext":
        query["SearchableText"] = rng.choice(WORDS + SUBJECTS)
    elif scenario.name == "navigation":
        query["path"] = {"query": f"/{SITE_ID}/{folder_id(rng.randrange(docs))}", "depth": 1}
    elif scenario.name == "date_paged":
        query["b_start"] = rng.randrange(PAGES) * query["b_size"]
    user = "anonymous" if scenario.anonymous else rng.choice(USERS)
    return Request(scenario.name, user, query=query)


def begin(app: Any, user: str) -> Any:
    """Begin a request as the publisher would: a new transaction, a new
    request, the site and the user; return the site."""
    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.SecurityManagement import noSecurityManager
    from Acquisition import aq_parent
    from editors import fresh_site

    import transaction

    transaction.begin()
    site = fresh_site(app)  # logged in as the Manager
    if user == "anonymous":
        noSecurityManager()
    elif user == MEMBER:
        users = aq_parent(site).acl_users
        newSecurityManager(None, users.getUser(MEMBER).__of__(users))
    return site


def listing(app: Any, request: Request) -> int:
    """A listing page: the search, ``len()``, then ``getURL()``, ``Title``
    and ``getObject()`` of every brain on the page; the request ended.
    Returns how many results the page says were found."""
    from plone.batching import Batch

    import transaction

    try:
        site = begin(app, request.user)
        query = request.query
        results = site.portal_catalog.searchResults(**query)
        found = len(results)
        page = Batch(results, query.get("b_size", LISTED), query.get("b_start", 0))
        for brain in page:
            brain.getURL()
            brain.Title  # noqa: B018  (metadata read, as a template does)
            brain.getObject()
        return getattr(results, "actual_result_count", found)
    finally:
        transaction.abort()


def edit(app: Any, number: int, serial: int) -> int:
    """A new title for Document *number*, ``reindexObject()``, commit; a
    ``ConflictError`` retried once.  Returns the conflicts met; the
    second conflict is raised."""
    from publisher import change_document
    from ZODB.POSException import ConflictError

    import transaction

    for attempt in range(2):
        try:
            change_document(begin(app, "manager"), number, serial)
            transaction.commit()
            return attempt
        except ConflictError:
            transaction.abort()
            if attempt:
                raise
    raise AssertionError("unreachable")


# -- in a Zope process ---------------------------------------------------------------


def setup(config: dict) -> dict:
    """Build the site on ``worker.py``'s bulk path, add the Member, check
    the catalog, ``VACUUM (ANALYZE)``."""
    from Acquisition import aq_base
    from worker import Worker

    import logging
    import transaction

    logging.disable(logging.WARNING)  # site creation's GenericSetup chatter
    builder = Worker({"backend": config["backend"], "home": config["home"], "dsn": config["dsn"]})
    builder.build()
    bulk = builder.grow_to(config["docs"])
    app = builder.app
    app.acl_users._doAddUser(MEMBER, MEMBER, ["Member"], [])
    transaction.commit()
    catalog = builder.catalog
    klass = type(aq_base(catalog))
    info = {
        "site_creation_s": builder.result["site_creation_s"],
        "bulk": bulk,
        "catalog_class": f"{klass.__module__}.{klass.__qualname__}",
        "documents": len(catalog.unrestrictedSearchResults(portal_type="Document")),
    }
    builder.settle()
    app._p_jar.db().close()
    return info


def serve(config: dict, index: int) -> dict:
    """A worker process: start Zope, say so, wait for the go, run the loop."""
    from ZODB.POSException import ConflictError

    import transaction
    import zopesite

    home = Path(config["home"])
    app = zopesite.start_zope(home / "zope.conf")
    transaction.abort()
    (home / f"ready-{index}").touch()
    go = home / "go"
    while not go.exists():
        time.sleep(0.05)
    start = float(go.read_text()) + config["warmup"]
    end = start + config["duration"]
    rng = random.Random(f"mixed-{config['seed']}-{index}")
    samples: list[list] = []  # kind, user, ended (epoch), ms, found, conflicts, error
    serial = 0
    while time.time() < end:
        request = plan(rng, config["docs"])
        found, conflicts, error = 0, 0, None
        started = time.perf_counter()
        try:
            if request.kind == "edit":
                serial += 1
                conflicts = edit(app, request.number, index * 1_000_000 + serial)
            else:
                found = listing(app, request)
        except ConflictError as exc:  # an edit's second, or a search's read conflict
            transaction.abort()
            retried = request.kind == "edit"
            conflicts = 2 if retried else 1
            error = f"{type(exc).__name__}{' (retried once)' if retried else ''}"
        except Exception as exc:  # counted and reported, never hidden
            transaction.abort()
            error = f"{type(exc).__name__}: {exc}"[:300]
        elapsed = (time.perf_counter() - started) * 1000.0
        samples.append([request.kind, request.user, time.time(), elapsed, found, conflicts, error])
    timed = [s for s in samples if start <= s[2] <= end]
    return {"worker": index, "requests_run": len(samples), "timed": timed}


# -- the driver ----------------------------------------------------------------------


def spawn(role: str, config_file: Path, out: Path, index: int = 0) -> subprocess.Popen:
    return editors.spawn(role, config_file, out, index, script=__file__)


def run_workers(config: dict, config_file: Path) -> tuple[list[dict], dict]:
    """Start every worker; once all have started Zope, give them the same
    start time.  Returns their results and the machine's CPU use over
    the timed window."""
    home = Path(config["home"])
    outs = [home / f"worker-{i}.json" for i in range(config["workers"])]
    processes = [spawn("worker", config_file, out, i) for i, out in enumerate(outs)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not all((home / f"ready-{i}").exists() for i in range(config["workers"])):
            if any(p.poll() is not None for p in processes) or time.monotonic() > deadline:
                raise RuntimeError("a worker did not start")
            time.sleep(0.2)
        go = time.time()
        (home / "go.tmp").write_text(repr(go))
        (home / "go.tmp").rename(home / "go")  # whole, never half written
        log(f"{config['backend']}: {config['workers']} workers started, go")
        time.sleep(max(0.0, go + config["warmup"] - time.time()))
        busy0, total0 = machine_cpu()
        time.sleep(max(0.0, go + config["warmup"] + config["duration"] - time.time()))
        busy1, total1 = machine_cpu()
        for process in processes:
            if process.wait() != 0:
                raise RuntimeError("a worker failed")
    finally:
        for process in processes:  # ours, by their Popen objects
            if process.poll() is None:
                process.kill()
                process.wait()
    cpu = {
        "machine_busy_s": round(busy1 - busy0, 1),
        "machine_capacity_s": round(total1 - total0, 1),
        "machine_busy_pct": round(100.0 * (busy1 - busy0) / max(total1 - total0, 1e-9), 1),
    }
    return [json.loads(out.read_text()) for out in outs], cpu


def stats(samples: list[list], seconds: float) -> dict:
    """Requests, req/s, p50/p99/mean/max ms, mean found, errors, conflicts."""
    return {
        **latency_stats((s[3] for s in samples), seconds, digits=2),
        "mean_found": round(sum(s[4] for s in samples) / len(samples), 1),
        "errors": sum(1 for s in samples if s[6] is not None),
        "conflicts": sum(s[5] for s in samples),
    }


def summarise(workers: list[dict], seconds: float) -> dict:
    """Per kind (and all searches, all requests), per user of the searches;
    the distinct errors."""
    samples = [s for w in workers for s in w["timed"]]
    groups: dict[str, list[list]] = {kind: [s for s in samples if s[0] == kind] for kind in KINDS}
    groups["searches"] = [s for s in samples if s[0] != "edit"]
    groups["all"] = samples
    by_user = {user: [s for s in groups["searches"] if s[1] == user] for user in USERS}
    errors = Counter(s[6] for s in samples if s[6] is not None)
    return {
        "kinds": {kind: stats(chosen, seconds) for kind, chosen in groups.items() if chosen},
        "searches_by_user": {user: stats(chosen, seconds) for user, chosen in by_user.items() if chosen},
        "error_messages": dict(errors.most_common(20)),
        "requests_run": sum(w["requests_run"] for w in workers),
    }


def run_backend(backend: str, server_dsn: str, settings: dict) -> dict:
    """One backend: a fresh database, the site, the workers."""
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-mixed-{backend}-"))
    try:
        with fresh_database(server_dsn, f"mixed_{backend}") as dsn:
            config = {**settings, "backend": backend, "dsn": dsn, "home": str(home)}
            config_file = home / "config.json"
            config_file.write_text(json.dumps(config))
            started = time.perf_counter()
            if spawn("setup", config_file, home / "setup.json").wait() != 0:
                raise RuntimeError(f"{backend}: setup failed")
            site = json.loads((home / "setup.json").read_text())
            log(f"{backend}: site of {site['documents']} documents ready in "
                f"{time.perf_counter() - started:.0f}s ({site['catalog_class']})")  # fmt: skip
            assert site["catalog_class"].startswith("plone.pgcatalog.") == (backend == "pgcatalog"), site
            assert site["documents"] == settings["docs"], site
            load_before = os.getloadavg()
            workers, cpu = run_workers(config, config_file)
            summary = summarise(workers, settings["duration"])
            return {
                "site": site,
                "load_before": load_before,
                "load_after": os.getloadavg(),
                "window_cpu": cpu,
                **summary,
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def ratios(backends: dict[str, dict]) -> dict[str, dict]:
    """Per other backend and kind: its p50 and p99 divided by the baseline's."""
    if BASELINE not in backends:
        return {}
    base = backends[BASELINE]["kinds"]
    found: dict[str, dict] = {}
    for backend, result in backends.items():
        if backend == BASELINE:
            continue
        found[backend] = {
            kind: {
                "p50": round(row["p50_ms"] / base[kind]["p50_ms"], 2),
                "p99": round(row["p99_ms"] / base[kind]["p99_ms"], 2),
            }
            for kind, row in result["kinds"].items()
            if kind in base
        }
    return found


def table(results: dict) -> str:
    """The Markdown table: per kind, each backend's requests, req/s, p50,
    p99 and errors, then the other backends' p50 and p99 over the baseline's."""
    backends = results["backends"]
    divided = results["ratios"]
    head = ["request"]
    for b in backends:
        head += [f"{b} n", f"{b} req/s", f"{b} p50 ms", f"{b} p99 ms", f"{b} errors"]
    for b in divided:
        head += [f"{b} ÷ {BASELINE} p50", f"{b} ÷ {BASELINE} p99"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for kind, label in ROWS.items():
        cells = [label]
        for result in backends.values():
            row = result["kinds"].get(kind)
            cells += (
                [
                    str(row["requests"]),
                    f"{row['rps']:.1f}",
                    f"{row['p50_ms']:.1f}",
                    f"{row['p99_ms']:.1f}",
                    str(row["errors"]),
                ]  # fmt: skip
                if row
                else ["-"] * 5
            )
        for ratio in divided.values():
            row = ratio.get(kind)
            cells += [f"{row['p50']:.2f}", f"{row['p99']:.2f}"] if row else ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--duration", type=float, default=60.0, help="timed seconds")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the timed window")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--role", nargs=4, metavar=("ROLE", "INDEX", "CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        role, index, config_file, out = args.role
        config = json.loads(Path(config_file).read_text())
        result = serve(config, int(index)) if role == "worker" else setup(config)
        Path(out).write_text(json.dumps(result))
        return 0
    from run import git_commit

    settings = {
        "docs": args.docs, "workers": args.workers, "duration": args.duration,
        "warmup": args.warmup, "seed": args.seed, "edit_every": EDIT_EVERY,
        "listed": LISTED, "pages": PAGES, "users": USERS,
    }  # fmt: skip
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "git_commit": git_commit(),
        "python": platform.python_version(), "cpus": os.cpu_count(), "settings": settings,
        "backends": {},
    }  # fmt: skip
    started = time.perf_counter()
    with pg_server() as server_dsn:
        results["postgresql"] = server_version(server_dsn)
        for backend in args.backends:
            results["backends"][backend] = run_backend(backend, server_dsn, settings)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["ratios"] = ratios(results["backends"])
    out = HERE / "results" / f"mixed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(
        f"\n{args.docs} documents, {args.workers} worker processes, {args.duration:.0f}s after "
        f"{args.warmup:.0f}s warm-up, seed {args.seed}; one request in {EDIT_EVERY} an edit\n"
    )
    print(table(results))
    print()
    for backend, result in results["backends"].items():
        edits = result["kinds"].get("edit", {})
        print(
            f"{backend}: {result['kinds']['all']['requests']} requests, {edits.get('requests', 0)} edits, "
            f"{result['kinds']['all']['conflicts']} conflicts, {result['kinds']['all']['errors']} errors; "
            f"machine CPU {result['window_cpu']['machine_busy_pct']:.0f}% busy in the window"
        )
        for message, count in result["error_messages"].items():
            print(f"{backend}: {count} x {message}")
    for backend, ratio in results["ratios"].items():
        for kind in ("all", "searches"):
            if kind in ratio:
                print(
                    f"{backend} ÷ {BASELINE}, {ROWS[kind]}: p50 {ratio[kind]['p50']:.2f}x, "
                    f"p99 {ratio[kind]['p99']:.2f}x"
                )
    print(f"\nResults: {out} ({results['seconds']:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A bounded load test through the WSGI app, against stock ZCatalog.

For each backend, one after the other, a server process builds a Plone site
with ``--docs`` Documents (the seeded content of ``workload.py``, 200 per
transaction, plone.restapi installed) in a fresh database, and serves it
with waitress (4 threads, Plone's default) on 127.0.0.1 through Zope's WSGI
app, ZODB cache-size 400.  This process then runs the load against it:

- ``--clients`` anonymous clients, closed loop (no think time), each going
  round a mix of full-text searches (``@@search?SearchableText=``), filtered
  and sorted searches (``@@search`` by type and subject, ``sort_on=modified``),
  REST API searches (``@search``, JSON), document views and folder views
  (the folder's default view, a catalog listing);
- ``--editors`` editors, closed loop too, changing the title of a random
  Document through a REST API ``PATCH`` as the Manager (basic auth) to a
  word of its own, then at once searching for that word (``@search``,
  JSON): an answer that does not find the Document is a read-your-writes
  violation; ConflictErrors are retried inside Zope, as always.

Only requests that end inside the timed window (``--duration`` seconds
after ``--warmup`` seconds) count.  Every non-2xx answer (and any broken
connection) is an error.  Per backend and request kind: requests, req/s,
p50 and p99 latency (nearest rank) and errors; for the window, the CPU
seconds of the server, of PostgreSQL's backends of the site's database, of
this process and of the whole machine, and ZODB conflicts seen by Zope.
Inside the server, per kind, the time from the WSGI call to its return (no
queue) and the Python CPU time of the serving thread.

    .venv/bin/python benchmarks/load.py [--duration 60] [--warmup 10]
        [--clients 16] [--editors 2] [--docs 2000]
        [--backends pgcatalog relstorage] [--navigation-depth N]

PostgreSQL as in ``run.py`` (``PGCATALOG_BENCH_DSN`` or an embedded
server).  Compare the backends within one run.

The backend ``pgcatalog-replicas`` is ``pgcatalog`` with its searches on
two streaming replicas (``PGCATALOG_READ_DSN``); with it in
``--backends``, every backend runs on the primary of a cluster of this
machine's own (``plone.pgcatalog.cluster``: PostgreSQL from ``pgserver``,
two standbys made by ``pg_basebackup``), so that primary and primary with
replicas are measured on the same server.  The window then also reports
the CPU seconds of the standbys' backends of the site's database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Iterable
from database import fresh_database
from database import pg_server
from database import server_version
from dataclasses import dataclass
from pathlib import Path
from psycopg import conninfo
from urllib.parse import urlencode
from workload import doc_spec
from workload import SITE_ID
from workload import SUBJECTS
from workload import WORDS

import argparse
import base64
import contextlib
import http.client
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time


HERE = Path(__file__).parent
HOST = "127.0.0.1"
THREADS = 4  # waitress' default, and Plone's
BULK_BATCH = 200
PROBE_WORD = "postgresql"  # a subject, so also a word of many descriptions
MESSAGE = "LOAD "  # prefix of the server's answers on its protocol pipe

# The anonymous mix, in the order each client goes round it (client *i*
# starts at position *i*, so the kinds are spread over the clients).
ANONYMOUS_MIX = ("search", "document", "filtered", "folder", "restapi", "document")
KINDS = {
    "search": "search: @@search, full text",
    "filtered": "search: @@search, type + subject, by modified",
    "restapi": "search: REST @search, text + type, by effective, 20",
    "document": "view: Document",
    "folder": "view: folder (listing)",
    "edit": "edit: REST PATCH title (Manager)",
    "edit-search": "search: REST @search for the word just saved (Manager)",
}
REPLICAS = "pgcatalog-replicas"


# -- the server process ---------------------------------------------------------


class ConflictCount:
    """Exceptions Zope aborted a request for, by class and retried or not
    (``IPubBeforeAbort``), so conflicts retried inside Zope show up."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def __call__(self, event) -> None:
        name = event.exc_info[0].__name__ if event.exc_info else "?"
        with self.lock:
            self.counts[f"{name} ({'retried' if event.retry else 'final'})"] += 1

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)


def request_kind(environ: dict) -> str:
    """The kind of a request, as the load generator names it."""
    path = environ.get("PATH_INFO", "")
    if environ.get("REQUEST_METHOD") == "PATCH":
        return "edit"
    if path.endswith("/@@search"):
        return "filtered" if "Subject=" in environ.get("QUERY_STRING", "") else "search"
    if path.endswith("/@search"):
        return "edit-search" if "SearchableText=saved" in environ.get("QUERY_STRING", "") else "restapi"
    return "document" if "/doc-" in path else "folder"


class InZope:
    """Each request inside Zope's WSGI app, by kind: its wall time (served,
    without the wait in waitress' queue) and its thread's CPU time (the
    Python work, without waits for the GIL, for PostgreSQL or for a core)."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.samples: dict[str, list[tuple[float, float]]] = {}

    def __call__(self, environ: dict, start_response: Callable):
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.app(environ, start_response)
        finally:
            sample = ((time.perf_counter() - started) * 1000.0, (time.thread_time() - cpu) * 1000.0)
            with self.lock:
                self.samples.setdefault(request_kind(environ), []).append(sample)

    def take(self) -> dict:
        """Per kind, the requests served since the last call."""
        with self.lock:
            samples, self.samples = self.samples, {}
        samples["all"] = [sample for values in samples.values() for sample in values]
        taken = {}
        for kind, values in samples.items():
            if not values:
                continue
            wall = sorted(sample[0] for sample in values)
            cpu = sorted(sample[1] for sample in values)
            taken[kind] = {
                "requests": len(wall),
                "p50_ms": round(percentile(wall, 50), 1),
                "p99_ms": round(percentile(wall, 99), 1),
                "mean_ms": round(sum(wall) / len(wall), 1),
                "cpu_p50_ms": round(percentile(cpu, 50), 1),
                "cpu_mean_ms": round(sum(cpu) / len(cpu), 1),
            }
        return taken


def seed(site, docs: int) -> float:
    """Add *docs* Documents on the bulk path; return the seconds it took."""
    import transaction
    import zopesite

    started = time.perf_counter()
    for first in range(0, docs, BULK_BATCH):
        for number in range(first, min(docs, first + BULK_BATCH)):
            zopesite.add_document(site, doc_spec(number))
        transaction.commit()
        site._p_jar.cacheGC()
    return time.perf_counter() - started


def build_site(config: dict) -> tuple[Callable, dict]:
    """Start Zope, build the site, leave no connection open; return the WSGI
    app and what the load needs to know about the site."""
    from AccessControl.SecurityManagement import noSecurityManager
    from zope.globalrequest import setRequest

    import psycopg
    import transaction
    import zopesite

    backend, docs = config["backend"], config["docs"]
    conf = zopesite.write_config(backend, Path(config["home"]), config["dsn"])
    # start_zope calls Zope2.Startup.run.make_wsgi_app({}, conf): the WSGI app
    # it returns is ZPublisher's publish_module, served below.
    app = zopesite.start_zope(conf)
    site = zopesite.create_site(app, backend)
    site.portal_setup.runAllImportStepsFromProfile("profile-plone.restapi:default")
    if config.get("navigation_depth") is not None:
        from plone.registry.interfaces import IRegistry
        from zope.component import getUtility

        getUtility(IRegistry)["plone.navigation_depth"] = config["navigation_depth"]
    transaction.commit()
    seconds = seed(site, docs)
    from Acquisition import aq_base

    catalog = site.portal_catalog
    klass = type(aq_base(catalog))
    info = {
        "catalog_class": f"{klass.__module__}.{klass.__qualname__}",
        "documents": len(catalog.unrestrictedSearchResults(portal_type="Document")),
        "seed_seconds": round(seconds, 1),
    }
    transaction.abort()
    noSecurityManager()
    setRequest(None)
    app._p_jar.close()
    # as autovacuum would have done on a live site (untimed)
    with psycopg.connect(config["dsn"], autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    from ZPublisher.WSGIPublisher import publish_module

    return publish_module, info


def serve(config: dict) -> int:
    """The server process: build, serve, answer ``mark`` and ``stop`` on
    stdin with CPU seconds and conflict counts on the protocol pipe."""
    import logging

    # Our answers go to the real stdout; anything else printed goes to stderr.
    pipe = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    # with more clients than threads, waitress warns of its queue on every request
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)

    def answer(data: dict) -> None:
        pipe.write(MESSAGE + json.dumps(data) + "\n")

    app, info = build_site(config)
    if config.get("read_dsn"):
        os.environ["PGCATALOG_READ_DSN"] = config["read_dsn"]  # searches from now on
    from zope.component import provideHandler
    from ZPublisher.interfaces import IPubBeforeAbort

    import waitress

    conflicts = ConflictCount()
    provideHandler(conflicts, (IPubBeforeAbort,))
    timed = InZope(app)
    server = waitress.create_server(timed, host=HOST, port=0, threads=THREADS)
    threading.Thread(target=server.run, daemon=True).start()
    answer({**info, "port": server.effective_port, "pid": os.getpid()})
    for line in sys.stdin:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        answer({"cpu": cpu, "aborts": conflicts.snapshot(), "in_zope": timed.take()})
        if line.strip() == "stop":
            break
    pipe.flush()
    os._exit(0)  # waitress' threads and the ZODB pool end with the process


# -- the load -------------------------------------------------------------------


@dataclass
class Sample:
    kind: str
    started: float
    ended: float
    status: int  # 0: the connection broke
    size: int  # bytes of the body


def published_documents(docs: int) -> list[tuple[str, str]]:
    """(folder, id) of the published Documents: what anonymous may see."""
    return [(s.folder, s.id) for s in map(doc_spec, range(docs)) if s.state == "published"]


def anonymous_request(kind: str, rng: random.Random, published: list) -> tuple[str, str, bytes | None, dict]:
    """Method, path, body and headers of one anonymous request of *kind*."""
    site = f"/{SITE_ID}"
    if kind == "search":
        word = rng.choice(WORDS + SUBJECTS)
        return "GET", f"{site}/@@search?" + urlencode({"SearchableText": word}), None, {}
    if kind == "filtered":
        query = {"portal_type": "Document", "Subject": rng.choice(SUBJECTS), "sort_on": "modified"}
        return "GET", f"{site}/@@search?" + urlencode(query), None, {}
    if kind == "restapi":
        query = {
            "SearchableText": rng.choice(WORDS + SUBJECTS), "portal_type": "Document",
            "sort_on": "effective", "sort_order": "descending", "b_size": 20,
            "metadata_fields": "effective",
        }  # fmt: skip
        return "GET", f"{site}/@search?" + urlencode(query), None, {"Accept": "application/json"}
    folder, doc = rng.choice(published)
    if kind == "document":
        return "GET", f"{site}/{folder}/{doc}", None, {}
    return "GET", f"{site}/{folder}", None, {}


def edit_request(rng: random.Random, docs: int, word: str) -> tuple[str, str, bytes | None, dict]:
    """A REST API PATCH of a random Document's title to one ending in
    *word*, as the Manager."""
    import zopesite

    spec = doc_spec(rng.randrange(docs))
    auth = base64.b64encode(f"{zopesite.MANAGER}:{zopesite.MANAGER}".encode()).decode()
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "Authorization": f"Basic {auth}",
    }
    body = json.dumps({"title": f"{spec.title} {word}"}).encode()
    return "PATCH", f"/{SITE_ID}/{spec.folder}/{spec.id}", body, headers


class KeepAlive:
    """One keep-alive connection to the server; each request is a
    :class:`Sample` in *out* (status 0: the connection broke)."""

    def __init__(self, port: int, out: list) -> None:
        self.port, self.out, self.conn = port, out, None

    def send(self, kind: str, request: tuple) -> tuple[int, bytes]:
        method, path, body, headers = request
        started = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=120)
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            status, data = response.status, response.read()
            if response.will_close:
                self.close()
        except (OSError, http.client.HTTPException):
            status, data = 0, b""
            self.close()
        self.out.append(Sample(kind, started, time.perf_counter(), status, len(data)))
        return status, data

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def client(port: int, plan: Callable[[int], tuple[str, tuple]], stop: threading.Event, out: list) -> None:
    """Requests one after the other on one connection until *stop*."""
    connection = KeepAlive(port, out)
    serial = 0
    while not stop.is_set():
        connection.send(*plan(serial))
        serial += 1
    connection.close()


def editor(port: int, number: int, docs: int, stop: threading.Event, out: list, checks: list) -> None:
    """An editor: saves a Document's title with a word of its own, then
    searches for that word at once (the listing after a save); *checks*
    gets ``(time, found)`` of each search (read-your-writes)."""
    rng = random.Random(f"load-editor-{number}")
    connection = KeepAlive(port, out)
    serial = 0
    while not stop.is_set():
        word = f"saved{number}x{serial}"
        serial += 1
        saved = edit_request(rng, docs, word)
        status, _ = connection.send("edit", saved)
        if not 200 <= status < 300:
            continue
        search = ("GET", f"/{SITE_ID}/@search?" + urlencode({"SearchableText": word}), None, saved[3])
        status, data = connection.send("edit-search", search)
        if 200 <= status < 300:
            found = [item["@id"] for item in json.loads(data)["items"]]
            checks.append((time.perf_counter(), any(url.endswith(saved[1]) for url in found)))
    connection.close()


def get(port: int, path: str, headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def probe(port: int, docs: int) -> dict:
    """Before the load: anonymous searches of a known word find Documents,
    on the search page and through the REST API, and the pages answer."""
    status, page = get(port, f"/{SITE_ID}/@@search?SearchableText={PROBE_WORD}")
    # the count of the results, and their links (below the count, not the navigation's)
    count = re.search(rb'id="search-results-number"[^>]*>\s*(\d+)', page)
    listed = re.findall(rb'href="[^"]*/(doc-\d{6})"', page.partition(b'id="search-results"')[2])
    found = int(count.group(1)) if count else 0
    assert status == 200 and found and listed, f"@@search for {PROBE_WORD!r}: {status}, nothing found"
    status, body = get(
        port,
        f"/{SITE_ID}/@search?SearchableText={PROBE_WORD}&portal_type=Document",
        {"Accept": "application/json"},
    )
    total = json.loads(body)["items_total"] if status == 200 else 0
    assert total > 0, f"@search for {PROBE_WORD!r}: {status}, no result"
    folder, doc = published_documents(docs)[0]
    for path in (f"/{SITE_ID}/{folder}/{doc}", f"/{SITE_ID}/{folder}"):
        status, _ = get(port, path)
        assert status == 200, f"{path}: {status}"
    return {
        "word": PROBE_WORD,
        "search_page_results": found,
        "search_page_links": len(set(listed)),
        "restapi_items_total": total,
    }


def percentile(ordered: list[float], p: float) -> float:
    """Nearest-rank percentile of a sorted list."""
    return ordered[max(0, math.ceil(p / 100.0 * len(ordered)) - 1)]


def latency_stats(ms: Iterable[float], seconds: float, digits: int = 1) -> dict:
    """Of the requests that took *ms* milliseconds in a window of
    *seconds*: their number, req/s, p50/p99 (nearest rank), mean and
    max ms rounded to *digits*."""
    ms = sorted(ms)
    return {
        "requests": len(ms),
        "rps": round(len(ms) / seconds, 2),
        "p50_ms": round(percentile(ms, 50), digits),
        "p99_ms": round(percentile(ms, 99), digits),
        "mean_ms": round(sum(ms) / len(ms), digits),
        "max_ms": round(ms[-1], digits),
    }


def summarize(samples: list[Sample], seconds: float) -> dict:
    """Per kind: requests, req/s, p50/p99 ms, errors and the statuses."""
    by_kind: dict[str, list[Sample]] = {}
    for sample in samples:
        by_kind.setdefault(sample.kind, []).append(sample)
    rows = {}
    for kind in [*KINDS, "all"]:
        chosen = samples if kind == "all" else by_kind.get(kind, [])
        if not chosen:
            continue
        statuses = Counter(str(s.status) for s in chosen)
        rows[kind] = {
            **latency_stats(((s.ended - s.started) * 1000.0 for s in chosen), seconds),
            "mean_kb": round(sum(s.size for s in chosen) / len(chosen) / 1024.0, 1),
            "errors": sum(1 for s in chosen if not 200 <= s.status < 300),
            "statuses": dict(statuses),
        }
    return rows


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / tick, sum(fields) / tick


def backends_cpu(dsn: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving *dsn*'s database."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        pids = [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )]  # fmt: skip
    cpu = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return cpu


class Server:
    """The server process of one backend and its protocol pipe."""

    def __init__(self, config_file: Path, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(config_file)],
            cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log.open("w"), text=True,
        )  # fmt: skip

    def read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(MESSAGE):
                return json.loads(line[len(MESSAGE) :])
        raise RuntimeError("the server process ended:\n" + self.log.read_text()[-4000:])

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # our own child, by its handle
                self.proc.wait()


def snapshot(server: Server, dsn: str, command: str, standbys: list[str]) -> dict:
    """CPU seconds of the server, PostgreSQL (the primary's backends, and
    the replicas' of *standbys*), this process and the machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    busy, total = machine_cpu()
    answer = server.ask(command)
    return {
        "time": time.perf_counter(), "server": answer["cpu"], "aborts": answer["aborts"],
        "in_zope": answer["in_zope"],
        "postgres": backends_cpu(dsn), "loadgen": usage.ru_utime + usage.ru_stime,
        "replicas": {p: cpu for standby in standbys for p, cpu in backends_cpu(standby).items()},
        "machine_busy": busy, "machine_total": total,
    }  # fmt: skip


def window_usage(start: dict, end: dict) -> dict:
    """What the timed window cost, in CPU seconds (PostgreSQL: the backends
    alive at both ends of the window)."""
    postgres = sum(
        end["postgres"][p] - start["postgres"][p] for p in end["postgres"] if p in start["postgres"]
    )
    replicas = sum(
        end["replicas"][p] - start["replicas"][p] for p in end["replicas"] if p in start["replicas"]
    )
    busy = end["machine_busy"] - start["machine_busy"]
    known = (end["server"] - start["server"]) + postgres + replicas + (end["loadgen"] - start["loadgen"])
    aborts = Counter(end["aborts"])
    aborts.subtract(start["aborts"])
    served = end["in_zope"].get("all", {}).get("requests", 0)
    server_cpu = end["server"] - start["server"]
    return {
        "seconds": round(end["time"] - start["time"], 2),
        "in_zope": end["in_zope"],
        "cpu_ms_per_request": {
            "server": round(server_cpu * 1000.0 / max(served, 1), 1),
            "postgres_backends": round(postgres * 1000.0 / max(served, 1), 1),
            "replica_backends": round(replicas * 1000.0 / max(served, 1), 1),
        },
        "cpu_s": {
            "server": round(end["server"] - start["server"], 1),
            "postgres_backends": round(postgres, 1),
            "replica_backends": round(replicas, 1),
            "loadgen": round(end["loadgen"] - start["loadgen"], 1),
            "machine": round(busy, 1),
            "other_processes": round(busy - known, 1),
            "machine_capacity": round(end["machine_total"] - start["machine_total"], 1),
        },
        "zope_aborts": {k: v for k, v in aborts.items() if v},
        "zope_aborts_total_run": end["aborts"],
    }


def run_load(server: Server, port: int, dsn: str, settings: dict, standbys: list[str]) -> dict:
    """Warm up, then the timed window; the clients are threads here
    (*standbys*: DSNs of the site's database on each replica, if any)."""
    docs, stop, out = settings["docs"], threading.Event(), []
    published = published_documents(docs)
    threads = []
    for number in range(settings["clients"]):
        rng = random.Random(f"load-client-{number}")

        def plan(serial: int, number=number, rng=rng) -> tuple[str, tuple]:
            kind = ANONYMOUS_MIX[(number + serial) % len(ANONYMOUS_MIX)]
            return kind, anonymous_request(kind, rng, published)

        threads.append(threading.Thread(target=client, args=(port, plan, stop, out)))
    checks: list[tuple[float, bool]] = []
    for number in range(settings["editors"]):
        threads.append(threading.Thread(target=editor, args=(port, number, docs, stop, out, checks)))
    for thread in threads:
        thread.start()
    time.sleep(settings["warmup"])
    start = snapshot(server, dsn, "mark", standbys)
    time.sleep(settings["duration"])
    end = snapshot(server, dsn, "mark", standbys)
    stop.set()
    for thread in threads:
        thread.join()
    seconds = end["time"] - start["time"]
    timed = [s for s in out if start["time"] <= s.ended <= end["time"]]
    found = [ok for ended, ok in checks if start["time"] <= ended <= end["time"]]
    return {
        "kinds": summarize(timed, seconds),
        "window": window_usage(start, end),
        "all_samples": len(out),
        "read_your_writes": {"searches": len(found), "violations": found.count(False)},
    }


def run_backend(backend: str, server_dsn: str, settings: dict, cluster=None) -> dict:
    """One backend: a fresh database, its server process, the load (with
    ``pgcatalog-replicas``, searches on the standbys of *cluster*)."""
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-load-{backend}-"))
    try:
        with fresh_database(server_dsn, f"load_{backend.replace('-', '_')}") as dsn:
            dbname = conninfo.conninfo_to_dict(dsn)["dbname"]
            on_replicas = backend == REPLICAS
            standbys = [cluster.standby_dsn(i, dbname) for i in range(cluster.count)] if on_replicas else []
            config = {
                "backend": "pgcatalog" if on_replicas else backend,
                "read_dsn": cluster.read_dsn(dbname) if on_replicas else None,
                "dsn": dsn,
                "home": str(home),
                "docs": settings["docs"],
                "navigation_depth": settings["navigation_depth"],
            }
            config_file = home / "config.json"
            config_file.write_text(json.dumps(config))
            server = Server(config_file, home / "server.log")
            try:
                started = time.perf_counter()
                info = server.read()
                print(f"{backend}: site of {info['documents']} documents ready in "
                      f"{time.perf_counter() - started:.0f}s ({info['catalog_class']})", flush=True)  # fmt: skip
                is_pgcatalog = info["catalog_class"].startswith("plone.pgcatalog.")
                assert is_pgcatalog == backend.startswith("pgcatalog"), info["catalog_class"]
                assert info["documents"] == settings["docs"], info
                checked = probe(info["port"], settings["docs"])
                print(f"{backend}: probe {checked}", flush=True)
                if cluster is not None:
                    cluster.catch_up()  # the site, on every standby
                result = run_load(server, info["port"], dsn, settings, standbys)
                server.ask("stop")
            except BaseException:
                print(server.log.read_text()[-4000:], file=sys.stderr)
                raise
            finally:
                server.close()
            return {"backend": backend, "site": info, "probe": checked, **result}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def table(results: dict) -> str:
    """The Markdown table: backends side by side, per request kind."""
    backends = list(results["backends"])
    head = "| request | " + " | ".join(
        f"{b} requests | {b} req/s | {b} p50 ms | {b} p99 ms | {b} errors" for b in backends
    )
    lines = [head + " |", "|---" * (1 + 5 * len(backends)) + "|"]
    for kind in [*KINDS, "all"]:
        cells = []
        for backend in backends:
            row = results["backends"][backend]["kinds"].get(kind)
            if row is None:
                cells += ["-"] * 5
                continue
            cells += [str(row["requests"]), f"{row['rps']:.1f}", f"{row['p50_ms']:.0f}",
                      f"{row['p99_ms']:.0f}", str(row["errors"])]  # fmt: skip
        lines.append(f"| {KINDS.get(kind, 'all')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def service_table(results: dict) -> str:
    """The Markdown table of the time inside Zope (no queue), and CPU per request."""
    backends = list(results["backends"])
    head = "| request | " + " | ".join(f"{b} p50 ms | {b} p99 ms | {b} CPU p50 ms" for b in backends)
    lines = [head + " |", "|---" * (1 + 3 * len(backends)) + "|"]
    for kind in [*KINDS, "all"]:
        cells = []
        for backend in backends:
            row = results["backends"][backend]["window"]["in_zope"].get(kind)
            cells += (
                [f"{row['p50_ms']:.0f}", f"{row['p99_ms']:.0f}", f"{row['cpu_p50_ms']:.1f}"]
                if row
                else ["-"] * 3
            )
        lines.append(f"| {KINDS.get(kind, 'all')} | " + " | ".join(cells) + " |")
    for who in ("server", "postgres_backends", "replica_backends"):
        cells = []
        for backend in backends:
            cells += ["", "", f"{results['backends'][backend]['window']['cpu_ms_per_request'][who]:.1f}"]
        lines.append(f"| CPU ms per request, all: {who} process | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="timed seconds")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the timed window")
    parser.add_argument("--clients", type=int, default=16, help="anonymous clients")
    parser.add_argument("--editors", type=int, default=2, help="editing clients (Manager)")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument(
        "--navigation-depth", type=int, help="plone.navigation_depth of the site (default: Plone's, 3)"
    )
    parser.add_argument("--backends", nargs="+", default=["pgcatalog", "relstorage"])
    parser.add_argument("--serve", metavar="CONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(json.loads(Path(args.serve).read_text()))
    settings = {
        "duration": args.duration, "warmup": args.warmup, "clients": args.clients,
        "editors": args.editors, "docs": args.docs, "waitress_threads": THREADS,
        "navigation_depth": args.navigation_depth,
        "anonymous_mix": ANONYMOUS_MIX,
    }  # fmt: skip
    results = {
        "python": platform.python_version(), "cpus": os.cpu_count(), "settings": settings,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_before": os.getloadavg(), "backends": {},
    }  # fmt: skip
    with contextlib.ExitStack() as stack:
        cluster = None
        if REPLICAS in args.backends:
            from plone.pgcatalog.cluster import Cluster

            cluster = Cluster(standbys=2)
            stack.callback(cluster.close)
            cluster.start()
            server_dsn = cluster.dsn()
        else:
            server_dsn = stack.enter_context(pg_server())
        results["postgresql"] = server_version(server_dsn)
        results["replicas"] = cluster.count if cluster else 0
        for backend in args.backends:
            results["backends"][backend] = run_backend(backend, server_dsn, settings, cluster)
    results["load_after"] = os.getloadavg()
    out = HERE / "results" / f"load-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\n{args.docs} documents, {args.clients} anonymous clients + {args.editors} editors, "
          f"{args.duration:.0f}s after {args.warmup:.0f}s warm-up, waitress {THREADS} threads\n")  # fmt: skip
    print(table(results))
    print("\nInside Zope (WSGI call to return, without waitress' queue; CPU: the thread's):\n")
    print(service_table(results))
    for backend, result in results["backends"].items():
        print(f"\n{backend}: window {json.dumps(result['window'])}")
        print(f"{backend}: read-your-writes {result['read_your_writes']}")
    print(f"\nResults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

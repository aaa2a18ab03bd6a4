"""Concurrent editors: worker processes editing one site at once.

Separate WSGI workers each run their own Zope with their own ZODB
connection; their transactions meet only in the database.  This script
builds, per backend, a site of published folders of Documents
(``simple_publication_workflow``), then starts W worker processes from the
same ``zope.conf``.  Each runs T transactions of a seeded random mix of
editor operations: create, edit (title and ``reindexObject``),
publish/retract, move to another folder (``api.content.move``), reorder
(``moveObjectsToTop``), share (a local role given or taken on a folder,
then ``reindexObjectSecurity``: the catalog-only reindex of everything
below it) and delete.  A ``ConflictError`` is retried as Zope's publisher
does, three times; then the transaction is given up (the user's error
page).

The race the catalogs must survive is provoked on purpose: a *slow edit*
edits a document of the race folder ``f0``, catalogs it from its snapshot
and holds the transaction open (``--hold`` seconds, first attempt only)
before it commits, while other workers share ``f0``.  A share's partial
reindex and the edit's full one then write the same document's record.
After each committed slow edit and share, the worker checks (in a new
transaction, one snapshot) that the document's record holds the
security, title and state the object has: a lost update shows there.

At the end, in one process, the catalog must equal the content: on
pgcatalog ``plone.pgcatalog.verify.verify``; on both backends, every
record's index entries and metadata, read before and after
``clearFindAndRebuild()`` (then aborted), compared.

    .venv/bin/python benchmarks/editors.py [--workers 4] [--transactions 250]
        [--hold 0.2] [--seed 20] [--backends pgcatalog relstorage]

PostgreSQL as in ``run.py`` (``PGCATALOG_BENCH_DSN`` or an embedded
server).  The backends run one after the other; compare within one run.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from database import server_version
from pathlib import Path
from typing import Any

import argparse
import collections
import contextlib
import json
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time


HERE = Path(__file__).parent
FOLDERS = 6
DOCS_PER_FOLDER = 20
RACE_FOLDER = "f0"
USER = "ann"  # gets and loses a local role on folders
RETRIES = 3  # Zope's publisher retries a ConflictError three times
START_TIMEOUT = 600  # seconds for every worker's Zope to start
ACTIONS = (
    ("create", 3),
    ("edit", 4),
    ("publish", 3),
    ("move", 2),
    ("reorder", 2),
    ("share", 3),
    ("delete", 2),
    ("slow edit", 2),
)
"""Editor operations and their weights in the mix."""

RACE_INDEXES = ("allowedRolesAndUsers", "review_state")
"""Checked after a slow edit or a share: what each of the racing reindexes writes."""

PG_ROW_CONFLICT = "plone.pgcatalog: catalog rows changed"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- in a Zope process -----------------------------------------------------------------


def build(site) -> None:
    """The folders, their Documents (every other one published) and the user."""
    from plone import api

    import transaction

    site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
    for f in range(FOLDERS):
        folder = api.content.create(container=site, type="Folder", id=f"f{f}", title=f"Folder {f}")
        api.content.transition(obj=folder, transition="publish")
        for d in range(DOCS_PER_FOLDER):
            # ids unique in the site: a move never has to rename
            doc = api.content.create(container=folder, type="Document", id=f"d{f}-{d}", title=f"Doc {f}-{d}")
            if d % 2:
                api.content.transition(obj=doc, transition="publish")
    api.user.create(email=f"{USER}@example.org", username=USER, password=f"secret-{USER}-1")
    transaction.commit()


def fresh_site(app) -> Any:
    """The site in a new request, as the publisher gives each one: no
    request-cached value outlives an attempt."""
    from Acquisition import aq_base
    from Testing.makerequest import makerequest
    from workload import SITE_ID
    from zope.component.hooks import setSite
    from zope.globalrequest import setRequest

    import zopesite

    wrapped = makerequest(aq_base(app))
    setRequest(wrapped.REQUEST)
    zopesite.login(wrapped)
    site = wrapped[SITE_ID]
    setSite(site)
    return site


def documents(folder) -> list:
    """The folder's Documents, as the editor sees them in this snapshot."""
    return [obj for obj in folder.objectValues() if obj.portal_type == "Document"]


def operate(site, action: str, rng: random.Random, name: str, hold: float) -> tuple[str, str | None]:
    """One editor's transaction (uncommitted); returns the folder's id and
    the path of the document whose record the race check looks at, if any."""
    from plone import api
    from Products.CMFCore.indexing import processQueue

    folders = [site[f"f{f}"] for f in range(FOLDERS)]
    if action == "slow edit":
        folder = site[RACE_FOLDER]
    elif action == "share":
        folder = site[RACE_FOLDER] if rng.random() < 0.5 else rng.choice(folders)
    else:
        folder = rng.choice(folders)
    docs = documents(folder)
    if action == "share":
        if folder.get_local_roles_for_userid(USER):
            folder.manage_delLocalRoles([USER])
        else:
            folder.manage_setLocalRoles(USER, ["Reader"])
        folder.reindexObjectSecurity()
        return folder.getId(), "/".join(rng.choice(docs).getPhysicalPath()) if docs else None
    if action == "create" or not docs:
        doc = api.content.create(container=folder, type="Document", id=name, title=f"Doc {name}")
        if rng.random() < 0.5:
            api.content.transition(obj=doc, transition="publish")
        return folder.getId(), None
    doc = rng.choice(docs)
    if action in ("edit", "slow edit"):
        doc.setTitle(f"Doc edited in {name}")
        doc.reindexObject()
        if action == "slow edit":
            processQueue()  # cataloged now, from this snapshot
            time.sleep(hold)  # while other workers share the folder
            return folder.getId(), "/".join(doc.getPhysicalPath())
    elif action == "publish":
        published = api.content.get_state(doc) == "published"
        api.content.transition(obj=doc, transition="retract" if published else "publish")
    elif action == "move":
        api.content.move(source=doc, target=rng.choice([f for f in folders if f is not folder]))
    elif action == "reorder":
        folder.moveObjectsToTop([doc.getId()])
    elif action == "delete":
        api.content.delete(obj=doc)
    return folder.getId(), None


def conflict_source(error: Exception) -> str:
    """What conflicted: the catalog rows (plone.pgcatalog's own check) or
    the class of the ZODB object both transactions stored."""
    if PG_ROW_CONFLICT in str(error):
        return "catalog rows (plone.pgcatalog)"
    getter = getattr(error, "get_class_name", None)
    name = getter() if getter else None
    return f"{type(error).__name__}: {name or 'unknown class'}"


def normal(value: Any) -> Any:
    """Keyword lists (and sets) in a fixed order; everything else as is."""
    if isinstance(value, (list, set, frozenset)) or type(value).__name__ in ("OOSet", "OOTreeSet"):
        items = [normal(item) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    return value


def record(catalog, path: str) -> dict | None:
    """Every index entry and metadata value of the record at *path*."""
    rid = catalog.getrid(path)
    if rid is None:
        return None
    entries = {f"index {k}": normal(v) for k, v in catalog.getIndexDataForRID(rid).items()}
    return {**entries, **{f"meta {k}": normal(v) for k, v in catalog.getMetadataForRID(rid).items()}}


def race_check(app, path: str) -> dict | None:
    """In a new transaction: does the record at *path* hold what the
    object gives for the indexes the racing reindexes write, and its
    title?  Returns the differences (empty: none), or None when nothing
    was checked (the object moved or went meanwhile)."""
    from plone.indexer.interfaces import IIndexableObject
    from ZODB.POSException import ConflictError
    from zope.component import queryMultiAdapter

    import transaction

    transaction.begin()
    try:
        site = fresh_site(app)
        catalog = site.portal_catalog
        obj = site.unrestrictedTraverse(path, None)
        if obj is None or "/".join(obj.getPhysicalPath()) != path:
            return None
        wrapper = queryMultiAdapter((obj, catalog), IIndexableObject) or obj
        entries = record(catalog, path)
        if entries is None:
            return {"record": "missing"}
        wanted = {f"index {name}": normal(getattr(wrapper, name)) for name in RACE_INDEXES}
        wanted["meta Title"] = obj.Title()
        return {k: [repr(entries.get(k)), repr(v)] for k, v in wanted.items() if entries.get(k) != v}
    except ConflictError:  # a read conflict: not checked
        return None
    finally:
        transaction.abort()


def worker(config: dict, index: int) -> dict:
    """Start Zope, wait for the go, run the transactions; the counts."""
    from ZODB.POSException import ConflictError

    import transaction
    import zopesite

    app = zopesite.start_zope(Path(config["home"]) / "zope.conf")
    fresh_site(app)
    transaction.abort()
    home = Path(config["home"])
    (home / f"ready-{index}").touch()
    while not (home / "go").exists():
        time.sleep(0.05)
    rng = random.Random(config["seed"] * 1000 + index)
    names, weights = zip(*ACTIONS, strict=True)
    runs, conflicts, given_up = collections.Counter(), collections.Counter(), collections.Counter()
    sources, errors = collections.Counter(), []
    events: list[dict] = []  # timed slow edits and shares, for the race analysis
    checks, lost = 0, []
    started = time.perf_counter()
    for t in range(config["transactions"]):
        seed = rng.getrandbits(64)
        action = random.Random(seed).choices(names, weights)[0]
        runs[action] += 1
        for n in range(RETRIES + 1):
            begun = time.time()
            transaction.begin()
            try:
                site = fresh_site(app)
                # a retry is the same request again: the same choices (past
                # the draw of the action), applied to the state of the moment
                tx_rng = random.Random(seed)
                tx_rng.random()
                folder, path = operate(
                    site, action, tx_rng, f"w{index}t{t}n{n}", config["hold"] if n == 0 else 0.0
                )
                transaction.commit()
            except ConflictError as error:
                transaction.abort()
                conflicts[action] += 1
                source = conflict_source(error)
                sources[source] += 1
                if action == "slow edit":
                    event = {"kind": action, "folder": RACE_FOLDER, "source": source}
                    events.append({**event, "begun": begun, "ended": time.time()})
                if n == RETRIES:
                    given_up[action] += 1
                continue
            except Exception as error:  # the user's error page; counted, never hidden
                transaction.abort()
                errors.append(f"{action}: {type(error).__name__}: {error}")
                break
            if action in ("slow edit", "share"):
                events.append(
                    {"kind": action, "folder": folder, "begun": begun, "ended": time.time(), "source": None}
                )
                differing = race_check(app, path) if path is not None else None
                if differing is not None:
                    checks += 1
                    if differing:
                        lost.append({"path": path, "after": action, "differing": differing})
            break
    seconds = time.perf_counter() - started
    return {
        "worker": index,
        "seconds": seconds,
        "runs": dict(runs),
        "conflicts": dict(conflicts),
        "given_up": dict(given_up),
        "sources": dict(sources),
        "errors": errors,
        "events": events,
        "race_checks": checks,
        "race_lost": lost,
    }


def walk(container):
    """The content below *container*, as the mix creates it."""
    for obj in container.objectValues():
        if getattr(obj, "portal_type", None) in ("Folder", "Document"):
            yield obj
            yield from walk(obj)


def records(catalog) -> dict[str, dict]:
    """Every record, by path (the indexing queue processed first: Plone's
    ``clearFindAndRebuild`` catalogs through it)."""
    from Products.CMFCore.indexing import processQueue

    processQueue()
    return {brain.getPath(): record(catalog, brain.getPath()) for brain in catalog.getAllBrains()}


SORTED_JSON = """CASE jsonb_typeof({x})
  WHEN 'array' THEN (SELECT jsonb_agg(e ORDER BY e) FROM jsonb_array_elements({x}) AS e)
  WHEN 'object' THEN (SELECT jsonb_object_agg(k, CASE WHEN jsonb_typeof(v) = 'array'
    THEN (SELECT jsonb_agg(e ORDER BY e) FROM jsonb_array_elements(v) AS e) ELSE v END)
    FROM jsonb_each({x}) AS t(k, v))
  ELSE {x} END"""


def stale_columns(site, paths: list[str]) -> dict[str, int]:
    """Which columns of the rows verify found stale differ from a fresh
    extraction, and whether only in the order of a list ("order only"):
    so that a report says what is stale, not just that something is."""
    from plone.pgcatalog import row
    from plone.pgcatalog.database import read
    from plone.pgcatalog.extraction import catalog_row

    import orjson

    catalog = site.portal_catalog
    fresh = []
    for path in paths:
        obj = site.unrestrictedTraverse(path)
        fresh.append(row.record(catalog.getrid(path), catalog_row(catalog, obj, path)))
    columns = [c for c in row.COLUMNS if c.overlaid]
    tests = []
    for c in columns:
        exact = f"o.{c.name} IS DISTINCT FROM p.{c.name}"
        if c.sql_type == "jsonb":
            unordered = (
                SORTED_JSON.format(x=f"o.{c.name}")
                + " IS DISTINCT FROM "
                + SORTED_JSON.format(x=f"p.{c.name}")
            )
            tests.append(f"CASE WHEN {unordered} THEN 'differs' WHEN {exact} THEN 'order only' END")
        else:
            tests.append(f"CASE WHEN {exact} THEN 'differs' END")
    found = read(
        catalog,
        f"SELECT {', '.join(tests)} FROM jsonb_to_recordset(%s::jsonb) AS p({row.record_columns_sql()}) "
        "JOIN object_state o ON o.zoid = p.zoid",
        [orjson.dumps(fresh).decode()],
    )
    counts = collections.Counter()
    for result in found:
        for column, verdict in zip(columns, result, strict=True):
            if verdict:
                counts[f"{column.name}: {verdict}"] += 1
    return dict(counts)


def check(config: dict) -> dict:
    """The catalog against the content: verify (pgcatalog), then the
    records before and after ``clearFindAndRebuild``."""
    import transaction
    import zopesite

    app = zopesite.start_zope(Path(config["home"]) / "zope.conf")
    site = fresh_site(app)
    catalog = site.portal_catalog
    result: dict[str, Any] = {}
    if config["backend"] == "pgcatalog":
        from plone.pgcatalog.verify import verify

        report = verify(catalog)
        result["verify"] = {**report.counts(), "ok": report.ok, "summary": report.summary()}
        log(report.summary())
        if report.stale:
            result["verify"]["stale_columns"] = stale_columns(site, report.stale)
    before = records(catalog)
    walked = {"/".join(site.getPhysicalPath())} | {"/".join(o.getPhysicalPath()) for o in walk(site)}
    catalog.clearFindAndRebuild()
    after = records(catalog)
    transaction.abort()
    stale = sorted(path for path in set(before) & set(after) if before[path] != after[path])
    result.update(
        records=len(before),
        content=len(walked),
        lost=sorted(set(after) - set(before)),
        phantom=sorted(set(before) - set(after)),
        stale=stale,
        stale_examples={
            path: {
                key: [repr(before[path].get(key)), repr(after[path].get(key))]
                for key in sorted(set(before[path]) | set(after[path]))
                if before[path].get(key) != after[path].get(key)
            }
            for path in stale[:10]
        },
        # the rebuild's records are the content the mix made
        not_rebuilt=sorted(walked - set(after)),
        rebuilt_beyond=sorted(set(after) - walked),
    )
    return result


def setup(config: dict) -> dict:
    import zopesite

    home = Path(config["home"])
    app = zopesite.start_zope(zopesite.write_config(config["backend"], home, config["dsn"]))
    started = time.perf_counter()
    site = zopesite.create_site(app, config["backend"])
    build(site)
    return {"seconds": time.perf_counter() - started}


# -- the driver ------------------------------------------------------------------------


def spawn(
    role: str, config_file: Path, out: Path, index: int = 0, script: str = __file__
) -> subprocess.Popen:
    """Run *script* (this one unless given: another benchmark with the same
    ``--role`` convention) as a process playing *role*."""
    command = [
        sys.executable,
        str(Path(script).resolve()),
        "--role",
        role,
        str(index),
        str(config_file),
        str(out),
    ]
    return subprocess.Popen(command, cwd=HERE)


def run_role(role: str, config_file: Path, out: Path) -> dict:
    if spawn(role, config_file, out).wait() != 0:
        raise RuntimeError(f"{role} failed")
    return json.loads(out.read_text())


def run_workers(config: dict, config_file: Path) -> list[dict]:
    """Start every worker; once all have started Zope, let them go together."""
    home = Path(config["home"])
    outs = [home / f"worker-{i}.json" for i in range(config["workers"])]
    processes = [spawn("worker", config_file, out, i) for i, out in enumerate(outs)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not all((home / f"ready-{i}").exists() for i in range(config["workers"])):
            if any(p.poll() is not None for p in processes) or time.monotonic() > deadline:
                raise RuntimeError("a worker did not start")
            time.sleep(0.2)
        log(f"{config['backend']}: {config['workers']} workers started, go")
        (home / "go").touch()
        for process in processes:
            if process.wait() != 0:
                raise RuntimeError("a worker failed")
    finally:
        for process in processes:  # ours, by their Popen objects
            if process.poll() is None:
                process.kill()
                process.wait()
    return [json.loads(out.read_text()) for out in outs]


def races(workers: list[dict]) -> dict:
    """Slow-edit attempts during which another worker committed a share of
    the race folder (by wall clock: the share's commit returned between
    the attempt's begin and its end), and how they ended."""
    shares = [
        (w["worker"], e["ended"])
        for w in workers
        for e in w["events"]
        if e["kind"] == "share" and e["folder"] == RACE_FOLDER
    ]
    found = collections.Counter()
    for w in workers:
        for e in w["events"]:
            if e["kind"] != "slow edit":
                continue
            found["attempts"] += 1
            if any(other != w["worker"] and e["begun"] < done < e["ended"] for other, done in shares):
                found["raced by a share"] += 1
                found["raced, then " + ("committed" if e["source"] is None else "conflict")] += 1
    return dict(found)


def summarise(workers: list[dict], checked: dict) -> dict:
    def total(key: str) -> int:
        return sum(sum(w[key].values()) for w in workers)

    run = total("runs")
    conflicts, given_up = total("conflicts"), total("given_up")
    errors = sum(len(w["errors"]) for w in workers)
    committed = run - given_up - errors
    seconds = max(w["seconds"] for w in workers)
    by_action = {
        name: {
            "run": sum(w["runs"].get(name, 0) for w in workers),
            "conflicts": sum(w["conflicts"].get(name, 0) for w in workers),
            "given_up": sum(w["given_up"].get(name, 0) for w in workers),
        }
        for name, _ in ACTIONS
    }
    sources = collections.Counter()
    for w in workers:
        sources.update(w["sources"])
    return {
        "workers": len(workers),
        "transactions": run,
        "committed": committed,
        "given_up": given_up,
        "errors": errors,
        "conflicts": conflicts,
        "retries": conflicts - given_up,  # every conflict is retried but a give-up's last
        "conflicts_per_1000": 1000.0 * conflicts / run,
        "retries_per_1000": 1000.0 * (conflicts - given_up) / run,
        "seconds": seconds,
        "txn_per_s": committed / seconds,
        "by_action": by_action,
        "sources": dict(sources.most_common()),
        "races": races(workers),
        "race_checks": sum(w["race_checks"] for w in workers),
        "race_lost": [lost for w in workers for lost in w["race_lost"]],
        "lost": len(checked["lost"]),
        "phantom": len(checked["phantom"]),
        "stale": len(checked["stale"]),
        "walk_mismatch": len(checked["not_rebuilt"]) + len(checked["rebuilt_beyond"]),
    }


def run_backend(backend: str, server_dsn: str, settings: dict) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-editors-{backend}-"))
    try:
        with contextlib.ExitStack() as stack:
            dsn = stack.enter_context(fresh_database(server_dsn, backend))
            config = {**settings, "backend": backend, "dsn": dsn, "home": str(home)}
            config_file = home / "config.json"
            config_file.write_text(json.dumps(config))
            built = run_role("setup", config_file, home / "setup.json")
            log(f"{backend}: site built in {built['seconds']:.1f}s")
            workers = run_workers(config, config_file)
            log(f"{backend}: workers done, checking the catalog against the content")
            checked = run_role("check", config_file, home / "check.json")
            summary = {**summarise(workers, checked), "setup_seconds": built["seconds"]}
            return {"summary": summary, "check": checked, "workers": workers}
    finally:
        shutil.rmtree(home, ignore_errors=True)


TABLE = (
    ("workers", "workers", "{}"),
    ("transactions run", "transactions", "{:,}"),
    ("committed", "committed", "{:,}"),
    ("given up", "given_up", "{}"),
    ("other errors", "errors", "{}"),
    ("conflicts", "conflicts", "{}"),
    ("conflicts per 1,000", "conflicts_per_1000", "{:.1f}"),
    ("retries per 1,000", "retries_per_1000", "{:.1f}"),
    ("throughput (txn/s)", "txn_per_s", "{:.1f}"),
    ("wall time (s)", "seconds", "{:.0f}"),
    ("slow edits raced by a share", None, None),
    ("race checks / lost updates", None, None),
    ("lost / phantom / stale", None, None),
)


def table(backends: dict[str, dict]) -> str:
    """The Markdown table: one column per backend."""
    lines = ["| | " + " | ".join(backends) + " |", "|---|" + "---:|" * len(backends)]
    for label, key, fmt in TABLE:
        cells = []
        for result in backends.values():
            s = result["summary"]
            if key is not None:
                cells.append(fmt.format(s[key]))
            elif label.startswith("slow"):
                r = s["races"]
                cells.append(f"{r.get('raced by a share', 0)} of {r.get('attempts', 0)} attempts")
            elif label.startswith("race"):
                cells.append(f"{s['race_checks']} / {len(s['race_lost'])}")
            else:
                cells.append(f"{s['lost']} / {s['phantom']} / {s['stale']}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--transactions", type=int, default=250, help="per worker")
    parser.add_argument("--hold", type=float, default=0.2, help="seconds a slow edit holds its transaction")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["pgcatalog", "relstorage"])
    parser.add_argument("--role", nargs=4, metavar=("ROLE", "INDEX", "CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        role, index, config_file, out = args.role
        config = json.loads(Path(config_file).read_text())
        if role == "worker":
            result = worker(config, int(index))
        else:
            result = {"setup": setup, "check": check}[role](config)
        Path(out).write_text(json.dumps(result, default=repr))
        return 0
    settings = {
        "workers": args.workers,
        "transactions": args.transactions,
        "hold": args.hold,
        "seed": args.seed,
    }
    results: dict[str, Any] = {"python": platform.python_version(), "settings": settings, "backends": {}}
    started = time.perf_counter()
    with pg_server() as server_dsn:
        results["postgresql"] = server_version(server_dsn)
        for backend in args.backends:
            results["backends"][backend] = run_backend(backend, server_dsn, settings)
    results["seconds"] = time.perf_counter() - started
    for backend, result in results["backends"].items():
        s = result["summary"]
        print(f"\n{backend}: conflicts by action {json.dumps(s['by_action'])}")
        print(f"{backend}: conflicts by source {json.dumps(s['sources'])}")
        print(f"{backend}: races {json.dumps(s['races'])}")
        if "verify" in result["check"]:
            print(f"{backend}: verify: {result['check']['verify']['summary']}")
        for key in ("lost", "phantom", "stale", "not_rebuilt", "rebuilt_beyond"):
            if result["check"][key]:
                print(f"{backend}: {key}: {result['check'][key][:10]}")
        if result["check"]["stale_examples"]:
            print(f"{backend}: stale examples {json.dumps(result['check']['stale_examples'], indent=1)}")
        for w in result["workers"]:
            for error in w["errors"]:
                print(f"{backend}: worker {w['worker']}: {error}")
        if s["race_lost"]:
            print(f"{backend}: lost updates seen after a race: {json.dumps(s['race_lost'], indent=1)}")
    print(
        f"\n{args.workers} workers x {args.transactions} transactions, hold {args.hold}s, seed {args.seed}\n"
    )
    print(table(results["backends"]))
    out = HERE / "results" / f"editors-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=repr))
    print(f"\nResults: {out} ({results['seconds']:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A catalog of a million rows, and what it costs to search it.

    .venv/bin/python benchmarks/million.py --database pgcatalog_bench_1m --rows 1000000 [--real 5000]
    .venv/bin/python benchmarks/million.py --database pgcatalog_bench_1m --measure [--iterations 30]

Building: the kept site of ``kept.py`` grown to ``--real`` Documents
through Plone (``invokeFactory`` and the workflow, 200 per commit); then,
because a million through Plone would take about a day on two cores
(850 a minute), *bulk rows* up to ``--rows`` catalog rows.  A bulk row is
written by the catalog's own writer: the catalog row that ``extraction``
makes of a Document (or, every 50 Documents, of its Folder) created in
memory with the benchmark's content (``workload.doc_spec``: title,
description, subjects, workflow state and its permissions, dates; its
description ends in five words of every frequency, ``vocabulary.py``), put in
its folder's acquisition context but never stored, written by
``processor.write_full_rows`` over an ``object_state`` row that holds no
ZODB state (``class_name`` ``BulkRow``).  Searches find bulk rows as any
other; their brains' metadata is real, but ``getObject()`` finds nothing.
Run again, it carries on where it stopped.  Before it ends it vacuums and
analyzes the database, once.  ``--numbers A:B`` writes the bulk Documents
numbered A to B-1 only (no vacuum): several processes, a range each, use
both cores; then a run without it tops the rows up and vacuums.

Measuring: the six seed scenarios (``workload.scenarios``) p50 / p95 /
median, bare and as a listing page, each search after an untimed write
committed from another thread (``--writes thread``; a busy site's
database, no VACUUM between); their SQL alone (the floor) with its plans
(``<results>.<rows>.explain.txt``); and the size on disk of the catalog's
columns and of its indexes.
"""

from __future__ import annotations

from kept import kept_dsn
from kept import kept_site
from kept import vacuum
from kept import with_objects
from pathlib import Path
from plone.indexer import indexer
from vocabulary import drawn
from workload import DOCS_PER_FOLDER
from workload import doc_spec
from zope.interface import alsoProvides
from zope.interface import Interface

import argparse
import json
import sys
import time
import uuid


HERE = Path(__file__).resolve().parent
BATCH = 2000
"""Bulk Documents per commit."""

BULK_CLASS = ("plone.pgcatalog.bulk", "BulkRow")
"""What ``object_state`` says a bulk row's object is (it has no state)."""


def catalog_rows(dsn: str) -> tuple[int, int]:
    """(catalog rows, Documents among them)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE idx->>'portal_type' = 'Document') "
            "FROM object_state WHERE idx IS NOT NULL"
        ).fetchone()


class IInMemory(Interface):
    """Content made in memory: its container does not hold it, so its
    position in it is its own (``bulk_position``)."""


@indexer(IInMemory)
def bulk_position(obj) -> int:
    return obj.bulk_position


def in_memory(site, portal_type: str, id: str, container, position: int, **fields):
    """Content of *portal_type* made in memory in *container*'s context at
    *position*: never added, no event, its workflow state set by hand."""
    from plone.dexterity.utils import createContent
    from plone.uuid.interfaces import ATTRIBUTE_NAME

    obj = createContent(portal_type, id=id, **fields)
    alsoProvides(obj, IInMemory)
    obj.bulk_position = position
    setattr(obj, ATTRIBUTE_NAME, uuid.uuid4().hex)
    obj.manage_setLocalRoles("admin", ["Owner"])
    obj.creators = ("admin",)
    return obj.__of__(container)


def set_state(site, obj, state: str) -> None:
    """*obj*'s workflow state, and the permissions that state gives."""
    from DateTime import DateTime

    tool = site.portal_workflow
    (chain,) = tool.getChainFor(obj)[:1]
    status = {"review_state": state, "action": None, "actor": "admin", "time": DateTime(), "comments": ""}
    tool.setStatusOf(chain, obj, status)
    tool[chain].updateRoleMappingsFor(obj)


def bulk_row(site, tool, spec, folders: dict):
    """The catalog row of the Document of *spec*, made in memory (in its
    folder, which *folders* keeps when it is made in memory too)."""
    from plone.pgcatalog.extraction import catalog_row
    from zopesite import BASE_DATE

    folder = folders.get(spec.folder)
    if folder is None:
        folder = site.get(spec.folder)
        if folder is None:
            folders.clear()
            folder = folders[spec.folder] = in_memory(site, "Folder", spec.folder, site, 0)
    position = spec.number % DOCS_PER_FOLDER
    # and words of every frequency (vocabulary.py): the workload's are all frequent
    description = " ".join([spec.description, *(word for _, word in drawn(spec.number))])
    doc = in_memory(site, "Document", spec.id, folder, position, title=spec.title, description=description)
    doc.setSubject(spec.subjects)
    effective = BASE_DATE + spec.effective_day
    doc.setEffectiveDate(effective)
    doc.creation_date = effective
    doc.setModificationDate(BASE_DATE + spec.modified_day)
    set_state(site, doc, spec.state)
    return catalog_row(tool, doc, "/".join(doc.getPhysicalPath()))


def bulk_folder_row(site, tool, name: str, position: int):
    """The catalog row of a section Folder (published), made in memory."""
    from plone.pgcatalog.extraction import catalog_row

    folder = in_memory(site, "Folder", name, site, position, title=f"Section {name.split('-')[-1]}")
    set_state(site, folder, "published")
    return catalog_row(tool, folder, "/".join(folder.getPhysicalPath()))


def write_bulk(conn, made: list) -> None:
    """One committed transaction of bulk rows *made* (catalog rows)."""
    from plone.pgcatalog.processor import write_full_rows
    from plone.pgcatalog.schema import BUMP_COUNTER
    from plone.pgcatalog.schema import NOTE_EVERYTHING

    with conn.transaction():
        zoids = [z for (z,) in conn.execute(
            "SELECT nextval('zoid_seq') FROM generate_series(1, %s)", [len(made)]
        )]  # fmt: skip
        conn.execute(
            "INSERT INTO object_state (zoid, tid, class_mod, class_name, state_size) "
            "SELECT z, (SELECT max(tid) FROM transaction_log), %s, %s, 0 FROM unnest(%s::bigint[]) z",
            [*BULK_CLASS, zoids],
        )
        conn.execute(NOTE_EVERYTHING)
        with conn.cursor() as cursor:
            write_full_rows(cursor, list(zip(zoids, made, strict=True)))
        conn.execute(BUMP_COUNTER)


def grow_bulk(worker, target: int, numbers: range | None = None) -> dict:
    """Bulk rows until the database holds *target* catalog rows; or, with
    *numbers*, the bulk Documents of those numbers (and their folders),
    so that several processes can write a range each."""
    from Products.ZCatalog.interfaces import IZCatalog
    from zope.component import provideAdapter

    import psycopg
    import psycopg.errors
    import transaction

    provideAdapter(bulk_position, (IInMemory, IZCatalog), name="getObjPositionInParent")
    dsn, site, tool = worker.config["dsn"], worker.site, worker.catalog
    rows, documents = catalog_rows(dsn)
    if numbers is not None:
        documents, target = numbers.start, rows + (numbers.stop - numbers.start) * 2
    started, written = time.perf_counter(), 0
    with psycopg.connect(dsn, autocommit=True) as conn:  # a commit per batch
        folders: dict = {}
        while rows < target and (numbers is None or documents < numbers.stop):
            stop = documents + min(BATCH, target - rows)
            batch = range(documents, stop if numbers is None else min(stop, numbers.stop))
            made = []
            for number in batch:
                spec = doc_spec(number)
                if number % DOCS_PER_FOLDER == 0 and not site.hasObject(spec.folder):
                    # after the site's own items (a few), in the order of the folders
                    position = 20 + number // DOCS_PER_FOLDER
                    made.append(bulk_folder_row(site, tool, spec.folder, position))
                made.append(bulk_row(site, tool, spec, folders))
            transaction.abort()  # nothing of it is stored in ZODB
            for attempt in range(10):
                try:
                    write_bulk(conn, made)
                    break
                except psycopg.errors.DeadlockDetected:
                    # (two writers adding the same new words to the lexicon)
                    print(f"deadlock, batch written again ({attempt + 1})", flush=True)
            else:
                raise RuntimeError("a batch deadlocked ten times")
            rows += len(made)
            documents += len(batch)
            written += len(made)
            if written % (BATCH * 25) < BATCH:
                rate = written / (time.perf_counter() - started)
                print(f"{rows} catalog rows ({documents} Documents), {rate:.0f} bulk rows/s", flush=True)
    seconds = time.perf_counter() - started
    return {
        "bulk_rows": written,
        "seconds": round(seconds, 1),
        "rows_per_s": round(written / max(seconds, 1e-9)),
    }


SIZES = """\
SELECT
  (SELECT count(*) FROM object_state WHERE idx IS NOT NULL) AS catalog_rows,
  (SELECT count(*) FROM object_state WHERE idx IS NOT NULL AND class_name = 'BulkRow') AS bulk_rows,
  (SELECT sum({columns}) FROM object_state) AS column_bytes,
  (SELECT sum(pg_column_size(state)) FROM object_state) AS state_bytes,
  pg_table_size('object_state') AS table_bytes,
  (SELECT sum(pg_relation_size(indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE indrelid = 'object_state'::regclass AND c.relname LIKE 'pgcatalog%') AS catalog_index_bytes,
  (SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = 'object_state'::regclass)
    AS all_index_bytes,
  pg_database_size(current_database()) AS database_bytes
"""


def sizes(dsn: str) -> dict:
    """The size on disk of the catalog's columns and indexes."""
    import psycopg

    from plone.pgcatalog.row import column_names

    columns = " + ".join(f"coalesce(pg_column_size({name}), 0)" for name in column_names())
    with psycopg.connect(dsn) as conn:
        cursor = conn.execute(SIZES.format(columns=columns))
        found = dict(zip([d.name for d in cursor.description], cursor.fetchone(), strict=True))
        indexes = conn.execute(
            "SELECT c.relname, pg_relation_size(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE indrelid = 'object_state'::regclass ORDER BY 2 DESC"
        ).fetchall()
    found["indexes"] = dict(indexes)
    return found


def measure(worker, iterations: int, writes: str | None) -> dict:
    """The scenarios; the writes between them edit Documents made through
    Plone (bulk rows have no object to edit)."""
    worker.docs = with_objects(worker.site, worker.docs)
    worker.config.update(iterations=iterations, warmup=max(3, iterations // 10))
    worker.settle()
    return worker.query_phase(writes=writes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000, help="catalog rows to reach")
    parser.add_argument("--real", type=int, default=5000, help="Documents made through Plone")
    parser.add_argument(
        "--numbers", help="A:B: write the bulk Documents numbered A to B-1 (one of several processes)"
    )
    parser.add_argument("--measure", action="store_true", help="measure the site as it is")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--writes", choices=["thread", "none"], default="thread")
    args = parser.parse_args(argv)
    dsn = kept_dsn(args.database)
    with kept_site(dsn) as worker:
        if not args.measure:
            if args.numbers:
                first, last = (int(n) for n in args.numbers.split(":"))
                print(json.dumps(grow_bulk(worker, args.rows, range(first, last))))
                return 0
            grown = worker.grow_to(args.real)
            bulk = grow_bulk(worker, args.rows)
            vacuum(dsn)
            print(json.dumps({"through_plone": grown, "bulk": bulk, "sizes": sizes(dsn)}, default=str))
            return 0
        result = {
            "database": args.database,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "sizes": sizes(dsn),
            "writes": args.writes,
            "timings": measure(worker, args.iterations, None if args.writes == "none" else args.writes),
        }
        out = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-million.json"
        # the SQL alone, and its plans (EXPLAIN ANALYZE, BUFFERS) beside the results
        worker.config.update(profile=True, out=str(out))
        result["floor"] = worker.floor_phase(result["sizes"]["catalog_rows"])
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str))
        for name, timing in result["timings"].items():
            if isinstance(timing, dict) and "bare" in timing:
                bare, listing = timing["bare"], timing["listing"]
                print(f"{name:12} bare p50 {bare['median']:.2f} p95 {bare.get('p95', 0):.2f}  "
                      f"listing p50 {listing['median']:.2f} p95 {listing.get('p95', 0):.2f} ms")  # fmt: skip
        print(f"Results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

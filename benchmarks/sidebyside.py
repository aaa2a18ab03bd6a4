"""The frame of the benchmarks that time the same thing on several
backends, each in a process of its own on a fresh database (``globs.py``,
``facets.py``): the command line, a worker process per backend, the
results file and the table."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from database import fresh_database
from database import pg_server
from pathlib import Path

import argparse
import contextlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time


HERE = Path(__file__).resolve().parent

# measure(backend, dsn, docs, iterations, kept) -> results by size, in the
# worker; *kept*: the site in the database is kept.py's, measured at its size
Measure = Callable[[str, "str | None", list[int], int, bool], dict]


def main(
    script: str,
    doc: str,
    measure: Measure,
    table: Callable[[dict], str],
    extra: dict,
    docs: list[int],
    iterations: int,
    argv: list[str] | None = None,
) -> int:
    """The command line of benchmark *script* (its ``__file__`` and
    ``__doc__``): run as a worker, *measure* one backend; else run a worker
    for each backend asked, write ``results/<stamp>-<script>.json`` (with
    *extra*) and print *table* of the results.  *docs* and *iterations*
    are the defaults."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        backend, dsn, sizes, times, kept, out = argv[1:]
        found = measure(backend, json.loads(dsn), json.loads(sizes), int(times), kept == "kept")
        Path(out).write_text(json.dumps(found))
        return 0
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=docs)
    parser.add_argument("--backends", nargs="+", default=["pgcatalog", "relstorage"])
    parser.add_argument("--iterations", type=int, default=iterations)
    parser.add_argument("--kept", metavar="DATABASE", help="plone.pgcatalog alone, on kept.py's site in DATABASE")
    args = parser.parse_args(argv)
    results = {}
    if args.kept:
        from kept import kept_dsn

        results["pgcatalog"] = _run(script, "pgcatalog", kept_dsn(args.kept), [], args.iterations, kept=True)
    else:
        with pg_server() as server:
            for backend in args.backends:
                results[backend] = _run(script, backend, server, args.docs, args.iterations)
    name = Path(script).stem
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-{name}.json"
    path.write_text(json.dumps({"docs": args.docs, **extra, "results": results}, indent=1))
    print(table(results))
    print(f"results: {path}", file=sys.stderr)
    return 0


def _run(script: str, backend: str, server: str, docs: list[int], iterations: int, kept: bool = False) -> dict:
    """*script*'s measure for *backend* in a subprocess, on a fresh
    database (FileStorage needs none), or on the *kept* site of the
    database *server* names."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        if kept:
            database = contextlib.nullcontext(server)
        elif backend != "filestorage":
            database = fresh_database(server, backend)
        else:
            database = contextlib.nullcontext()
        with database as dsn:
            args = [backend, json.dumps(dsn), json.dumps(docs), str(iterations), "kept" if kept else "fresh", str(out)]
            subprocess.run([sys.executable, script, "--worker", *args], check=True, cwd=HERE)
        return json.loads(out.read_text())


def grown(backend: str, dsn: str | None, docs: list[int], kept: bool) -> Iterator:
    """In a measure's process: *backend*'s site built on *dsn* (or the
    *kept* one opened, at its size), grown to each size of *docs* in turn:
    ``(worker, size)`` once each is settled."""
    from worker import Worker

    logging.disable(logging.CRITICAL)
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-{backend}-"))
    try:
        vacuum = "none" if kept else "each"  # a kept site is as kept.py left it
        worker = Worker({"backend": backend, "dsn": dsn, "home": str(home), "vacuum": vacuum, "kept": kept})
        worker.build()
        for size in worker.sizes(docs):
            worker.grow_to(size)
            worker.settle()
            yield worker, size
    finally:
        shutil.rmtree(home, ignore_errors=True)

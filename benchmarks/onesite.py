"""The frame of the benchmarks that time plone.pgcatalog alone on one site
(``suggestions.py``, ``snippets.py``): the command line, the site (on a
fresh database, grown to each size of ``--docs``; or ``kept.py``'s site
with ``--kept DATABASE``, at its size), the results file and the table."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from database import fresh_database
from database import pg_server
from pathlib import Path
from typing import Any

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time


HERE = Path(__file__).resolve().parent


def main(
    script: str,
    doc: str,
    measure: Callable[[Any, int], dict],
    table: Callable[[dict], str],
    extra: dict,
    iterations: int,
    prepare: Callable[[Any], None] | None = None,
    argv: list[str] | None = None,
) -> int:
    """The command line of benchmark *script* (its ``__file__`` and
    ``__doc__``): *prepare* the site (a :class:`worker.Worker`'s), then at
    each size ``results[size] = measure(worker, iterations)``; write
    ``results/<stamp>-<script>.json`` (with *extra*) and print *table*."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[20000])
    parser.add_argument("--iterations", type=int, default=iterations)
    parser.add_argument("--kept", metavar="DATABASE", help="measure kept.py's site in DATABASE")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.disable(logging.CRITICAL)
    results: dict = {}
    with _site(args.kept) as worker:
        if prepare is not None:
            prepare(worker)
        for size in worker.sizes(args.docs):
            worker.grow_to(size)
            worker.settle()
            results[str(size)] = measure(worker, args.iterations)
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(script).stem}.json"
    path.write_text(json.dumps({"docs": [int(size) for size in results], **extra, "results": results}, indent=1))
    print(table(results))
    print(f"results: {path}", file=sys.stderr)
    return 0


@contextmanager
def _site(kept: str | None) -> Iterator[Any]:
    """A worker on *kept*'s site, or on a new one on a fresh database."""
    import transaction
    import zopesite

    if kept:
        from kept import kept_dsn
        from kept import kept_site

        with kept_site(kept_dsn(kept)) as worker:
            yield worker
        return
    from worker import Worker

    home = Path(tempfile.mkdtemp(prefix="pgcatalog-onesite-"))
    try:
        with pg_server() as server, fresh_database(server, "pgcatalog") as dsn:
            worker = Worker({"backend": "pgcatalog", "dsn": dsn, "home": str(home), "vacuum": "each"})
            worker.build()
            yield worker
            zopesite.login(worker.app)
            transaction.abort()
            worker.app._p_jar.db().close()
    finally:
        shutil.rmtree(home, ignore_errors=True)

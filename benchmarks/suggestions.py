""""Did you mean": how long ``portal_catalog.suggestions`` takes.

    .venv/bin/python benchmarks/suggestions.py --docs 5000 20000

A plone.pgcatalog site of the benchmark's documents on a fresh database
(as ``run.py``), then each text of :data:`TYPED` (misspellings of the
site's words) as Anonymous and as the site's admin, each run in a new
transaction: medians and p90 in ms, with what was suggested.  ZCatalog
has no such call to compare with.  Written to
``benchmarks/results/<stamp>-suggestions.json``.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from pathlib import Path

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time


HERE = Path(__file__).resolve().parent

TYPED = ("postgress", "reserch", "budgett planing", "stratgy", "conferense")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[20000])
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args(argv)
    from AccessControl.SecurityManagement import noSecurityManager
    from measure import time_repeated
    from worker import Worker

    import transaction
    import zopesite

    logging.disable(logging.CRITICAL)
    results: dict = {}
    home = Path(tempfile.mkdtemp(prefix="pgcatalog-suggestions-"))
    try:
        with pg_server() as server, fresh_database(server, "pgcatalog") as dsn:
            worker = Worker({"backend": "pgcatalog", "dsn": dsn, "home": str(home), "vacuum": "each"})
            worker.build()
            for size in sorted(args.docs):
                worker.grow_to(size)
                worker.settle()
                timings = results[str(size)] = {}
                for who in ("Anonymous", "admin"):
                    for text in TYPED:
                        transaction.abort()
                        noSecurityManager() if who == "Anonymous" else zopesite.login(worker.app)

                        def suggest(text=text):
                            return worker.catalog.suggestions(SearchableText=text)

                        timed = time_repeated(suggest, transaction.abort, args.iterations, 3)
                        timings[f"{who}: {text}"] = {
                            "median": round(timed["median"], 2),
                            "p90": round(timed["p90"], 2),
                            "suggested": suggest(),
                        }
                        print(f"[{size}] {who}: {text}: {timings[f'{who}: {text}']}", file=sys.stderr, flush=True)
            zopesite.login(worker.app)
            transaction.abort()
            worker.app._p_jar.db().close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-suggestions.json"
    path.write_text(json.dumps({"docs": args.docs, "typed": TYPED, "results": results}, indent=1))
    for size, timings in results.items():
        for name, found in timings.items():
            print(f"| {size} | {name} | {found['median']:.2f} / {found['p90']:.2f} | {', '.join(found['suggested'][:3])} |")
    print(f"results: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

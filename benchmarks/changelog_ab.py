"""What the change log costs a write: logged and unlogged, interleaved on one site.

    .venv/bin/python benchmarks/changelog_ab.py --docs 2000 --iterations 200

Builds a plone.pgcatalog site (fresh database, as ``run.py``), then times
an editor's change (a new title and ``reindexObject()``, committed from a
thread of its own, as ``run.py --after-writes`` writes) alternately with
the catalog's note trigger as the schema makes it (each changed row
logged into ``pgcatalog_changes``, ``schema.CHANGE_LOG``) and the same
trigger without the log.  One process, one database, the two taking turns
ten writes at a time (the first writes after each swap untimed: the
function is compiled again and its statements planned, which a running
site does once per connection): what differs is the trigger, not the
machine's drift.
Prints and writes medians (ms) to
``benchmarks/results/<stamp>-changelog-ab.json``.
"""

from __future__ import annotations

from pathlib import Path
from publisher import written_site

import argparse
import json
import logging
import psycopg
import re
import statistics
import sys
import time


HERE = Path(__file__).resolve().parent
BLOCK = 10  # writes in a row with one function, after its warmup


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def note_functions() -> dict[str, str]:
    """The note trigger's function as the schema makes it, and without its
    log (the block that inserts into the log taken out)."""
    from plone.pgcatalog.schema import NOTE_CHANGES

    function = NOTE_CHANGES[: NOTE_CHANGES.index("END $$;") + len("END $$;")]
    block = re.compile(r"    IF COALESCE\(current_setting\('pgcatalog.unlogged'.*?\n    END IF;\n", re.S)
    unlogged, found = block.subn("", function)
    if found != 1:
        raise SystemExit("the note trigger's log block was not found: update this benchmark")
    return {"logged": function, "unlogged": unlogged}


def ab(docs: int, iterations: int, warmup: int) -> dict:
    from plone.pgcatalog.connection import storage_dsn

    logging.disable(logging.CRITICAL)
    functions = note_functions()
    out: dict = {"docs": docs, "iterations": iterations}
    with written_site(docs, "pgcatalog-changelog-ab-") as (worker, writer, _cycle):
        writes: dict = {"logged": [], "unlogged": []}
        with psycopg.connect(storage_dsn(worker.catalog), autocommit=True) as owner:
            for block in range(iterations // BLOCK):
                for turn in ("logged", "unlogged") if block % 2 else ("unlogged", "logged"):
                    owner.execute(functions[turn])
                    for i in range(warmup + BLOCK):
                        writer.write()
                        if i >= warmup:  # (the function compiled again, its statements planned)
                            writes[turn].append(writer.write_ms[-1])
            owner.execute(functions["logged"])
            out["log_rows"] = owner.execute("SELECT count(*) FROM pgcatalog_changes").fetchone()[0]
    out["write_ms"] = {turn: round(statistics.median(times), 2) for turn, times in writes.items()}
    out["write_p90_ms"] = {
        turn: round(statistics.quantiles(times, n=10)[-1], 2) for turn, times in writes.items()
    }
    log(f"{out}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=2, help="untimed writes after each swap")
    args = parser.parse_args(argv)
    result = ab(args.docs, args.iterations, args.warmup)
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-changelog-ab.json"
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    log(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

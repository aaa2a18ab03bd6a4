"""Moving and renaming a folder of 2,000 items, against stock ZCatalog.

OFS tells every object below a moved folder that it moved, and each one is
cataloged again.  This script builds, on each backend, a site with a
published folder ``section`` holding 40 folders of 49 Documents (2,000
items below it, each Document with a page of text), and times, each as one
transaction with its commit:

- **rename**: ``api.content.rename`` of ``section`` (and back);
- **move**: ``api.content.move`` of ``section`` from the published folder
  ``a`` into ``b``, its published sibling with the same local roles (and
  back);
- **move, other security**: from ``a`` into ``other``, where a user has a
  local role, so that ``allowedRolesAndUsers`` is computed again for every
  item below (and back).

    .venv/bin/python benchmarks/moves.py [--items 2000] [--repeat 5]
        [--backends pgcatalog relstorage]

PostgreSQL as in ``run.py`` (``PGCATALOG_BENCH_DSN`` or an embedded server).
Each backend runs in its own process, one after the other; compare within
one run.  Medians in milliseconds per operation.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from database import server_version
from pathlib import Path

import argparse
import contextlib
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


HERE = Path(__file__).parent
FOLDERS = 40
TEXT = " ".join(
    f"Paragraph {n} of the report on the annual meeting, the budget and the roadmap of the "
    f"regional office, with notes from the committee and the feedback of {n} members."
    for n in range(40)
)


def build(site, items: int) -> None:
    """``section`` (published) with *items* below it, and two targets."""
    from plone import api

    import transaction

    for name in ("a", "b", "other"):
        target = api.content.create(container=site, type="Folder", id=name, title=name.title())
        api.content.transition(obj=target, transition="publish")
    section = api.content.create(container=site["a"], type="Folder", id="section", title="Section")
    api.content.transition(obj=section, transition="publish")
    per_folder = items // FOLDERS - 1
    for f in range(FOLDERS):
        folder = api.content.create(container=section, type="Folder", id=f"f{f}", title=f"Folder {f}")
        api.content.transition(obj=folder, transition="publish")
        for d in range(per_folder):
            doc = api.content.create(
                container=folder,
                type="Document",
                id=f"d{d}",
                title=f"Document {f}-{d}",
                description="A document that moves with its section",
                text=f"<p>{TEXT}</p>",
            )
            if d % 3:
                api.content.transition(obj=doc, transition="publish")
        transaction.commit()
    api.user.create(email="reader@example.org", username="reader", password="secret-reader-1")
    site["other"].manage_setLocalRoles("reader", ["Reader"])
    site["other"].reindexObjectSecurity()
    transaction.commit()


def timed(fn) -> float:
    import transaction

    started = time.perf_counter()
    fn()
    transaction.commit()
    return (time.perf_counter() - started) * 1000.0


def worker(config: dict) -> dict:
    import zopesite

    from plone import api

    home = Path(config["home"])
    app = zopesite.start_zope(zopesite.write_config(config["backend"], home, config.get("dsn")))
    site = zopesite.create_site(app, config["backend"])
    build(site, config["items"])
    a = site["a"]
    below = len(api.content.find(path="/".join(a["section"].getPhysicalPath()))) - 1
    samples: dict[str, list[float]] = {"rename": [], "move": [], "move, other security": []}
    for _ in range(config["repeat"]):
        samples["rename"].append(timed(lambda: api.content.rename(obj=a["section"], new_id="renamed")))
        samples["rename"].append(timed(lambda: api.content.rename(obj=a["renamed"], new_id="section")))
        for label, target in (("move", "b"), ("move, other security", "other")):
            samples[label].append(
                timed(lambda t=target: api.content.move(source=a["section"], target=site[t]))
            )
            samples[label].append(
                timed(lambda t=target: api.content.move(source=site[t]["section"], target=a))
            )
    # after all the moves, the catalog still finds every item once
    found = len(api.content.find(path="/".join(a["section"].getPhysicalPath()))) - 1
    return {
        "backend": config["backend"],
        "items_below": below,
        "found_after": found,
        "ms": {label: statistics.median(values) for label, values in samples.items()},
        "samples": samples,
    }


def run_backend(backend: str, server_dsn: str, settings: dict) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-moves-{backend}-"))
    try:
        with contextlib.ExitStack() as stack:
            dsn = (
                None if backend == "filestorage" else stack.enter_context(fresh_database(server_dsn, backend))
            )
            config = {**settings, "backend": backend, "dsn": dsn, "home": str(home)}
            config_file = home / "config.json"
            config_file.write_text(json.dumps(config))
            out = home / "out.json"
            subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--worker", str(config_file), str(out)],
                check=True,
                cwd=HERE,
            )
            return json.loads(out.read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="round trips per operation")
    parser.add_argument("--backends", nargs="+", default=["pgcatalog", "relstorage"])
    parser.add_argument("--worker", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        result = worker(json.loads(Path(args.worker[0]).read_text()))
        Path(args.worker[1]).write_text(json.dumps(result))
        return 0
    settings = {"items": args.items, "repeat": args.repeat}
    results = {"python": platform.python_version(), "settings": settings, "backends": {}}
    with pg_server() as server_dsn:
        results["postgresql"] = server_version(server_dsn)
        for backend in args.backends:
            results["backends"][backend] = run_backend(backend, server_dsn, settings)
    print(json.dumps(results["backends"], indent=1))
    labels = list(next(iter(results["backends"].values()))["ms"])
    print(f"\n{args.items} items below the folder, median ms per operation (with its commit)")
    print("| operation | " + " | ".join(results["backends"]) + " |")
    for label in labels:
        cells = [f"{results['backends'][b]['ms'][label]:.0f}" for b in results["backends"]]
        print(f"| {label} | " + " | ".join(cells) + " |")
    out = HERE / "results" / f"moves-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"Results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

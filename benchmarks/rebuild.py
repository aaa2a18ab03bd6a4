"""``clearFindAndRebuild`` and install throughput on real content, in items a second.

    .venv/bin/python benchmarks/rebuild.py --database pgcatalog_bench_rebuild --docs 10000 [--runs 3] [--install]

The kept site of ``kept.py`` (Documents made through Plone, grown to
``--docs`` if smaller), then ``--runs`` rebuilds of the whole catalog,
each committed and timed, one after the other in this process (the first
loads every object from the database: *cold*; no VACUUM between).  With
``--install``, then the Add-ons panel's way round: uninstall (untimed:
a stock ZCatalog is filled), then install, timed, which replaces it and
catalogs every object again, committing every thousand.  Items: the
catalog's rows afterwards.  Writes ``results/<time>-rebuild.json``.
"""

from __future__ import annotations

from kept import kept_dsn
from kept import kept_site
from kept import vacuum
from pathlib import Path

import argparse
import json
import statistics
import sys
import time
import transaction


HERE = Path(__file__).resolve().parent


def reinstall(worker) -> float:
    """Uninstall plone.pgcatalog from the site, then install it again, as
    the Add-ons panel does; the seconds the install took, committed."""
    from plone.base.utils import get_installer

    installer = get_installer(worker.site, worker.site.REQUEST)
    if not installer.uninstall_product("plone.pgcatalog"):
        raise RuntimeError("uninstall failed")
    transaction.commit()
    started = time.perf_counter()
    if not installer.install_product("plone.pgcatalog"):
        raise RuntimeError("install failed")
    transaction.commit()
    seconds = time.perf_counter() - started
    worker.catalog = worker.site.portal_catalog
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--install", action="store_true", help="then uninstall and time an install")
    args = parser.parse_args(argv)
    dsn = kept_dsn(args.database)
    with kept_site(dsn) as worker:
        if worker.grow_to(args.docs):
            vacuum(dsn)
        runs = []
        for _ in range(args.runs):
            seconds = worker.rebuild()["seconds"]
            items = len(worker.catalog)
            runs.append({"seconds": round(seconds, 2), "items": items, "items_per_s": round(items / seconds)})
            print(
                f"clearFindAndRebuild: {items} items in {seconds:.1f} s, {items / seconds:.0f} items/s",
                flush=True,
            )
        result = {
            "database": args.database,
            "documents": worker.docs,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "runs": runs,
            "median_items_per_s": statistics.median(r["items_per_s"] for r in runs),
        }
        if args.install:
            seconds = reinstall(worker)
            items = len(worker.catalog)
            result["install"] = {
                "seconds": round(seconds, 2),
                "items": items,
                "items_per_s": round(items / seconds),
            }
            print(f"install: {items} items in {seconds:.1f} s, {items / seconds:.0f} items/s", flush=True)
        out = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-rebuild.json"
        out.write_text(json.dumps(result, indent=1))
        print(f"median {result['median_items_per_s']} items/s; results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

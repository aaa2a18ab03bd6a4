"""Benchmark plone.pgcatalog against stock ZCatalog, side by side.

    .venv/bin/python benchmarks/run.py            # quick mode (default)
    .venv/bin/python benchmarks/run.py --full     # 500 / 5,000 / 20,000 docs
    .venv/bin/python benchmarks/run.py --docs 500 1000 --backends pgcatalog relstorage

Each backend (plone.pgcatalog on zodb-pgjsonb, ZCatalog on RelStorage,
ZCatalog on FileStorage, and ``peer``: the published PyPI distribution
``plone-pgcatalog`` of other authors, same import name, from its own venv
``.venv-peer``) runs in its own process on a fresh database of
the server ``PGCATALOG_BENCH_DSN`` names (or of an embedded ``pgserver``).
The SQL floor is timed inside the pgcatalog process.  Results go to
``benchmarks/results/<timestamp>.json`` (and ``latest.json``); the report
to ``docs/benchmarks.md`` and ``docs/benchmarks/*.png``.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from database import server_version
from pathlib import Path

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
BACKENDS = ("pgcatalog", "relstorage", "filestorage", "peer")
DEFAULT_BACKENDS = ("pgcatalog", "relstorage", "filestorage")
# The peer: PyPI's plone-pgcatalog (bluedynamics), whose import name is ours
# too, so it runs from a venv of its own.  Plone as our constraints pin it;
# psycopg (for floor.py's table statistics) comes with it.
PEER_VENV = ROOT / ".venv-peer"
PEER_REQUIREMENTS = ("plone-pgcatalog==1.0.0rc9", "Products.CMFPlone", "plone.app.contenttypes", "setuptools")
# its process-wide query result cache, on (200 entries is its default)
PEER_ENV = {"PGCATALOG_QUERY_CACHE_SIZE": "200"}
MODES = {
    "quick": {"sizes": [500, 2000], "rebuild_at": 2000},
    "full": {"sizes": [500, 5000, 20000], "rebuild_at": 5000},
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick", dest="mode", action="store_const", const="quick", help="500 and 2,000 docs (default)"
    )
    mode.add_argument(
        "--full", dest="mode", action="store_const", const="full", help="500, 5,000 and 20,000 docs"
    )
    parser.set_defaults(mode="quick")
    parser.add_argument(
        "--docs", type=int, nargs="+", help="document counts to query at (overrides the mode)"
    )
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(DEFAULT_BACKENDS))
    parser.add_argument("--timed-docs", type=int, default=500, help="documents created one transaction each")
    parser.add_argument("--rebuild-at", type=int, help="time clearFindAndRebuild at this document count")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile pgcatalog's listings (results/*.prof.txt)"
    )
    parser.add_argument(
        "--after-writes",
        nargs="?",
        const="thread",
        choices=("thread", "same"),
        help="also time the queries with a committed document change before each one, "
        "from another thread's ZODB connection (default) or the same one",
    )
    parser.add_argument(
        "--first-in-request",
        action="store_true",
        help="also time the queries each as the first of a new request (publisher's begin and end)",
    )
    parser.add_argument(
        "--vacuum",
        choices=("each", "autovacuum", "settled"),
        default="each",
        help="before each query phase: VACUUM (ANALYZE) (default); nothing but the server's "
        "autovacuum; or two autovacuum naps' wait (the last two need autovacuum on)",
    )
    parser.add_argument("--no-report", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--report-only", type=Path, metavar="RESULTS_JSON", help="only render the report")
    return parser.parse_args(argv)


def peer_python() -> Path:
    """``.venv-peer``'s Python: the venv made (from this Python's base) and
    the peer installed into it with our constraints, when missing or when
    ``PEER_REQUIREMENTS`` or ``constraints.txt`` changed since."""
    python = PEER_VENV / "bin" / "python"
    stamp = PEER_VENV / ".peer-installed"
    constraints = ROOT / "constraints.txt"
    want = hashlib.sha256(constraints.read_bytes() + " ".join(PEER_REQUIREMENTS).encode()).hexdigest()
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    if not stamp.exists() or stamp.read_text() != want:
        print(f"Installing {PEER_REQUIREMENTS[0]} into {PEER_VENV.name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "-c", str(constraints), *PEER_REQUIREMENTS],
            check=True,
        )  # fmt: skip
        stamp.write_text(want)
        print(f"Installed in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    return python


def run_backend(
    backend: str, server_dsn: str, settings: dict, out: Path, python: str = sys.executable
) -> dict:
    """Run the worker for *backend* in a subprocess of *python* (``peer``:
    with its cache settings too); return its results."""
    home = Path(tempfile.mkdtemp(prefix=f"pgcatalog-bench-{backend}-"))
    try:
        with contextlib.ExitStack() as stack:
            dsn = None
            if backend != "filestorage":
                dsn = stack.enter_context(fresh_database(server_dsn, backend))
            config = {**settings, "backend": backend, "dsn": dsn, "home": str(home), "out": str(out)}
            config_file = home / "bench-config.json"
            config_file.write_text(json.dumps(config))
            started = time.perf_counter()
            env = {**os.environ, **PEER_ENV} if backend == "peer" else None
            subprocess.run([python, str(HERE / "worker.py"), str(config_file)], check=True, cwd=HERE, env=env)
            result = json.loads(out.read_text())
            result["wall_s"] = time.perf_counter() - started
            return result
    finally:
        shutil.rmtree(home, ignore_errors=True)


def git_commit() -> str:
    """HEAD's short hash, with ``+local`` when ``src/`` has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        local = subprocess.run(
            ["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+local" if local else "")


def run(args: argparse.Namespace) -> dict:
    mode = MODES[args.mode]
    sizes = sorted(args.docs or mode["sizes"])
    rebuild_at = args.rebuild_at or (mode["rebuild_at"] if not args.docs else sizes[-1])
    settings = {
        "sizes": sizes,
        "timed_docs": args.timed_docs,
        "rebuild_at": rebuild_at,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "profile": args.profile,
        "after_writes": args.after_writes,
        "first_in_request": args.first_in_request,
        "vacuum": args.vacuum,
    }
    stamp = time.strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    results: dict = {
        "meta": {
            "timestamp": stamp,
            "mode": "custom" if args.docs else args.mode,
            "settings": settings,
            "git_commit": git_commit(),
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        },
        "backends": {},
    }
    pythons = {}
    if "peer" in args.backends:
        pythons["peer"] = str(peer_python())
        results["meta"]["peer"] = PEER_REQUIREMENTS[0]
    started = time.perf_counter()
    with pg_server() as server_dsn:
        results["meta"]["postgresql"] = server_version(server_dsn)
        results["meta"]["server"] = (
            "PGCATALOG_BENCH_DSN" if os.environ.get("PGCATALOG_BENCH_DSN") else "pgserver"
        )
        for backend in args.backends:
            out = RESULTS / f"{stamp}-{backend}.json"
            results["backends"][backend] = run_backend(
                backend, server_dsn, settings, out, pythons.get(backend, sys.executable)
            )
            out.unlink()
    results["meta"]["wall_s"] = time.perf_counter() - started
    path = RESULTS / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"Results: {path.relative_to(ROOT)} ({results['meta']['wall_s'] / 60:.1f} min)")
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report_only:
        results = json.loads(args.report_only.read_text())
    else:
        results = run(args)
    import report

    if args.report_only or not args.no_report:
        report.write(results, ROOT / "docs")
        if not args.report_only:
            (RESULTS / "latest.json").write_text(json.dumps(results, indent=1))
        print("Report: docs/benchmarks.md")
    if "pgcatalog" in results["backends"]:  # the targets are pgcatalog's
        print(report.targets_text(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

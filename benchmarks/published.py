"""The published comparison's workload (``../shared/bench``), as this
project keeps and reports its runs.

    python3 benchmarks/published.py RUN_ALL.json OUT.json --settings "what ran, on which code"

``run_all.py`` writes every run of every backend whole (each timing's raw
samples too); a run stopped before its end leaves only the files of the
runs it finished (``<out>_runs/<backend>-run<n>.json``: give their
directory instead).  This keeps of each backend, at each size, each
query's ``len()``, the median of its runs' medians and the p95 of all its
samples, bare and as a listing, and the edits' medians: a file small
enough to commit.  :func:`sections` renders the newest condensed files of
each cache size for ``docs/benchmarks.md``.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import json
import statistics
import sys


RESULTS = Path(__file__).resolve().parent / "results"
PATTERN = "*-shared-bench-*.json"
QUERIES = {
    "simple": "simple (`portal_type`)",
    "complex": "complex (five indexes, sorted, limit 20)",
    "fulltext": "full text (`postgresql`, all matches)",
    "navigation": "navigation (a folder, by position)",
    "security": "security (published, Anonymous)",
    "date_paged": "date-sorted page",
    "box_one": "search box: `postgresql*`, Anonymous, b_size 10",
    "box_two": "search box: `report AND postgresql*`",
    "box_two_62": "search box (6.2): `report* AND postgresql*`",
}
EDITS = {"content_modification": "reindexObject", "content_edit_event": "edit (ObjectModifiedEvent)"}
NAMES = {"pg": "plone.pgcatalog", "zcatalog-relstorage": "ZCatalog (RelStorage)", "upstream": "peer"}


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _query(timings: list[dict]) -> dict:
    """One query at one size over the runs: medians of the runs' medians, p95 of every sample."""
    out: dict = {"len": timings[0]["len"]}
    for variant in ("bare", "listing"):
        out[f"{variant}_median"] = round(statistics.median(t[variant]["median_ms"] for t in timings), 3)
        out[f"{variant}_p95"] = round(_p95([s for t in timings for s in t[variant]["raw"]]), 3)
    return out


def _points(runs: list[dict]) -> list[dict]:
    """Each size's queries (a run without ``scale`` is one size, its ``docs``)."""
    by_run = [run["scale"] if "scale" in run else [{"docs": run["params"]["docs"], **run}] for run in runs]
    points = []
    for sizes in zip(*by_run, strict=True):
        names = [name for name in sizes[0]["queries"] if name in QUERIES]
        queries = {name: _query([size["queries"][name] for size in sizes]) for name in names}
        points.append({"docs": sizes[0]["docs"], "queries": queries})
    return points


def condense(runs: dict[str, list[dict]], settings: str, cache_size: int) -> dict:
    """The kept form of *runs* (each backend's finished runs)."""
    out: dict = {"settings": settings, "cache_size": cache_size, "runs": {}}
    for backend, finished in runs.items():
        finished = [run for run in finished if run.get("ok", True)]
        if not finished:
            continue
        kept: dict = {
            "versions": finished[0].get("versions"),
            "runs": len(finished),
            "scale": _points(finished),
        }
        for key in EDITS:
            if key in finished[0]:
                kept[key] = round(statistics.median(run[key]["median_ms"] for run in finished), 2)
        out["runs"][backend] = kept
    return out


def read_runs(path: Path) -> tuple[dict[str, list[dict]], int]:
    """Each backend's runs in *path*: ``run_all.py``'s file, or the directory of its runs' files."""
    if path.is_dir():
        runs: dict[str, list[dict]] = {}
        for file in sorted(path.glob("*-run*.json")):
            run = json.loads(file.read_text())
            runs.setdefault(run["label"], []).append(run)
    else:
        runs = json.loads(path.read_text())["runs"]
    first = next(iter(runs.values()))[0]
    return runs, first["params"]["cache_size"]


def _cell(query: dict) -> str:
    return f"{query['bare_median']:.2f} / {query['listing_median']:.2f}"


def _ratio(ours: dict, theirs: dict | None) -> str:
    if theirs is None:
        return ""
    bare = ours["bare_median"] / theirs["bare_median"]
    listing = ours["listing_median"] / theirs["listing_median"]
    return f"{bare:.2f}x / {listing:.2f}x"


def table(name: str, data: dict) -> list[str]:
    """A run's table: each query at each size, the backends side by side."""
    runs = data["runs"]
    others = [backend for backend in ("zcatalog-relstorage", "upstream") if backend in runs]
    head = ["query", "docs", "pg p50 bare / listing", *(NAMES[b] for b in others)]
    head += [f"pg ÷ {NAMES[b]}" for b in others] + ["pg p95 bare"]
    lines = [
        f"`{name}`, cache-size {data['cache_size']}: {data['settings']}. Medians in ms, bare / listing"
        " (ten brains' `Title` and `getURL()`):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for number, point in enumerate(runs["pg"]["scale"]):
        for query, ours in point["queries"].items():
            theirs = [runs[b]["scale"][number]["queries"].get(query) for b in others]
            row = [QUERIES[query], f"{point['docs']:,}", _cell(ours)]
            row += [_cell(t) if t else "" for t in theirs]
            row += [_ratio(ours, t) for t in theirs] + [f"{ours['bare_p95']:.2f}"]
            lines.append("| " + " | ".join(row) + " |")
    edits = [(label, key) for key, label in EDITS.items() if key in runs["pg"]]
    if edits:
        lines.append("")
        for label, key in edits:
            theirs = ", ".join(
                f"{NAMES[b]} {runs[b][key]:.1f} ({runs['pg'][key] / runs[b][key]:.2f}x)"
                for b in others
                if key in runs[b]
            )
            lines.append(f"- {label}: pg {runs['pg'][key]:.1f} ms a document; {theirs}")
    return [*lines, ""]


def newest() -> list[tuple[str, dict]]:
    """The newest condensed run of each kind (500 documents, and each
    cache size of the scale mode), and before it the newest of its kind
    with the peer where that one ran without."""
    found: dict[tuple, list[tuple[str, dict]]] = {}
    for path in sorted(RESULTS.glob(PATTERN)):
        data = json.loads(path.read_text())
        if "cache_size" not in data:
            continue  # (run_all.py's own files, from before this form)
        points = tuple(point["docs"] for point in data["runs"]["pg"]["scale"])
        found.setdefault((points, data["cache_size"]), []).append((path.name, data))
    chosen = []
    for key in sorted(found):
        runs = found[key]
        with_peer = [run for run in runs if "upstream" in run[1]["runs"]]
        if "upstream" not in runs[-1][1]["runs"] and with_peer:
            chosen.append(with_peer[-1])
        chosen.append(runs[-1])
    return chosen


def sections() -> list[str]:
    """The section of ``docs/benchmarks.md`` (none before a run)."""
    runs = newest()
    if not runs:
        return []
    lines = [
        "## The published comparison's workload",
        "",
        "`../shared/bench` as its README runs it: plone.pgcatalog (pg), stock ZCatalog on RelStorage and "
        "the published peer (PyPI's `plone-pgcatalog`), each in its own process on a fresh database of "
        "the same server, one after the other in one run; `--churn` (a committed write before each "
        "search), `BENCH_SEARCHBOX=1` (the search box's queries as Plone 6.1 and 6.2 send them). "
        "`cache-size 400` is the comparison's own simulation of cache pressure, `30000` Plone's "
        "default. Each run's settings and code are named above its table; ratios below 1 mean pg is faster.",
        "",
    ]
    for name, data in runs:
        lines += table(name, data)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="run_all.py's JSON, or the directory of its runs' files")
    parser.add_argument("out", type=Path)
    parser.add_argument("--settings", required=True, help="what ran, on which code, on what machine")
    args = parser.parse_args(argv)
    runs, cache_size = read_runs(args.runs)
    args.out.write_text(json.dumps(condense(runs, args.settings, cache_size), indent=1))
    print("\n".join(table(args.out.name, json.loads(args.out.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``docs/benchmarks.md`` (and its plots) from a run's results."""

from __future__ import annotations

from pathlib import Path
from targets import all_checks
from targets import Check
from targets import growth_checks
from targets import LABELS
from targets import query_checks
from targets import query_median
from targets import ratio
from targets import sizes
from targets import stored_objects
from targets import VARIANTS
from targets import write_checks
from targets import zodb_checks
from workload import scenarios

import plots
import scale


WRITE_BACKENDS = ("pgcatalog", "peer", "relstorage", "filestorage")
QUERY_BACKENDS = ("pgcatalog", "floor", "peer", "relstorage", "filestorage")


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}x"


def mark(check: Check | None) -> str:
    if check is None or check.ratio is None:
        return "–"
    sign = {True: "✅", False: "❌"}[check.passed]
    return f"{check.ratio:.2f}x {sign}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def peer_note(results: dict) -> list[str]:
    if "peer" not in results["backends"]:
        return []
    return [
        f"*peer*: the PyPI distribution plone-pgcatalog, `{results['meta'].get('peer', '?')}` (other",
        "authors, the same import name), from a venv of its own, its query result cache on.",
        "",
    ]


def header_section(results: dict) -> list[str]:
    meta = results["meta"]
    settings = meta["settings"]
    counts = ", ".join(f"{n:,}" for n in sizes(results))
    return [
        "# Benchmarks",
        "",
        "plone.pgcatalog (on zodb-pgjsonb) against Plone's stock ZCatalog on RelStorage",
        "(history-free, PostgreSQL) and on FileStorage, plus the *SQL floor*: the very",
        "statements plone.pgcatalog sends, timed alone on a plain psycopg connection.",
        "Written by `benchmarks/run.py`; see `benchmarks/README.md` to run it.",
        "",
        *peer_note(results),
        f"- Run: {meta['timestamp']}, mode `{meta['mode']}`, commit `{meta['git_commit']}`, "
        f"{meta.get('wall_s', 0) / 60:.1f} min in all",
        f"- Machine: {meta['machine']}; Python {meta['python']}; PostgreSQL {meta.get('postgresql', '?')} "
        f"({meta.get('server', '?')}), on the same host",
        f"- Queries at {counts} documents; {settings['iterations']} timed iterations after "
        f"{settings['warmup']} warm-up ones; every number is a **median**",
        "",
    ]


def targets_section(results: dict) -> list[str]:
    checks = all_checks(results)
    failing = [c for c in checks if c.passed is False]
    lines = [
        "## Targets",
        "",
        f"{len(checks) - len(failing)} of {len(checks)} checks pass. Ratios are ZCatalog/RelStorage ÷",
        "pgcatalog (higher is better for pgcatalog), except *÷ floor*: pgcatalog ÷ SQL floor",
        "(lower is better).",
        "",
    ]
    rows = [[c.name, times(c.ratio), c.goal_text, c.status + (f" ({c.note})" if c.note else "")]
            for c in write_checks(results)]  # fmt: skip
    lines += table(["Write path", "Measured", "Goal", "Status"], rows) + [""]
    by_name = {c.name: c for c in query_checks(results)}
    counts = sizes(results)
    small, large = counts[0], counts[-1]
    header = ["Scenario", "Variant", f"vs RelStorage @{small:,} (≥ 1x)"]
    if large != small:
        header.append(f"vs RelStorage @{large:,} (≥ 10x)")
    header += [f"÷ floor @{n:,} (≤ 1.5x)" for n in counts]
    rows = []
    for scenario in scenarios():
        for variant in VARIANTS:
            label = f"{scenario.label} ({variant})"
            row = [scenario.label, variant, mark(by_name.get(f"{label} vs RelStorage @{small:,}"))]
            if large != small:
                row.append(mark(by_name.get(f"{label} vs RelStorage @{large:,}")))
            row += [mark(by_name.get(f"{label} / SQL floor @{n:,}")) for n in counts]
            rows.append(row)
    lines += table(header, rows)
    growth = growth_checks(results)
    if growth:
        rows = [[c.name, times(c.ratio), c.goal_text, c.status] for c in growth]
        lines += ["", *table(["Growth of selective scenarios", "Measured", "Goal", "Status"], rows)]
    stored = zodb_checks(results)
    if stored:
        rows = [[c.name, c.measured_text, c.goal_text, c.status] for c in stored]
        header = f"No catalog data in ZODB (pgcatalog, largest of {len(sizes(results))} sizes)"
        lines += ["", *table([header, "Measured", "Goal", "Status"], rows)]
    notes = sorted({c.note for c in checks if c.note})
    if notes:
        lines += ["", "Note: " + "; ".join(notes) + " — this run's sizes differ from the targets'."]
    return [*lines, ""]


def writes_section(results: dict) -> list[str]:
    data = results["backends"]
    backends = [b for b in WRITE_BACKENDS if b in data]

    def stat(backend, key):
        entry = data[backend].get(key)
        return "–" if not entry else f"{ms(entry['median'])} ({ms(entry['mean'])})"

    rows = [
        ["Site creation, s"] + [f"{data[b]['site_creation_s']:.1f}" for b in backends],
        ["Creation, ms/doc: median (mean)"] + [stat(b, "create_ms_per_doc") for b in backends],
        ["Modification, ms/doc: median (mean)"] + [stat(b, "modify_ms_per_doc") for b in backends],
    ]
    for size in sizes(results)[1:]:
        bulk = [data[b]["sizes"].get(str(size), {}).get("bulk") for b in backends]
        rows.append(
            [f"Bulk path to {size:,} docs, ms/doc"] + [ms(x["ms_per_doc"]) if x else "–" for x in bulk]
        )
    rebuild = [data[b].get("rebuild") for b in backends]
    if any(rebuild):
        docs = next(r["docs"] for r in rebuild if r)
        rows.append(
            [f"clearFindAndRebuild ({docs:,} docs), s"]
            + [f"{r['seconds']:.1f}" if r else "–" for r in rebuild]
        )
    return [
        "## Writes",
        "",
        "Creation: `invokeFactory` + workflow transitions + commit, one transaction per",
        "document. Modification: new title and description + `reindexObject()` + commit.",
        "The bulk path (larger sites) creates the same documents 200 per transaction.",
        "",
        *table(["", *(LABELS[b] for b in backends)], rows),
        "",
        "![Writes](benchmarks/writes.png)",
        "",
    ]


def zodb_section(results: dict) -> list[str]:
    """The catalog's persistent objects per backend and size."""
    backends = [b for b in WRITE_BACKENDS if b in results["backends"]]
    rows = []
    for size in sizes(results):
        row = [f"{size:,}"]
        for backend in backends:
            found = stored_objects(results, backend, size)
            row.append("–" if not found else f"{found['stored']:,} ({found['cached']:,})")
        rows.append(row)
    if all(cell == "–" for row in rows for cell in row[1:]):
        return []
    last = stored_objects(results, "pgcatalog", sizes(results)[-1]) or {"by_class": {}}
    kept = ", ".join(f"{count} `{name.rsplit('.', 1)[-1]}`" for name, count in last["by_class"].items())
    return [
        "## Catalog objects in ZODB",
        "",
        "Persistent objects reachable from `portal_catalog` (the tool included), as stored",
        "after the queries at each size; in brackets, how many of them are in the ZODB cache",
        "then. pgcatalog keeps " + (kept or "nothing") + " (its ZCTextIndex lexicons' word",
        "pipelines are part of the tool's own record).",
        "",
        *table(["Documents", *(LABELS[b] for b in backends)], rows),
        "",
    ]


def found(results: dict, backend: str, size: int, scenario: str) -> dict | None:
    source = "pgcatalog" if backend == "floor" else backend
    entry = results["backends"].get(source, {}).get("sizes", {}).get(str(size))
    return None if entry is None else entry["queries"][scenario]["found"]


def agreement(results: dict, size: int, scenario: str) -> str:
    """The result count, or the differing counts of each backend."""
    counts = {}
    for backend in ("pgcatalog", "peer", "relstorage", "filestorage"):
        info = found(results, backend, size, scenario)
        if info is not None:
            counts[backend] = (info["len"], info["actual_result_count"])
    values = set(counts.values())
    if len(values) == 1:
        length, total = values.pop()
        return f"{total}" if length == total else f"{length} of {total}"
    return "**differ**: " + ", ".join(f"{LABELS[b]} {n} of {t}" for b, (n, t) in counts.items())


def queries_section(results: dict, size: int) -> list[str]:
    backends = [b for b in QUERY_BACKENDS if b == "floor" and "pgcatalog" in results["backends"]
                or b in results["backends"]]  # fmt: skip
    catalogs = [b for b in ("pgcatalog", "peer") if b in results["backends"]]
    rows = []
    for scenario in scenarios():
        for variant in VARIANTS:
            values = {b: query_median(results, b, size, scenario.name, variant) for b in backends}
            rows.append(
                [scenario.label, variant, *(ms(values[b]) for b in backends),
                 *(times(ratio(values.get("relstorage"), values.get(b))) for b in catalogs),
                 times(ratio(values.get("pgcatalog"), values.get("floor"))),
                 agreement(results, size, scenario.name) if variant == "bare" else ""]
            )  # fmt: skip
    header = ["Scenario", "Variant", *(f"{LABELS[b]} ms" for b in backends),
              *(f"RelStorage ÷ {b}" for b in catalogs), "pgcatalog ÷ floor", "Results"]  # fmt: skip
    return [
        f"## Queries at {size:,} documents",
        "",
        *table(header, rows),
        "",
        f"![Queries at {size:,} documents](benchmarks/queries-{size}.png)",
        "",
    ]


def method_section(results: dict) -> list[str]:
    lines = [
        "## Method",
        "",
        "- One process per backend, each on a fresh database (FileStorage: a temporary",
        "  directory), run one after the other in the same invocation; ZODB cache-size 400.",
        "  Before each query phase the PostgreSQL databases get an untimed `VACUUM (ANALYZE)`,",
        "  as autovacuum would have done on a live site.",
        "- A Plone 6 site with `plone.app.contenttypes` (pgcatalog: plus `plone.pgcatalog:default`),",
        "  Documents filling published folders 50 at a time (so the listed folder of scenario 4",
        "  holds 50 at every size), seeded random titles,",
        "  descriptions, 0–4 subjects of 15 (the subject words also appear in the description),",
        "  effective/modification dates over 2021–2024, 70% published, 20% private, 10% pending,",
        "  reached through `simple_publication_workflow` transitions.",
        "- Queries go through `portal_catalog.searchResults()` as the site's Manager, except",
        "  scenario 5 (Anonymous). Before every iteration the previous transaction is aborted",
        "  (untimed), as the end of a request would. *bare*: the search call only; *listing*:",
        "  search + `len()` + `Title` and `getURL()` of the first ten brains.",
        "- The queries: " + "; ".join(f"{s.label}: `{s.query}`" for s in scenarios()) + ".",
        "- SQL floor: the statements the catalog tool sent for the scenario (captured by",
        "  wrapping `plone.pgcatalog.database.fetch`; for the listing, the search and the metadata query),",
        "  run prepared on one autocommit psycopg connection, fetching all rows.",
        '- *Results* shows the number of matches ("n of m": a batch of n among m) and flags',
        "  backends that disagree.",
        "",
    ]
    return lines


def render(results: dict, plot_names: list[str], beyond: list[str]) -> str:
    """The page; *beyond*: the sections of the runs beyond one server and
    one site's size (``scale.sections``)."""
    lines = (
        header_section(results) + targets_section(results) + writes_section(results) + zodb_section(results)
    )
    for size in sizes(results):
        lines += queries_section(results, size)
    if "growth.png" in plot_names:
        lines += ["## Growth with the number of documents", "", "![Growth](benchmarks/growth.png)", ""]
    lines += beyond
    lines += method_section(results)
    return "\n".join(lines)


def write(results: dict, docs: Path) -> None:
    """Write ``docs/benchmarks.md`` and ``docs/benchmarks/*.png``."""
    names = plots.write_all(results, docs / "benchmarks")
    (docs / "benchmarks.md").write_text(render(results, names, scale.sections(docs / "benchmarks")))


def targets_text(results: dict) -> str:
    """A plain summary of the targets, for the terminal."""
    lines = [f"{c.status:4}  {c.name}: {c.measured_text} (goal {c.goal_text}){' — ' + c.note if c.note else ''}"
             for c in all_checks(results)]  # fmt: skip
    return "\n".join(lines)

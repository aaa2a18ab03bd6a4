"""Tables of a run's query phases as a busy site has its database.

    .venv/bin/python benchmarks/busy.py benchmarks/results/<run>.json

For every size and query phase (the plain one and each ``--after-writes``
/ ``--first-in-request`` mode) of a ``run.py`` result: per scenario, bare
and listing, the medians of plone.pgcatalog, of the ``peer`` (PyPI's
plone-pgcatalog, where the run has it) and of ZCatalog on RelStorage,
each catalog's ratio to RelStorage, and what PostgreSQL did for plone.pgcatalog's
statements once the phase was over (heap fetches of index-only scans,
planning and execution time: ``floor.plan_facts``); per phase, how
``object_state`` stood before and after it (dead rows, changes since the
last ANALYZE, vacuums and analyzes: ``floor.table_state``; its all-visible
pages are ``pg_class``'s, counted by the last VACUUM or ANALYZE: the heap
fetches tell what writes since have cleared).  ``--vacuum`` says what ran
between the writes and the reads.
"""

from __future__ import annotations

from pathlib import Path

import json
import sys


def phases(entry: dict) -> dict:
    """The query phases of one size: name -> timings."""
    return {"plain": entry["queries"], **entry.get("modes", {})}


def _table_line(name: str, state: dict | None) -> str:
    if not state:
        return ""
    parts = []
    for when in ("before", "after"):
        t = state.get(when) or {}
        if t:
            parts.append(
                f"{when}: {t['relallvisible']}/{t['relpages']} pages all-visible at the last VACUUM or ANALYZE, "
                f"{t['n_dead_tup']} dead rows, "
                f"{t['n_mod_since_analyze']} changes since ANALYZE, vacuums {t['vacuum_count']}+{t['autovacuum_count']} "
                f"(by hand + auto), analyzes {t['analyze_count']}+{t['autoanalyze_count']}"
            )
    return f"`object_state` ({name}) " + "; ".join(parts)


CATALOGS = ("pgcatalog", "peer")  # each beside ZCatalog on RelStorage
NAMES = {"pgcatalog": "pgcatalog", "peer": "peer", "relstorage": "RelStorage"}
NOT_SCENARIOS = ("plans", "table", "writes_ms", "prepared", "python_before_sql_us", "query_cache")


def median(timings: dict | None, scenario: str, variant: str) -> float | None:
    return (timings or {}).get(scenario, {}).get(variant, {}).get("median")


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def tables(results: dict) -> str:
    """The tables: pgcatalog and the peer (those of them the run has),
    each in ms and as a ratio to RelStorage; pgcatalog's plan facts."""
    backends = results["backends"]
    catalogs = [b for b in CATALOGS if b in backends]
    if not catalogs:
        raise SystemExit("busy.py: the run has neither pgcatalog nor peer")
    shown = [*catalogs, "relstorage"]
    settings = results["meta"]["settings"]
    writes = [
        f"{NAMES[b]}: creation {backends[b]['create_ms_per_doc']['median']:.1f}, "
        f"modification {backends[b]['modify_ms_per_doc']['median']:.1f} ms per document, "
        f"rebuild of {backends[b]['rebuild']['docs']} {backends[b]['rebuild']['seconds']:.1f} s"
        for b in shown
        if b in backends and backends[b].get("rebuild")
    ]
    out = [
        f"Run {results['meta']['timestamp']} at {results['meta']['git_commit']}, "
        f"vacuum: {settings.get('vacuum', 'each')}, after writes: {settings.get('after_writes')}, "
        f"first in request: {settings.get('first_in_request')}",
        "",
        *(f"- writes, {line}" for line in writes),
        "",
    ]
    header = [
        "scenario", *(f"{NAMES[b]} ms" for b in shown), *(f"{NAMES[b]} ÷ RelStorage" for b in catalogs),
        "heap fetches", "planning ms", "execution ms",
    ]  # fmt: skip
    for size, entry in backends[catalogs[0]]["sizes"].items():
        by_backend = {b: phases(backends[b]["sizes"][size]) for b in shown if b in backends}
        for name, first in phases(entry).items():
            timings = {b: by_backend[b].get(name) for b in by_backend}
            pg = timings.get("pgcatalog") or {}
            out += [f"### {size} documents, {name}", "", "| " + " | ".join(header) + " |"]
            out.append("|---" * len(header) + "|")
            for scenario, variants in first.items():
                if scenario in NOT_SCENARIOS or not isinstance(variants, dict):
                    continue
                for variant in ("bare", "listing"):
                    values = {b: median(timings.get(b), scenario, variant) for b in shown}
                    theirs = values["relstorage"]
                    ratios = [f"{values[b] / theirs:.2f}x" if theirs and values[b] else "-" for b in catalogs]
                    facts = (pg.get("plans") or {}).get(scenario, {}).get(variant)
                    plan = ["-"] * 3 if not facts else [
                        str(facts.get("heap_fetches", "-")), f"{facts.get('planning_ms', 0):.2f}",
                        f"{facts.get('execution_ms', 0):.2f}",
                    ]  # fmt: skip
                    cells = [f"{scenario} {variant}", *(ms(values[b]) for b in shown), *ratios, *plan]
                    out.append("| " + " | ".join(cells) + " |")
            out.append("")
            python = pg.get("python_before_sql_us")
            if python:
                out.append(
                    "- catalog's Python before its first statement, a repeated query (µs, median): "
                    + ", ".join(f"{name} {us:.0f}" for name, us in python.items() if us is not None)
                )
            edits = {b: (timings.get(b) or {}).get("writes_ms") for b in shown}
            if edits.get("relstorage"):
                theirs = edits["relstorage"]["median"]
                out.append(
                    "- the edit before each query (`reindexObject`, committed; ms, median): "
                    + ", ".join(
                        f"{NAMES[b]} {w['median']:.2f}"
                        + ("" if b == "relstorage" else f" ({w['median'] / theirs:.2f}x)")
                        for b, w in edits.items()
                        if w
                    )
                )
            prepared = pg.get("prepared")
            if prepared:
                out.append(
                    f"- prepared statements on the searches' connection: {prepared['statements']}, "
                    f"{prepared['generic_plans']} executions with a generic plan, {prepared['custom_plans']} "
                    f"with a custom one (planned each time); {prepared['mostly_custom']} statements mostly custom"
                )
            cache = (timings.get("peer") or {}).get("query_cache")
            if cache:
                out.append(
                    f"- peer's query result cache (its process so far): {'on' if cache['enabled'] else 'off'}, "
                    f"{cache['hits']} hits, {cache['misses']} misses, {cache['invalidations']} invalidations"
                )
            for backend in shown:
                line = _table_line(NAMES[backend], (timings.get(backend) or {}).get("table"))
                if line:
                    out.append(f"- {line}")
            out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    print(tables(json.loads(Path(argv[1]).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

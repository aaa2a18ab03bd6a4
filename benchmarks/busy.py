"""Tables of a run's query phases as a busy site has its database.

    .venv/bin/python benchmarks/busy.py benchmarks/results/<run>.json

For every size and query phase (the plain one and each ``--after-writes``
/ ``--first-in-request`` mode) of a ``run.py`` result: per scenario, bare
and listing, the medians of plone.pgcatalog and of ZCatalog on
RelStorage, their ratio, and what PostgreSQL did for plone.pgcatalog's
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


def tables(results: dict) -> str:
    backends = results["backends"]
    pg = backends["pgcatalog"]
    rs = backends.get("relstorage")
    settings = results["meta"]["settings"]
    out = [
        f"Run {results['meta']['timestamp']} at {results['meta']['git_commit']}, "
        f"vacuum: {settings.get('vacuum', 'each')}, after writes: {settings.get('after_writes')}, "
        f"first in request: {settings.get('first_in_request')}",
        "",
    ]
    for size, entry in pg["sizes"].items():
        rs_phases = phases(rs["sizes"][size]) if rs else {}
        for name, timings in phases(entry).items():
            out.append(f"### {size} documents, {name}")
            out.append("")
            out.append(
                "| scenario | pgcatalog ms | RelStorage ms | ratio | heap fetches | planning ms | execution ms |"
            )
            out.append("|---|---|---|---|---|---|---|")
            plans = timings.get("plans", {})
            for scenario, variants in timings.items():
                if scenario in ("plans", "table", "writes_ms", "prepared", "python_before_sql_us"):
                    continue
                if not isinstance(variants, dict):
                    continue
                for variant in ("bare", "listing"):
                    ours = variants[variant]["median"]
                    theirs = rs_phases.get(name, {}).get(scenario, {}).get(variant, {}).get("median")
                    facts = plans.get(scenario, {}).get(variant, {})
                    ratio = f"{ours / theirs:.2f}x" if theirs else "-"
                    out.append(
                        f"| {scenario} {variant} | {ours:.2f} | {f'{theirs:.2f}' if theirs else '-'} | {ratio} | "
                        f"{facts.get('heap_fetches', '-')} | {facts.get('planning_ms', 0):.2f} | "
                        f"{facts.get('execution_ms', 0):.2f} |"
                    )
            out.append("")
            python = timings.get("python_before_sql_us")
            if python:
                out.append(
                    "- catalog's Python before its first statement, a repeated query (µs, median): "
                    + ", ".join(f"{name} {us:.0f}" for name, us in python.items() if us is not None)
                )
            prepared = timings.get("prepared")
            if prepared:
                out.append(
                    f"- prepared statements on the searches' connection: {prepared['statements']}, "
                    f"{prepared['generic_plans']} executions with a generic plan, {prepared['custom_plans']} "
                    f"with a custom one (planned each time); {prepared['mostly_custom']} statements mostly custom"
                )
            for backend, state in (("pgcatalog", timings.get("table")), ("RelStorage", rs_phases.get(name, {}).get("table"))):
                line = _table_line(backend, state)
                if line:
                    out.append(f"- {line}")
            out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    print(tables(json.loads(Path(argv[1]).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

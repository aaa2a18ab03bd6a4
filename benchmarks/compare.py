"""Two runs of ``run.py`` side by side: a change's before and after.

For every size, scenario and variant both runs measured: pgcatalog's
median before and after, and its ratio against ZCatalog on RelStorage in
each run (ZCatalog/RelStorage ÷ pgcatalog, higher is better).  Each run's
ratio is taken within that run, so that the machine's state when each ran
cancels out as far as it can; the absolute figures are only comparable on
an otherwise idle machine.

    .venv/bin/python benchmarks/compare.py BEFORE.json AFTER.json
"""

from __future__ import annotations

from pathlib import Path

import argparse
import json


SCENARIOS = {
    "simple": "1. field match",
    "complex": "2. multi-index",
    "fulltext": "3. full text",
    "navigation": "4. navigation",
    "anonymous": "5. anonymous",
    "date_paged": "6. date sorted page",
}


def median(results: dict, backend: str, size: str, scenario: str, variant: str) -> float | None:
    """The median in ms, or None where the run did not measure it."""
    found = results["backends"].get(backend, {}).get("sizes", {}).get(size, {})
    timing = found.get("queries", {}).get(scenario, {}).get(variant)
    return timing["median"] if timing else None


def ratio(results: dict, size: str, scenario: str, variant: str) -> float | None:
    ours = median(results, "pgcatalog", size, scenario, variant)
    theirs = median(results, "relstorage", size, scenario, variant)
    return theirs / ours if ours and theirs else None


def table(before: dict, after: dict) -> str:
    """The comparison as a markdown table."""
    lines = [
        "| Docs | Scenario | Variant | pgcatalog before ms | after ms | after ÷ before "
        "| vs RelStorage before | vs RelStorage after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sizes = sorted(set(before["meta"]["settings"]["sizes"]) & set(after["meta"]["settings"]["sizes"]))
    for size in map(str, sizes):
        for scenario, title in SCENARIOS.items():
            for variant in ("bare", "listing"):
                old = median(before, "pgcatalog", size, scenario, variant)
                new = median(after, "pgcatalog", size, scenario, variant)
                if old is None or new is None:
                    continue
                was, now = ratio(before, size, scenario, variant), ratio(after, size, scenario, variant)
                lines.append(
                    f"| {int(size):,} | {title} | {variant} | {old:.2f} | {new:.2f} | {new / old:.2f}x "
                    f"| {_fmt(was)} | {_fmt(now)} |"
                )
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
    print(f"before: {before['meta']['git_commit']} ({before['meta']['timestamp']})")
    print(f"after: {after['meta']['git_commit']} ({after['meta']['timestamp']})\n")
    print(table(before, after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

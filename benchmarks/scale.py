"""The sections of ``docs/benchmarks.md`` beyond one server and one
site's size: the published comparison's workload (``published.py``),
searches on replicas (the newest ``load-*.json`` that ran
``pgcatalog-replicas``), a catalog of a million rows (the newest
``*-million.json``, with its plot) and what visitors type there (the
newest ``*-typed-words.json``, wherever that site stood)."""

from __future__ import annotations

from pathlib import Path
from workload import scenarios

import published

import json
import matplotlib


matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402


RESULTS = Path(__file__).resolve().parent / "results"
REPLICAS = "pgcatalog-replicas"


def newest(pattern: str, accept=lambda data: True) -> tuple[str, dict] | None:
    """The newest results file matching *pattern* that *accept*s, and its data."""
    for path in sorted(RESULTS.glob(pattern), key=lambda p: p.name[-26:], reverse=True):
        data = json.loads(path.read_text())
        if accept(data):
            return path.name, data
    return None


def replicas_run() -> tuple[str, dict] | None:
    return newest("load-*.json", lambda data: REPLICAS in data.get("backends", {}))


def million_run() -> tuple[str, dict] | None:
    return newest("*-million.json")


def typed_run() -> tuple[str, dict] | None:
    return newest("*-typed-words.json")


def _save(fig, ax, path: Path) -> None:
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def replicas_plot(data: dict, path: Path) -> None:
    """CPU milliseconds per request: Zope, the primary's and the replicas' backends."""
    backends = list(data["backends"])
    parts = (("server", "Zope process", "#9ecae1"), ("postgres_backends", "primary", "#1f77b4"),
             ("replica_backends", "replicas", "#2ca02c"))  # fmt: skip
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = [0.0] * len(backends)
    for key, label, color in parts:
        values = [data["backends"][b]["window"]["cpu_ms_per_request"].get(key, 0) for b in backends]
        ax.bar(backends, values, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("CPU ms per request")
    ax.set_title("Where a request's CPU goes (load.py)")
    _save(fig, ax, path)


def million_plot(data: dict, path: Path) -> None:
    """p50 and p95 of each scenario, as a listing page, at a million rows."""
    cases = [s for s in scenarios() if s.name in data["timings"]]
    fig, ax = plt.subplots(figsize=(9, 4))
    xs = range(len(cases))
    for offset, key, color in ((-0.2, "median", "#1f77b4"), (0.2, "p95", "#9ecae1")):
        values = [data["timings"][s.name]["listing"][key] for s in cases]
        ax.bar([x + offset for x in xs], values, 0.4, label="p50" if key == "median" else key, color=color)
    ax.axhline(20, color="#d62728", linewidth=1, linestyle="--", label="20 ms")
    ax.set_xticks(list(xs), [s.label for s in cases], rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("ms (log scale)")
    ax.set_title(f"Listing searches at {data['sizes']['catalog_rows']:,} catalog rows")
    _save(fig, ax, path)


def sections(directory: Path) -> list[str]:
    """The sections of the newest replicas and million-row runs, each with
    its plot written to *directory* (none for a run not made yet)."""
    lines = published.sections()
    for run, plot, section, png in (
        (replicas_run(), replicas_plot, replicas_section, "replicas.png"),
        (million_run(), million_plot, million_section, "million.png"),
    ):
        if run is not None:
            plot(run[1], directory / png)
            lines += section(*run)
    typed = typed_run()
    if typed is not None:
        lines += typed_section(*typed)
    return lines


def _mb(value) -> str:
    return f"{int(value) / 1e6:,.0f} MB"


def replicas_section(name: str, data: dict) -> list[str]:
    s = data["settings"]
    lines = [
        "## Replicas",
        "",
        f"`benchmarks/load.py` ({name}): the same site of {s['docs']:,} documents served by one Zope "
        f"(waitress, {s['waitress_threads']} threads) to {s['clients']} anonymous clients and "
        f"{s['editors']} editors for {s['duration']:.0f} s, once from the primary alone and once "
        f"with searches on {data.get('replicas', 2)} streaming replicas; primary and replicas are "
        "PostgreSQL servers of this one machine (`plone.pgcatalog.cluster`). An editor saves a "
        "title with a word of its own and at once searches for it: a search that misses it is a "
        "read-your-writes violation.",
        "",
        "| | requests/s | p50 ms | p99 ms | CPU ms/request: Zope | primary | replicas | saved-then-searched | violations |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, result in data["backends"].items():
        every = result["kinds"]["all"]
        cpu = result["window"]["cpu_ms_per_request"]
        ryw = result.get("read_your_writes", {})
        lines.append(
            f"| {backend} | {every['rps']:.1f} | {every['p50_ms']:.0f} | {every['p99_ms']:.0f} | "
            f"{cpu['server']:.1f} | {cpu['postgres_backends']:.1f} | {cpu.get('replica_backends', 0):.1f} | "
            f"{ryw.get('searches', '-')} | {ryw.get('violations', '-')} |"
        )
    lines.append("")
    backends = data["backends"]
    if "pgcatalog" in backends:
        alone = backends["pgcatalog"]["window"]["cpu_ms_per_request"]["postgres_backends"]
        shared = backends[REPLICAS]["window"]["cpu_ms_per_request"]["postgres_backends"]
        lines += [
            f"The primary's backends spent {alone:.1f} ms of CPU per request alone and {shared:.1f} ms "
            f"with the replicas ({(1 - shared / alone) * 100:.0f}% less); on one machine the replicas' "
            "work lands on the same two cores, so throughput is not what this run can show. The "
            "backends ran one after the other, in the order of the table.",
            "",
        ]
    lines += ["![Replicas](benchmarks/replicas.png)", ""]
    return lines


def million_section(name: str, data: dict) -> list[str]:
    size = data["sizes"]
    lines = [
        "## A million catalog rows",
        "",
        f"`benchmarks/million.py` ({name}): {size['catalog_rows']:,} catalog rows, of which "
        f"{size['bulk_rows']:,} bulk rows (made by the catalog's extraction of Documents and Folders "
        "created in memory, written by its processor's writer; the rest through Plone). Each search "
        f"after an untimed write committed from another thread ({data['writes']}); no VACUUM between. "
        "p50 / p95 in ms:",
        "",
        "| scenario | bare p50 | bare p95 | listing p50 | listing p95 |",
        "|---|---|---|---|---|",
    ]
    for scenario in scenarios():
        timing = data["timings"].get(scenario.name)
        if not timing:
            continue
        bare, listing = timing["bare"], timing["listing"]
        lines.append(
            f"| {scenario.label} | {bare['median']:.2f} | {bare['p95']:.2f} | "
            f"{listing['median']:.2f} | {listing['p95']:.2f} |"
        )
    lines += [
        "",
        f"On disk: the catalog's columns {_mb(size['column_bytes'])}, its indexes "
        f"{_mb(size['catalog_index_bytes'])} (all of `object_state`'s indexes {_mb(size['all_index_bytes'])}; "
        f"the table {_mb(size['table_bytes'])}, the database {_mb(size['database_bytes'])}).",
        "",
        "![A million rows](benchmarks/million.png)",
        "",
        "How the one-word full-text search reads its first page at this size (the text's cells), and the runs before: "
        "[performance.md](performance.md#a-million-catalog-rows).",
        "",
    ]
    return lines


def typed_section(name: str, data: dict) -> list[str]:
    from typed import table

    return [
        f"## What visitors type, at {data['documents']:,} Documents",
        "",
        f"`benchmarks/typed.py` ({name}), on the site `million.py` builds ({data['documents']:,} Documents, "
        f"{data['through_plone']:,} of them made through Plone; each bulk one holds words of every frequency, "
        f"`vocabulary.py`): each line {next(iter(data['lines'].values()))['samples']} "
        "texts, each another document's words, sent as Plone's search page sends them (b_size 10, relevance "
        "order; its count and ten brains' `Title` and `getURL()`), each search after an editor's title change "
        "committed; the second search of each text (the first of each in the process: last column). "
        "p50 / p95 in ms:",
        "",
        table(data),
        "",
    ]

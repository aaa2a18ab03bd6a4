"""PNG plots of a run (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from targets import LABELS
from targets import query_median
from targets import sizes
from targets import VARIANTS
from workload import scenarios

import matplotlib


matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402


COLORS = {
    "pgcatalog": "#1f77b4", "floor": "#9ecae1", "peer": "#2ca02c", "relstorage": "#d62728",
    "filestorage": "#ff7f0e",
}  # fmt: skip
QUERY_BACKENDS = ("pgcatalog", "floor", "peer", "relstorage", "filestorage")
WRITE_BACKENDS = ("pgcatalog", "peer", "relstorage", "filestorage")


def plain_log_axis(axis) -> None:
    """Log scale with plain numbers (0.2, 1, 5) instead of powers of ten."""
    formatter = ticker.FuncFormatter(lambda value, _: f"{value:g}")
    axis.set_major_formatter(formatter)
    axis.set_minor_locator(ticker.LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_minor_formatter(formatter)


def present(results: dict, names) -> list[str]:
    have = set(results["backends"])
    return [n for n in names if (n == "floor" and "pgcatalog" in have) or n in have]


def queries_plot(results: dict, size: int, path: Path) -> None:
    """Median latency per scenario and backend, bare and listing."""
    backends = present(results, QUERY_BACKENDS)
    cases = scenarios()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    width = 0.8 / len(backends)
    for ax, variant in zip(axes, VARIANTS, strict=True):
        for i, backend in enumerate(backends):
            values = [query_median(results, backend, size, s.name, variant) or 0 for s in cases]
            xs = [x + (i - (len(backends) - 1) / 2) * width for x in range(len(cases))]
            ax.bar(xs, values, width, label=LABELS[backend], color=COLORS[backend])
        ax.set_xticks(range(len(cases)), [s.label for s in cases], rotation=20, ha="right")
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_title(f"{variant} search, {size:,} documents")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("median ms (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(backends), fontsize="small")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def growth_plot(results: dict, path: Path, variant: str = "listing") -> None:
    """Median latency against the number of documents, one panel per scenario."""
    counts = sizes(results)
    backends = present(results, QUERY_BACKENDS)
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, scenario in zip(axes.flat, scenarios(), strict=True):
        for backend in backends:
            values = [query_median(results, backend, n, scenario.name, variant) for n in counts]
            ax.plot(counts, values, marker="o", label=LABELS[backend], color=COLORS[backend])
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_xticks(counts, [f"{n:,}" for n in counts])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_title(f"{scenario.label} ({variant})")
        ax.set_xlabel("documents")
        ax.set_ylabel("median ms")
        ax.grid(which="both", alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(backends), fontsize="small")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def writes_plot(results: dict, path: Path) -> None:
    """Creation and modification ms/doc, and the rebuild seconds."""
    backends = present(results, WRITE_BACKENDS)
    data = results["backends"]
    panels = [
        ("creation, ms/doc (median)", lambda b: data[b]["create_ms_per_doc"]["median"]),
        ("modification, ms/doc (median)", lambda b: data[b]["modify_ms_per_doc"]["median"]),
        ("clearFindAndRebuild, s", lambda b: data[b].get("rebuild", {}).get("seconds", 0)),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (title, value) in zip(axes, panels, strict=True):
        ax.bar(
            [LABELS[b] for b in backends], [value(b) for b in backends], color=[COLORS[b] for b in backends]
        )
        ax.set_title(title)
        ax.tick_params(axis="x", labelsize="small", rotation=15)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_all(results: dict, directory: Path) -> list[str]:
    """Write every plot into *directory*; return the file names."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("queries-*.png"):
        stale.unlink()
    names = []
    for size in sizes(results):
        name = f"queries-{size}.png"
        queries_plot(results, size, directory / name)
        names.append(name)
    if len(sizes(results)) > 1:
        growth_plot(results, directory / "growth.png")
        names.append("growth.png")
    writes_plot(results, directory / "writes.png")
    names.append("writes.png")
    return names

"""What visitors type in the search box, on a large kept site: a rotating
set of texts of one, two and three words, as Plone sends them.

    .venv/bin/python benchmarks/typed.py --database pgcatalog_bench_1m [--iterations 40]

On the site ``million.py`` keeps in *database*, each line is a kind of
text typed: one, two or three words, the last of them a frequent word of
the workload (held by about a fifth of the rows), a middling one (ranks
100 to 3,000 of ``vocabulary.py``: about 150 to 4,700 rows at a million)
or a rare one (rank 10,000 on: 50 rows or fewer), typed whole or cut to a
prefix of 3 to 8 letters, the words before it whole and frequent (a
document's title).  Each sample of a line is another document's words, so
no two searches of a line are the same.  The text is sent as Plone's
search page sends it: ``munge_search_term`` of the Plone installed (6.1
globs the last word), and as 6.2 does (every word globbed, CMFPlone PR
#4305), with ``b_size`` 10 in relevance order; then the page as the
search page shows it: ``len()`` and the first ten brains' ``Title`` and
``getURL()`` (and ``actual_result_count``, the count it shows).  Phrases, OR and NOT, which the search page cannot send but
``@search`` and the API can, are lines of their own.

Each search follows an editor's title change committed (untimed), as on
a busy site, as Anonymous and as a user with the site-wide Editor role.
Each line's texts are searched twice: the first pass is each text's first
search in the process (its words' counts are made then), the second the
texts the first pass searched, again; a line's passes, as each user, stop after ``--budget``
seconds (the table says how many texts were searched; a search that
PostgreSQL cancelled at the statement timeout counts at the time it took,
and the line says how many were).  Medians and p95
in ms, written to ``benchmarks/results/<stamp>-typed-words.json``.  To
compare two versions of the code, run each (``PYTHONPATH=<checkout>/src``)
with the same ``--lines``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from kept import kept_dsn
from kept import kept_site
from kept import with_objects
from measure import summary
from pathlib import Path
from vocabulary import drawn
from workload import doc_spec

import argparse
import json
import sys
import time


HERE = Path(__file__).resolve().parent
EDITOR = "editor"
CLASSES = {
    "frequent": None,  # a word of the document's title (the workload's words)
    "middling": (100, 3000),
    "rare": (10_000, None),
}


def words_of(number: int, last: str) -> list[str] | None:
    """Document *number*'s title words, then a word of class *last* it
    holds; None where it holds none."""
    title = doc_spec(number).title.lower().split()
    ranks = CLASSES[last]
    if ranks is None:
        return title
    low, high = ranks
    held = [word for rank, word in drawn(number) if rank >= low and (high is None or rank <= high)]
    return [*title, held[0]] if held else None


def typed(words: list[str], count: int, prefix: int | None) -> list[str]:
    """The *count* words typed: the first title words, then the last word,
    cut to *prefix* letters (at least three, one short of the word)."""
    chosen = [*words[: count - 1], words[-1]] if len(words) > count - 1 else words
    if prefix is not None:
        last = chosen[-1]
        chosen[-1] = last[: max(3, min(prefix, len(last) - 1))]
    return chosen


def texts(first: int, last: int, count: int, word_class: str, cut: bool, samples: int) -> list[list[str]]:
    """*samples* texts typed, each of another bulk Document of *first* to *last*."""
    found: list[list[str]] = []
    number = first
    step = max(1, (last - first) // (samples * 3 + 1))
    while len(found) < samples and number < last:
        words = words_of(number, word_class)
        if words is not None and len(words) >= count:
            found.append(typed(words, count, 3 + len(found) % 6 if cut else None))
        number += step
    return found


def plone_61(words: list[str]) -> str:
    from Products.CMFPlone.browser.search import munge_search_term

    return munge_search_term(" ".join(words))


def plone_62(words: list[str]) -> str:
    return " AND ".join(f"{word}*" for word in words)


def lines(first: int, last: int, samples: int) -> Iterator[tuple[str, list[str]]]:
    """``(label, SearchableText values)`` of each line."""
    for count in (1, 2, 3):
        for word_class in CLASSES:
            for cut in (False, True):
                typed_texts = texts(first, last, count, word_class, cut, samples)
                form = "prefix of 3-8" if cut else "whole"
                label = f"{count} word{'s' if count > 1 else ''}, last {word_class} {form}"
                yield f"{label}, 6.1", [plone_61(t) for t in typed_texts]
                if count > 1:
                    yield f"{label}, 6.2", [plone_62(t) for t in typed_texts]
    pairs = [words_of(n, "frequent") for n in range(first, last, max(1, (last - first) // samples))][:samples]
    yield "phrase of two title words", [f'"{w[0]} {w[1]}"' for w in pairs]
    yield "two words OR", [f"{w[0]} OR {w[1]}" for w in pairs]
    yield "a word AND NOT another", [f"{w[0]} AND NOT {w[1]}" for w in pairs]


def page(catalog, text: str) -> int:
    """The search page's work: the search, how many it found, ten brains shown."""
    results = catalog.searchResults(SearchableText=text, b_start=0, b_size=10)
    found = results.actual_result_count
    [(brain.Title, brain.getURL()) for brain in results[:10]]
    return found


def as_user(worker, user: str) -> None:
    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.SecurityManagement import noSecurityManager

    if user == "Anonymous":
        noSecurityManager()
    else:
        users = worker.site.acl_users
        newSecurityManager(None, users.getUser(EDITOR).__of__(users))


def with_editor(worker) -> None:
    """The user with the site-wide Editor role, made once."""
    from plone import api

    import transaction
    import zopesite

    zopesite.login(worker.app)
    if api.user.get(username=EDITOR) is None:
        api.user.create(email=f"{EDITOR}@example.org", username=EDITOR, password=f"secret-{EDITOR}-1")
        api.user.grant_roles(username=EDITOR, roles=["Editor"])
        transaction.commit()


def edits(worker, editable: int) -> Callable[[], None]:
    """An editor's title change, committed, on a Document taken in turn:
    a new title every time (an edit that changes nothing would leave every
    page kept), as the edit form would save it."""
    import transaction
    import zopesite

    from workload import doc_spec

    turn = iter(range(10**9))

    def edit() -> None:
        transaction.abort()
        zopesite.login(worker.app)
        serial = next(turn)
        spec = doc_spec(serial * 7 % editable)
        doc = worker.site[spec.folder][spec.id]
        doc.title = f"{spec.title} (revision {time.time_ns()})"
        doc.reindexObject()
        transaction.commit()

    return edit


def measure(worker, samples: int, only: str = "", budget: float = 60.0) -> dict:
    """Each line (those whose label holds *only*), as each user; a user's
    passes over a line stop after *budget* seconds (its count says how
    many texts were searched)."""
    import transaction

    from plone.pgcatalog.errors import SearchTimeout

    documents = worker.docs
    editable = with_objects(worker.site, documents)
    with_editor(worker)
    edit = edits(worker, editable)
    out: dict = {"documents": documents, "through_plone": editable, "lines": {}}
    for label, values in lines(editable, documents, samples):
        if only not in label:
            continue
        result = out["lines"][label] = {"samples": len(values), "example": values[0] if values else None}
        for user in ("Anonymous", EDITOR):
            passes, found, failed = [], [], []
            searched = values
            for _ in ("first", "again"):
                times: list[float] = []
                ends = time.perf_counter() + budget / 2
                for n, text in enumerate(searched):
                    if time.perf_counter() > ends and times:
                        searched = searched[:n]  # (searched again: only those searched first)
                        break
                    edit()
                    as_user(worker, user)
                    started = time.perf_counter()
                    try:
                        found.append(page(worker.catalog, text))
                    except SearchTimeout:
                        failed.append(text)  # (timed as it took: the statement timeout)
                    times.append((time.perf_counter() - started) * 1000)
                    transaction.abort()
                passes.append(summary(times))
            result[user] = {
                "searched": passes[1]["n"],
                "first": passes[0],
                "again": passes[1],
                "found_median": sorted(found)[len(found) // 2] if found else 0,
                "timed_out": failed,
            }
            first, again = passes
            print(
                f"{label} [{user}]: first p50 {first['median']:.2f} p95 {first['p95']:.2f},"
                f" again p50 {again['median']:.2f} p95 {again['p95']:.2f} ms;"
                f" {result[user]['found_median']} found (median), e.g. {result['example']!r}"
                + (f"; {len(failed)} timed out" if failed else ""),
                flush=True,
            )
    return out


def table(result: dict) -> str:
    head = "| typed | found (median) | Anonymous p50 / p95 | editor p50 / p95 | first search: Anonymous p95 / editor p95 |"
    rows = [head, "|---|---:|---:|---:|---:|"]
    for label, line in result["lines"].items():
        anonymous, editor = line["Anonymous"], line[EDITOR]
        searched = min(anonymous.get("searched", line["samples"]), editor.get("searched", line["samples"]))
        rows.append(
            f"| {label}{f' ({searched} texts)' if searched < line['samples'] else ''}"
            f" | {anonymous['found_median']:,} / {editor['found_median']:,}"
            f" | {anonymous['again']['median']:.2f} / {anonymous['again']['p95']:.2f}"
            f" | {editor['again']['median']:.2f} / {editor['again']['p95']:.2f}"
            f" | {anonymous['first']['p95']:.2f} / {editor['first']['p95']:.2f} |"
            + (
                " timed out: {}".format(len(anonymous["timed_out"]) + len(editor["timed_out"]))
                if anonymous.get("timed_out") or editor.get("timed_out")
                else ""
            )
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--iterations", type=int, default=40, help="texts per line")
    parser.add_argument("--lines", default="", help="only the lines whose label holds this")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds a line may take, per user")
    args = parser.parse_args(argv)
    with kept_site(kept_dsn(args.database)) as worker:
        result = {
            "database": args.database,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "code": __import__("plone.pgcatalog").pgcatalog.__file__,
            **measure(worker, args.iterations, args.lines, args.budget),
        }
    out = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-typed-words.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    print(table(result))
    print(f"Results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Snippets: what ``brain.snippet()`` adds to a page of 10 results.

    .venv/bin/python benchmarks/snippets.py --docs 5000 20000
    .venv/bin/python benchmarks/snippets.py --kept pgcatalog_bench_100k   # kept.py's site, pages added

A plone.pgcatalog site of the benchmark's documents on a fresh database
(as ``run.py``), plus :data:`PAGES` published pages with body texts of
300 to 3,000 words (2 to 20 KB), then, for each query of :data:`QUERIES`
as Anonymous, in a new transaction each time: a page of 10 (``b_size``)
with each brain's Title read, and the same page with each brain's
snippet too.  Medians and p95 in ms, and the difference of the medians:
what snippets add.  Written to ``benchmarks/results/<stamp>-snippets.json``.
"""

from __future__ import annotations

import onesite
import random
import sys


PAGES = 1000
QUERIES = {
    "a word": {"SearchableText": "harbor"},
    "two words": {"SearchableText": "copper AND lantern"},
    "a glob, as Plone's page sends": {"SearchableText": "meadow*"},
    "a rare word, late in the text": {"SearchableText": "quasar"},
}
_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her all she there would their we him been has when who will more no if out so said what up "
    "its about into than them can only other new some could time these two may then do first any my now such "
    "like our over man me even most made after also did many before must through back years where much your "
    "copper lantern meadow harbor willow summit river stone forest cloud"
).split()


def body(number: int) -> str:
    """The *number*-th page's text: paragraphs of 300 to 3,000 words."""
    rng = random.Random(number)
    words = rng.choices(_WORDS, k=rng.randint(300, 3000))
    if number % 50 == 0:
        words.insert(len(words) - rng.randint(1, 40), "quasar")
    paragraphs = [" ".join(words[i : i + 80]).capitalize() + "." for i in range(0, len(words), 80)]
    return "".join(f"<p>{p}</p>" for p in paragraphs)


def add_pages(site) -> None:
    from plone.app.textfield.value import RichTextValue

    import transaction

    site.invokeFactory("Folder", "long-pages", title="Long pages")
    folder = site["long-pages"]
    site.portal_workflow.doActionFor(folder, "publish")
    for number in range(PAGES):
        folder.invokeFactory(
            "Document",
            f"page-{number:04d}",
            title=f"Long page {number}",
            text=RichTextValue(body(number), "text/html", "text/x-html-safe"),
        )
        site.portal_workflow.doActionFor(folder[f"page-{number:04d}"], "publish")
        if number % 100 == 99:
            transaction.commit()
    transaction.commit()


def prepare(worker) -> None:
    """The long pages, unless the (kept) site has them."""
    import zopesite

    zopesite.login(worker.app)
    if "long-pages" not in worker.site.objectIds():
        add_pages(worker.site)


def measure(worker, iterations: int) -> dict:
    """Each query of :data:`QUERIES` as Anonymous: a page of 10 with and
    without snippets, in turn."""
    from AccessControl.SecurityManagement import noSecurityManager
    from functools import partial
    from measure import summary
    from measure import time_once

    import transaction

    timings = {}
    for name, query in QUERIES.items():
        transaction.abort()
        noSecurityManager()

        def page(query=query, snippets=False):
            brains = worker.catalog(b_size=10, **query)
            return [(b.Title, b.snippet() if snippets else None) for b in brains]

        assert all(snippet for _, snippet in page(snippets=True)), name
        # the two in turn, each in a new transaction: what the machine does
        # meanwhile falls on both alike
        samples: tuple[list, list] = ([], [])
        for i in range(5 + iterations):
            for with_snippets, kept in ((False, samples[0]), (True, samples[1])):
                transaction.abort()
                elapsed, _ = time_once(partial(page, snippets=with_snippets))
                if i >= 5:
                    kept.append(elapsed)
        plain, marked = summary(samples[0]), summary(samples[1])
        timings[name] = {
            "page": [round(plain["median"], 2), round(plain["p95"], 2)],
            "with snippets": [round(marked["median"], 2), round(marked["p95"], 2)],
            "added": round(marked["median"] - plain["median"], 2),
            "example": page(snippets=True)[0][1],
        }
        print(f"[{worker.docs}] {name}: {timings[name]}", file=sys.stderr, flush=True)
    return timings


def table(results: dict) -> str:
    lines = ["| documents | query | page of 10 | with snippets | added |", "| --- | --- | --- | --- | --- |"]
    for size, timings in results.items():
        for name, t in timings.items():
            lines.append(
                f"| {int(size) + PAGES} | {name} | {t['page'][0]:.2f} / {t['page'][1]:.2f} "
                f"| {t['with snippets'][0]:.2f} / {t['with snippets'][1]:.2f} | {t['added']:.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(onesite.main(__file__, __doc__, measure, table, {"pages": PAGES}, 100, prepare))

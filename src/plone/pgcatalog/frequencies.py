"""The document frequencies of a text query's words, remembered.

Okapi BM25 weighs each word of a query by how many documents hold it
(its *df*, :mod:`~plone.pgcatalog.relevance`).  Counting them is most of
the time of a search for several words (``report AND postgresql``): the
rows holding each word are counted through the text index, thousands of
heap visits for a common word, where scoring the few rows holding all of
them is quick.  Every search of such a query counts the same numbers
again, so they are counts as :mod:`~plone.pgcatalog.counts` keeps them:
remembered per process with what they read, brought up to date from the
change log after a commit changed texts, all the query's words in one
statement before the search, which then takes them as a parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from plone.pgcatalog import registry as r
from plone.pgcatalog.counts import count_statement
from plone.pgcatalog.counts import remembered_count
from plone.pgcatalog.counts import side_by_side
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import unchanged_key
from plone.pgcatalog.database import read
from plone.pgcatalog.text import lexeme
from typing import Any


__all__ = ["INLINE", "MAX_WORDS", "document_frequencies", "holding"]

MAX_WORDS = 16
"""The most words whose counts are read before a search (each is a count
statement of its own in the one sent; a query of 500 words ran past the
statement timeout so): a longer query counts them inside the search."""

INLINE = 256
"""Words each held by at most this many rows (as last counted) are counted
inside the search (about 2.4 us a row): their own statement, which reads
the change log after each commit, costs more (at 500 documents, a write
before each search: ``report AND postgresql*`` 3.2-4.3 ms with 64, 1.5-1.6
with 256)."""


def holding(index: r.IndexDef, word: str) -> tuple[str, list]:
    """The WHERE (and its parameters) of the rows whose text *index* holds
    *word*: the statement whose count is the word's df (the text's cells
    count it so too, and the two share what is remembered)."""
    return f"{index.expression()} @@ %s::tsquery", [lexeme(word)]


def document_frequencies(tool: Any, site: str, index: r.IndexDef, words: Sequence[str]) -> list[int] | None:
    """The number of catalog rows of tool *tool* (its site at *site*)
    whose text *index* holds each of *words*, in order; None where the
    search had better count them itself: this transaction's own changes
    are in them, each is held by few rows, or they are too many."""
    if len(words) > MAX_WORDS:
        return None
    keys = [statement_key(*holding(index, word)) for word in words]
    if any(unchanged_key(tool, site, key) is None for key in keys):
        return None
    known = [remembered_count(tool, site, key) for key in keys]
    if all(n is not None and n <= INLINE for n in known):
        return None
    statements = [
        count_statement(tool, *holding(index, word), {index.changes}, key, site)
        for word, key in zip(words, keys, strict=True)
    ]
    sql, params, made = side_by_side(statements)
    return made(read(tool, f"SELECT * FROM {sql}", params, site=site)[0])

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

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Sequence
from os.path import commonprefix
from plone.pgcatalog import registry as r
from plone.pgcatalog.changes import ALL
from plone.pgcatalog.changes import SINCE
from plone.pgcatalog.changes import signed_rows
from plone.pgcatalog.counts import count_statement
from plone.pgcatalog.counts import Remembered
from plone.pgcatalog.counts import SHARED_FROM
from plone.pgcatalog.counts import SIZE
from plone.pgcatalog.counts import remembered_count
from plone.pgcatalog.counts import side_by_side
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import unchanged_key
from plone.pgcatalog.database import read
from plone.pgcatalog.schema import generation_sql
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.schema import SHARED
from plone.pgcatalog.shared import digest
from plone.pgcatalog.shared import share
from plone.pgcatalog.text import lexeme
from typing import Any

import orjson


__all__ = [
    "GLOB_WORDS",
    "INLINE",
    "MAX_WORDS",
    "document_frequencies",
    "frequencies_statement",
    "holding",
    "remembered_frequencies",
]

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


def document_frequencies(
    tool: Any, site: str, index: r.IndexDef, words: Sequence[str], globs: Sequence[Sequence[str]] = ()
) -> tuple[list[int], list[list[int]]] | None:
    """The number of catalog rows of tool *tool* (its site at *site*)
    whose text *index* holds each of *words*, in order, and each word of
    each glob's in *globs* (:func:`frequencies_statement`), in one
    statement; None where the search had better count them itself: this
    transaction's own changes are in them, there are too many words, or
    (with no glob) each is held by few rows."""
    if len(words) > MAX_WORDS:
        return None
    keys = [statement_key(*holding(index, word)) for word in words]
    if any(unchanged_key(tool, site, key) is None for key in keys):
        return None
    known = [remembered_count(tool, site, key) for key in keys]
    if not globs and all(n is not None and n <= INLINE for n in known):
        return None
    vectors = [frequencies_statement(tool, site, index, glob) for glob in globs]
    statements = [
        count_statement(tool, *holding(index, word), {index.changes}, key, site)
        for word, key in zip(words, keys, strict=True)
    ]
    if any(vector is None for vector in vectors):
        return None
    sql, params, made = side_by_side([*statements, *filter(None, vectors)])
    answers = made(read(tool, f"SELECT * FROM {sql}", params, site=site)[0])
    return answers[: len(words)], answers[len(words) :]


GLOB_WORDS = 8
"""A part of a text query of more words than this (a glob, the words it
stands for ORed) has their dfs made as one answer
(:func:`frequencies_statement`)."""

_vectors = Remembered(SIZE)
"""The dfs of glob's words (:func:`frequencies_statement`) by
:func:`~plone.pgcatalog.counts.unchanged_key` of their common prefix:
(generation, ({word: df}, stamp of the commit they were made at))."""

_HELD = "pgcatalog_held"
# the dfs another process shared, and the stamp of their commit (%s: the digest)
_SHARED_DFS = f"SELECT answer -> 'dfs' FROM {SHARED} WHERE key = %s"
_SHARED_STAMP = f"SELECT stamp FROM {SHARED} WHERE key = %s AND answer ? 'dfs'"


def _vector_key(tool: Any, site: str, index: r.IndexDef, words: Sequence[str]) -> Hashable | None:
    """What the dfs of *words* are remembered under: their common prefix
    (a glob's, mostly), so that a word new to the glob's expansion is
    counted alone and the others' dfs are brought up to date."""
    return unchanged_key(tool, site, ("frequencies", index.name, commonprefix(list(words))))


def remembered_frequencies(tool: Any, site: str, index: r.IndexDef, words: Sequence[str]) -> list[int | None]:
    """The dfs of *words* this process last made (:func:`frequencies_statement`),
    whatever changed since; None for each it made none of.  A hint, never
    an answer."""
    key = _vector_key(tool, site, index, words)
    known = None if key is None else _vectors.get(key)
    dfs = {} if known is None else known[1][0]
    return [dfs.get(word) for word in words]


def frequencies_statement(
    tool: Any, site: str, index: r.IndexDef, words: Sequence[str]
) -> tuple[str, list, Callable[[Sequence[Any]], list[int]]] | None:
    """The dfs of many *words* (a glob's: dozens, hundreds) as one answer
    (a row of ``counts.WIDTH`` columns), and what makes it of that row;
    None in a transaction with catalog changes of its own.  Their own
    count statements, side by side, each read the change log after a
    commit (0.2 ms a word); here one reads it for all: the rows changed
    since, as they are and as they were, each adds or takes one from each
    of the words it holds.  A word not remembered (new to a glob's
    expansion) is counted through the text index, as all are where
    nothing is remembered nor shared, or the log cannot tell."""
    key = _vector_key(tool, site, index, words)
    if key is None:
        return None
    expression = index.expression()
    _, (kept, stamp) = _vectors.get(key) or (None, (None, None))
    shared = digest(key) if kept is None else None
    words = list(words)
    where, where_params = f"{expression} @@ %s::tsquery", [" | ".join(map(lexeme, words))]
    since, signed, signed_params = signed_rows(
        f"ts_filter(setweight({expression}, 'A', %s::text[]), '{{a}}') AS held",
        where,
        [words, *where_params],
        site,
        stamp,
        shared=None if shared is None else (_SHARED_STAMP, [shared]),
    )
    generation = generation_sql(frozenset({index.changes}))
    known = (
        None if kept is None else orjson.dumps({word: kept[word] for word in words if word in kept}).decode()
    )
    before, before_params = ("%s::jsonb", [known]) if shared is None else (f"({_SHARED_DFS})", [shared])
    count = f"(SELECT count(*) FROM {ROWS} WHERE {expression} @@ w.q)"
    # each word's df then, and the rows changed since: one more or one
    # less for each word they hold (a word not known then is counted)
    sql = (
        f"WITH {since},\n{_HELD} AS MATERIALIZED ({signed})\n"
        "SELECT (SELECT array_agg(CASE"
        f" WHEN (SELECT changed FROM {SINCE}) = '{ALL}' OR NOT b.dfs ? w.word THEN {count}"
        " ELSE (b.dfs ->> w.word)::bigint + COALESCE(d.delta, 0) END ORDER BY w.i)"
        f" FROM (SELECT {before} AS dfs) AS b,"
        " unnest(%s::text[], %s::tsquery[]) WITH ORDINALITY AS w(word, q, i)"
        f" LEFT JOIN (SELECT u.lexeme, sum(s.sign) AS delta FROM {_HELD} s, unnest(s.held) AS u"
        f" WHERE (SELECT changed FROM {SINCE}) <> '{ALL}' GROUP BY u.lexeme) AS d ON d.lexeme = w.word),"
        f" {generation}, (SELECT stamp FROM {SINCE}), (SELECT changed FROM {SINCE})"
    )
    params = [*signed_params, *before_params, words, [lexeme(word) for word in words]]

    def made(row: Sequence[Any]) -> list[int]:
        found, made_at, now, changed = row
        answer = [int(n) for n in found or [0] * len(words)]
        dfs = dict(zip(words, answer, strict=True))
        _vectors.put(key, made_at, (dfs, now))
        if changed == ALL and sum(answer) >= SHARED_FROM:
            share(tool, key, now, {"dfs": dfs})
        return answer

    return sql, params, made


def clear() -> None:
    """Forget every remembered vector (tests start from nothing)."""
    _vectors.clear()

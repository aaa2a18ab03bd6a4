"""The best matches of a one-word full-text search, without scoring them all.

ZCatalog orders the matches of a text query by their Okapi BM25 scores
(:mod:`~plone.pgcatalog.relevance`), so the first page of a word that a
tenth of a large site holds would score every one of them.  For one word
a row's score depends only on the word's frequency *f* in it and its
length *dl* (the word's idf and the mean length are the same for every
row): it grows with *f* and falls with *dl*.  The order of two (f, dl)
pairs still depends on the mean length, which moves as the site grows, so
no order can be kept once and for all; the rows are kept in *cells*
instead: each word of a row's SearchableText is indexed under its
frequency's class and the row length's class (``schema.TEXT_CELLS``).

For the mean length and idf of the moment, a cell's best possible score
is that of its largest *f* and smallest *dl*.  :func:`best_rows` reads the
cells best bound first, a batch of them per statement, each cell's rows
in turn (the query's other criteria and the security terms filter them;
each is scored exactly as the full statement scores it); a statement
stops in the cell that fills the page, which the next reads whole.  The
walk ends once the last of the rows wanted scores above the bound of
every cell left: ties go on being read, as ZCatalog breaks them by
record id.  The answer is the full statement's first rows, whatever the
mean length.  Only a word held by many rows is walked (:data:`FEW`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from plone.pgcatalog import registry as r
from plone.pgcatalog.schema import FREQUENCY_EDGES
from plone.pgcatalog.schema import LENGTH_EDGES
from plone.pgcatalog.schema import RARE_FREQUENCY
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.text import lexeme
from plone.pgcatalog.text import MAX_LEXEME_BYTES
from plone.pgcatalog.values import text_literal
from typing import Any

import heapq
import math


__all__ = ["CELLS", "best_rows", "cell_bounds", "okapi", "one_word"]

_COUNTS = f"word_counts -> {text_literal(r.SEARCHABLE_TEXT)}"
CELLS = f"pgcatalog_cells(searchable_text, {_COUNTS})"
"""The indexed expression (``schema.TEXT_CELLS``): a query must spell it so."""

FIRST_BATCH = 64
"""Cells read by the first statement; each next one reads _GROWTH times as many."""
_GROWTH = 2
FEW = 2_000
"""A word held by at most this many rows is scored whole: the statement that
scores every match is as quick, and a walk would read every cell to be
sure none is left."""
MAX_READ = 5_000
"""Rows read before the walk gives up for the statement that scores every
match: the query's other criteria keep few of the word's rows."""


def one_word(scored: Sequence[Any]) -> str | None:
    """The word of a query whose relevance order *scored* (``Ordering.scored``)
    is one word of SearchableText, the index the cells serve; else None."""
    if len(scored) != 1 or scored[0].index.column != "searchable_text":
        return None
    tree = scored[0].tree
    if tree.nodeType() != "ATOM" or len(tree.getValue().encode("utf-8")) > MAX_LEXEME_BYTES:
        return None
    return tree.getValue()


def okapi(f: float, dl: float, meandoclen: float, idf1024: float) -> int:
    """``pgcatalog_okapi`` in Python (bounds only: the scores come from SQL)."""
    return math.trunc(f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / meandoclen)) * idf1024 + 0.5)


def _range(edges: tuple[int, ...], bucket: int) -> tuple[float, float]:
    """The values ``width_bucket(value, edges)`` puts in *bucket*."""
    low = edges[bucket - 1] if bucket > 0 else 0
    high = edges[bucket] - 1 if bucket < len(edges) else math.inf
    return low, high


def cell_bounds(meandoclen: float, idf1024: float) -> Iterator[tuple[int, int, int]]:
    """``(bound, f bucket, length bucket)`` of every cell, best bound first:
    a walk over the grid from its best corner (highest frequency, shortest
    rows), each cell after those that bound it.  A rare frequency's class
    is one cell (length bucket 0)."""
    top_f, rare = len(FREQUENCY_EDGES), FREQUENCY_EDGES.index(RARE_FREQUENCY) + 1

    def bound(fb: int, lb: int) -> int:
        f = _range(FREQUENCY_EDGES, fb)[1]
        dl = _range(LENGTH_EDGES, lb)[0]
        if math.isinf(f):
            return math.trunc(2.2 * idf1024 + 0.5)  # (f / (f + k) tends to 1)
        return okapi(f, dl, meandoclen, idf1024)

    start = (top_f, 0)
    heap = [(-bound(*start), *start)]
    seen = {start}
    while heap:
        negative, fb, lb = heapq.heappop(heap)
        yield -negative, fb, lb
        for cell in ((fb - 1, lb), (fb, lb + 1) if fb < rare else (0, 0)):
            if cell[0] >= 1 and cell[1] <= len(LENGTH_EDGES) and cell not in seen:
                seen.add(cell)
                heapq.heappush(heap, (-bound(*cell), *cell))


def best_rows(
    read: Callable[[str, list], list[tuple]],
    word: str,
    where: str,
    params: list,
    documents: float,
    words: float,
    df: int,
    needed: int,
) -> list[tuple[int, str, int]] | None:
    """The *needed* best ``(zoid, path, score)`` of the rows holding *word*
    in their SearchableText and matching *where* (with *params*), best
    first, ties by record id, highest first; all of them where fewer match.
    *documents* and *words* are the index's statistics, *df* the number
    of its rows holding *word*; *read(sql, params)* runs a statement over
    the catalog rows.  None where the word is held by :data:`FEW` rows or
    fewer, or where the walk read more than :data:`MAX_READ` rows without
    an answer: the caller scores every match instead."""
    if not df or not documents:
        return []
    if df <= FEW:
        return None
    meandoclen = words / documents
    idf1024 = math.log(1.0 + documents / df) * 1024.0
    f = f"COALESCE(({_COUNTS} -> 1 ->> %s)::float8, pgcatalog_occurrences(searchable_text, %s, %s::tsquery))"
    # each cell's rows in turn (a nested loop over the keys, in order: OFFSET
    # 0 keeps the subquery apart, scanned for each key), so that LIMIT
    # stops the statement at the cell that fills the page; the query's other
    # criteria only filter the cell's rows (inside COALESCE the planner
    # reads no index for them: ANDed with the bitmap of every row a user
    # may see, a cell of 241 rows took 20 ms)
    sql = (
        "SELECT k.i, r.* FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, i) CROSS JOIN LATERAL ("
        f"SELECT pgcatalog_okapi({f}, ({_COUNTS} ->> 0)::float8, %s::float8 / %s::float8,"
        " ln(1.0::float8 + %s::float8 / %s::bigint) * 1024.0::float8), object_state.zoid, object_state.path"
        f" FROM {ROWS} WHERE {CELLS} && ARRAY[k.key] AND searchable_text IS NOT NULL AND COALESCE(({where}), false)"
        " OFFSET 0) AS r"
        " LIMIT %s"
    )
    head = [word, word, lexeme(word), words, documents, documents, df, *params]
    best: list[tuple[int, int, str]] = []  # (score, zoid, path) of cells read whole, the best first
    cells = cell_bounds(meandoclen, idf1024)
    queued: deque[tuple[int, int, int]] = deque()  # cells to read before the next ones
    batch, whole, read_rows = FIRST_BATCH, False, 0
    while True:
        # once the page is full, only cells that may beat its last row
        # (the bound is Python's float arithmetic: one more for its rounding)
        last = best[-1][0] - 1 if len(best) == needed else None
        keys = []
        while len(keys) < (1 if whole else batch):
            cell = queued.popleft() if queued else next(cells, None)
            if cell is None or (last is not None and cell[0] < last):
                queued.clear()
                break
            keys.append(cell)
        if not keys:
            return [(zoid, path, score) for score, zoid, path in best]
        limit = MAX_READ + 1 if whole or last is not None else needed - len(best)
        rows = read(sql, [[f"{fb} {lb} {word}" for _, fb, lb in keys], *head, limit])
        read_rows += len(rows)
        if read_rows > MAX_READ or any(a[0] > b[0] for a, b in zip(rows, rows[1:], strict=False)):
            return None  # (or the cells came out of order: the statement scores every match)
        whole = False
        if len(rows) == limit and last is None:
            # the page filled up in the cell of the last row, which may be
            # cut short: it is read whole next, then the cells after it
            cut = rows[-1][0]
            queued.extendleft(reversed(keys[cut - 1 :]))
            rows = [row for row in rows if row[0] < cut]
            whole = True
        best = sorted([*best, *((score, zoid, path) for _, score, zoid, path in rows)], reverse=True)[:needed]
        batch *= _GROWTH

"""Where each word's cells begin: for each frequency class below the rare
ones (which have no length class), the shortest length class at which a
catalog row holds the word, remembered.

A walk over the text's cells (:func:`~plone.pgcatalog.cells.best_rows`)
reads cells best bound first, and the best bounds are those of the
shortest rows holding a word often: most of those cells are empty (a
word of a site's titles is held by rows of 20 to 60 words, once to four
times), and crossing them cost more statements than reading the rows.  So
a walk starts each frequency class at the first length class any row
holds the word at, and skips the classes none does.

They are found the first time through the cells' index: for each class,
a probe a length class from the shortest until a row is found (40-85 ms
a word at a million rows).  Then they are remembered, as counts are
(:mod:`~plone.pgcatalog.counts`), with the generation they were read at,
and brought up to date from the change log: the cells of the rows the
commits since wrote, as they are now, can only lower a class's first
length (or open a class).  A row that lost the word, or left, leaves them
where they were: a length class below what any row holds only loosens the
bound, and the walk stays exact.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from plone.pgcatalog import registry as r
from plone.pgcatalog.changes import ALL
from plone.pgcatalog.changes import SINCE
from plone.pgcatalog.changes import signed_rows
from plone.pgcatalog.counts import Remembered
from plone.pgcatalog.counts import side_by_side
from plone.pgcatalog.counts import SIZE
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import unchanged_key
from plone.pgcatalog.database import read
from plone.pgcatalog.frequencies import holding
from plone.pgcatalog.schema import FREQUENCY_EDGES
from plone.pgcatalog.schema import generation_sql
from plone.pgcatalog.schema import LENGTH_EDGES
from plone.pgcatalog.schema import RARE_FREQUENCY
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.text import lexeme
from plone.pgcatalog.values import text_literal
from typing import Any


__all__ = ["Lengths", "clear", "first_lengths", "lengths_statement"]

Lengths = tuple[int, ...]
"""A word's first length class at each frequency class from 1 below the
rare ones (0: no row holds it at that class)."""

_lengths: Remembered = Remembered(SIZE)
"""Each word's :data:`Lengths` by :func:`~plone.pgcatalog.counts.unchanged_key`:
(generation, (lengths, stamp of the commit they were read at))."""

_CLASSES = FREQUENCY_EDGES.index(RARE_FREQUENCY)
"""The frequency classes with a length class (1 to this)."""
_COUNTS = f"word_counts -> {text_literal(r.SEARCHABLE_TEXT)}"
_CELLS = f"pgcatalog_cells(searchable_text, {_COUNTS})"
_FREQUENCIES = "'{" + ",".join(map(str, FREQUENCY_EDGES)) + "}'::int[]"
_LENGTHS = "'{" + ",".join(map(str, LENGTH_EDGES)) + "}'::int[]"

_CELL = (
    f"width_bucket(GREATEST(COALESCE(({_COUNTS} -> 1 ->> %s)::float8::int,"
    f" pgcatalog_occurrences(searchable_text, %s, %s::tsquery)), 1), {_FREQUENCIES}) AS fb,"
    f" width_bucket(COALESCE(({_COUNTS} ->> 0)::float8::int, 0), {_LENGTHS}) AS lb"
)
"""A row's cell of the word (``pgcatalog_cells``' arithmetic)."""

_HELD = f"SELECT FROM {ROWS} WHERE searchable_text IS NOT NULL AND {_CELLS}"
_PROBE = (
    "(SELECT array_agg(COALESCE(("
    f"SELECT lb FROM generate_series(1, {len(LENGTH_EDGES)}) AS lb"
    f" WHERE EXISTS ({_HELD} @> ARRAY[c.fb || ' ' || lb || ' ' || %s])"
    # (a function scan's rows come in order: LIMIT stops at the first held)
    f" LIMIT 1), 0) ORDER BY c.fb) FROM generate_series(1, {_CLASSES}) AS c(fb))"
)
"""Each class's first length class (0: none), found through the cells'
index: a probe a key (the planner takes several keys for most rows, and
reads them all to find none)."""


def lengths_statement(
    catalog: Any, site: str, index: r.IndexDef, word: str
) -> tuple[str, list, Callable[[Sequence[Any]], Lengths]] | None:
    """The statement of *word*'s :data:`Lengths` in the text *index* of
    the catalog rows of tool *catalog* (its site at *site*): its SQL (a row
    of ``counts.WIDTH`` columns), its parameters, and what makes the lengths of that
    row (and remembers them); None in a transaction with catalog changes
    of its own (its rows are not in the cells)."""
    where, where_params = holding(index, word)
    key = unchanged_key(catalog, site, ("lengths", statement_key(where, where_params)))
    if key is None:
        return None
    known_generation, (lengths, stamp) = _lengths.get(key) or (None, (None, None))
    since, signed, signed_params = signed_rows(
        _CELL, where, [word, word, lexeme(word), *where_params], site, stamp
    )
    generation = generation_sql(frozenset({index.changes}))
    # the rows written since, as they are now: each class's shortest
    lowered = (
        "(SELECT array_agg(LEAST(NULLIF(k.lb, 0), s.lb) ORDER BY k.fb)"
        " FROM unnest(%s::int[]) WITH ORDINALITY AS k(lb, fb)"
        " LEFT JOIN (SELECT fb, min(lb) AS lb FROM pgcatalog_signed WHERE sign > 0 GROUP BY fb) AS s"
        " ON s.fb = k.fb)"
    )
    sql = (
        f"WITH {since},\npgcatalog_signed AS MATERIALIZED ({signed})\n"
        f"SELECT CASE WHEN {generation} = %s THEN %s::int[]"
        f" WHEN (SELECT changed FROM {SINCE}) = '{ALL}' THEN {_PROBE}"
        f" ELSE {lowered} END,"
        f" {generation}, (SELECT stamp FROM {SINCE}), (SELECT changed FROM {SINCE})"
    )
    known = list(lengths) if lengths is not None else None

    def made(row: Sequence[Any]) -> Lengths:
        found, made_at, made_stamp, _ = row
        answer = tuple(lb or 0 for lb in found) if found else (0,) * _CLASSES
        _lengths.put(key, made_at, (answer, made_stamp))
        return answer

    return sql, [*signed_params, known_generation, known, word, known], made


def first_lengths(catalog: Any, site: str, index: r.IndexDef, words: Sequence[str]) -> list[Lengths] | None:
    """The :data:`Lengths` of each of *words* (:func:`lengths_statement`),
    in order, in one statement; None in a transaction with catalog changes
    of its own."""
    found = [lengths_statement(catalog, site, index, word) for word in words]
    statements = [statement for statement in found if statement is not None]
    if len(statements) < len(found):
        return None
    sql, params, made = side_by_side(statements)
    return made(read(catalog, f"SELECT * FROM {sql}", params, site=site)[0])


def clear() -> None:
    """Forget every word's lengths (tests start from nothing)."""
    _lengths.clear()

"""Each word's highest frequency class in the text's cells (below the rare
ones, which have no length class), remembered.

A walk over several words' cells (:func:`~plone.pgcatalog.cells.best_rows`)
reads the combinations of their cells best bound first; most are empty
(no row holds the word that often), and crossing them would cost more than
scoring every match.  So each word's combinations stop at the highest
frequency class (``schema.FREQUENCY_EDGES``) any catalog row holds it at.

The class is found the first time through the cells' index: one probe a
class, from the highest down, each over the class's keys at every length,
until a row is found.  Then it is remembered, as counts are
(:mod:`~plone.pgcatalog.counts`), with the generation it was read at, and
brought up to date from the change log: the highest class of the rows the
commits since wrote, as they are now.  A row that lost the word, or left,
leaves the class where it was: a class above what any row holds only
loosens the bound, and the walk stays exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from plone.pgcatalog import registry as r
from plone.pgcatalog.changes import ALL
from plone.pgcatalog.changes import SINCE
from plone.pgcatalog.changes import signed_rows
from plone.pgcatalog.counts import Remembered
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


__all__ = ["top_classes"]

_tops = Remembered(SIZE)
"""Each word's class by :func:`~plone.pgcatalog.counts.unchanged_key`:
(generation, (class, stamp of the commit it was read at))."""

_EDGES = "'{" + ",".join(map(str, FREQUENCY_EDGES)) + "}'::int[]"
_RARE = FREQUENCY_EDGES.index(RARE_FREQUENCY) + 1
_COUNTS = f"word_counts -> {text_literal(r.SEARCHABLE_TEXT)}"
_CELLS = f"pgcatalog_cells(searchable_text, {_COUNTS})"

_CLASS = (
    f"width_bucket(GREATEST(COALESCE(({_COUNTS} -> 1 ->> %s)::float8::int,"
    f" pgcatalog_occurrences(searchable_text, %s, %s::tsquery)), 1), {_EDGES}) AS top_class"
)
"""A row's class of the word (``pgcatalog_cells``' arithmetic)."""

_PROBE = (
    f"(SELECT fb FROM generate_series({_RARE - 1}, 1, -1) AS fb"
    f" WHERE EXISTS (SELECT FROM {ROWS} WHERE searchable_text IS NOT NULL AND {_CELLS}"
    f" && ARRAY(SELECT fb || ' ' || lb || ' ' || %s FROM generate_series(1, {len(LENGTH_EDGES)}) AS lb))"
    " LIMIT 1)"
)
"""The highest class below the rare ones held (NULL: none), found through
the cells' index."""


def _statement(catalog: Any, site: str, index: r.IndexDef, word: str) -> tuple[str, list, Any] | None:
    """The statement of one word's class, its parameters and its key."""
    where, where_params = holding(index, word)
    key = unchanged_key(catalog, site, ("top", statement_key(where, where_params)))
    if key is None:
        return None
    known_generation, (top, stamp) = _tops.get(key) or (None, (None, None))
    since, signed, signed_params = signed_rows(
        _CLASS, where, [word, word, lexeme(word), *where_params], site, stamp
    )
    generation = generation_sql(frozenset({index.changes}))
    sql = (
        f"WITH {since},\npgcatalog_signed AS MATERIALIZED ({signed})\n"
        f"SELECT CASE WHEN {generation} = %s THEN %s::int"
        f" WHEN (SELECT changed FROM {SINCE}) = '{ALL}' THEN {_PROBE}"
        " ELSE GREATEST(%s::int, (SELECT max(top_class) FROM pgcatalog_signed"
        f" WHERE sign > 0 AND top_class < {_RARE})) END,"
        f" {generation}, (SELECT stamp FROM {SINCE})"
    )
    return sql, [*signed_params, known_generation, top, word, top], key


def top_classes(catalog: Any, site: str, index: r.IndexDef, words: Sequence[str]) -> list[int] | None:
    """The highest frequency class below the rare ones at which a catalog
    row of tool *catalog* (its site at *site*) holds each of *words* in its
    text *index*, in order (0 where none does), in one statement; None in a transaction
    with catalog changes of its own (its rows are not in the cells)."""
    found = [_statement(catalog, site, index, word) for word in words]
    statements = [statement for statement in found if statement is not None]
    if len(statements) < len(found):
        return None
    sql = "SELECT * FROM " + " CROSS JOIN ".join(
        f"({s[0]}) AS pgcatalog_top{n}" for n, s in enumerate(statements)
    )
    row = read(catalog, sql, [p for s in statements for p in s[1]], site=site)[0]
    classes = []
    for n, (_, _, key) in enumerate(statements):
        top, made_at, stamp = row[3 * n : 3 * n + 3]
        _tops.put(key, made_at, (top, stamp))
        classes.append(top or 0)
    return classes


def clear() -> None:
    """Forget every class (tests start from nothing)."""
    _tops.clear()

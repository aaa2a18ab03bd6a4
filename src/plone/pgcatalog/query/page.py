"""A page of a search: its order, its window of rows, their count and the
metadata of the first of them, in one statement.

Every statement that selects a search's rows is written here, and selects
the columns of a :class:`Row` in its order (NULL where a search does not
ask for one), so that the rows are named whatever the page asked for.
The count comes from :mod:`~plone.pgcatalog.counts` (a remembered number
or a count), the scores from :mod:`~plone.pgcatalog.relevance`.
"""

from __future__ import annotations

from typing import Any
from typing import TYPE_CHECKING

from dataclasses import dataclass
from dataclasses import replace
from operator import itemgetter
from plone.pgcatalog import registry as r
from plone.pgcatalog.query.statement import as_filter
from plone.pgcatalog.query.statement import Statement
from plone.pgcatalog.relevance import Scored
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS

import math


if TYPE_CHECKING:
    from plone.pgcatalog.counts import Count


__all__ = [
    "WALK_MAX_ROWS",
    "Ordering",
    "Row",
    "add_sort",
    "index_keys_sql",
    "iterates_index",
    "keys_needed",
    "keyed_count_sql",
    "ordered_sql",
    "scored_rows",
    "scored_sql",
    "top_sql",
    "walk_rows",
]


class Row(tuple):
    """A row of a search's page, as every page statement selects it:
    ``(zoid, path, score, normalized_score, count, generation, meta)``.

    A tuple subclass without a constructor of its own: a row of the
    database becomes one at the cost of a tuple copy.
    """

    __slots__ = ()

    zoid = property(itemgetter(0), doc="the record id")
    path = property(itemgetter(1))
    score = property(itemgetter(2), doc="ZCatalog's data_record_score_ of a relevance order, else None")
    normalized_score = property(itemgetter(3), doc="data_record_normalized_score_, or None")
    count = property(itemgetter(4), doc="the number of matches, where the page counts them")
    generation = property(itemgetter(5), doc="the catalog's generation at the count (counts.Count)")
    meta = property(itemgetter(6), doc="the stored metadata (JSON text), where the page selects it")

    def with_meta(self, meta: Any) -> Row:
        """This row with *meta* for its metadata."""
        return Row((*self[:6], meta))

    def __repr__(self) -> str:
        return f"Row{tuple.__repr__(self)}"


# What a page selects where it asks for no score, count or metadata
_NO_SCORE = "NULL, NULL"
_NO_COUNT = "NULL, NULL"
_NO_META = "NULL"


@dataclass(frozen=True)
class Ordering:
    """The order of a search's matches: ``sort_on``'s keys, or else the
    relevance of its text indexes, or else the record id."""

    terms: tuple[str, ...] = ()  # ORDER BY of the sort keys
    # The rows holding every sort key (ZCatalog drops the others)
    keyed: tuple[str, ...] = ()
    # Ties are broken by record id as ZCatalog's sort does: in the
    # direction of a single sort key (it sorts (key, rid) pairs), else
    # ascending (its sort of several keys is stable, over the matches in
    # record id order); see also :func:`iterates_index`.
    tiebreak: str = "zoid"
    # The text indexes whose Okapi BM25 scores order the matches (without
    # sort_on)
    scored: tuple[Scored, ...] = ()
    # The one sort key, when a B-tree index on (key, zoid) serves it and
    # no clause keeps the result small: a short page of the result can
    # then be read off that index (top_sql).
    walk_key: tuple[str, str] | None = None  # (its expression, the direction)
    # The statement's one portal_type, when the sort key's B-tree is led
    # by portal_type (a DateIndex)
    walk_type: tuple[str, str] | None = None
    # What the sort keys read (IndexDef.changes): :meth:`where_sql` keeps
    # the rows holding them
    reads: frozenset[str] = frozenset()

    def where_sql(self, stmt: Statement) -> str:
        """*stmt*'s WHERE, of the rows that hold every sort key."""
        return " AND ".join([*stmt.where, *self.keyed]) if self.keyed else stmt.where_sql()

    def order_sql(self) -> str:
        """ORDER BY of the sort keys, then the record id: a total order, so
        that windows and batches are stable (ZCatalog's unsorted results
        come in record id order too)."""
        return ", ".join([*self.terms, self.tiebreak])

    def with_ascending_ties(self) -> Ordering:
        """This order with ties in ascending record id order."""
        return replace(self, tiebreak="zoid ASC")

    def walks(self, needed: int) -> bool:
        """Whether the first *needed* rows are best sought along the sort
        index (:func:`top_sql`)."""
        return self.walk_key is not None and 0 < needed <= WALK_MAX_ROWS


# A page of at most this many rows is first sought by walking the sort index
WALK_MAX_ROWS = 1000


def add_sort(stmt: Statement, spec: list[tuple[r.IndexDef, bool]]) -> Ordering:
    """The order of *stmt*'s matches by *spec* (:func:`~.indexquery.sort_spec`);
    rows lacking a key are dropped, as in ZCatalog.  Without keys the
    matches of a text query come by relevance."""
    if not spec:
        return Ordering(scored=tuple(stmt.scored))
    terms, keyed = [], []
    for index, descending in spec:
        expr = index.expression()
        direction = "DESC" if descending else "ASC"
        # a folder's or a UID's few rows need no bitmap of the whole sort index
        keyed.append(as_filter(f"{expr} IS NOT NULL", stmt))
        terms.append(f"{_sort_key(index, expr)} {direction}")
    index, descending = spec[0]
    walk_key = walk_type = None
    if len(spec) == 1 and (index.kind in r.BTREE_KINDS or index.kind == r.PATH) and not stmt.selective:
        walk_key = (index.expression(), "DESC" if descending else "ASC")
        if index.kind == r.DATE:
            walk_type = stmt.walk_type
    reads = frozenset(index.changes for index, _ in spec)
    tiebreak = f"zoid {direction}" if len(spec) == 1 else "zoid ASC"
    return Ordering(tuple(terms), tuple(keyed), tiebreak, (), walk_key, walk_type, reads)


def iterates_index(matches: int, keys: int) -> bool:
    """Whether ZCatalog sorts *matches* (no limit asked) by walking its
    sort index of *keys* keys, each key's matches in record id order,
    rather than by sorting the (key, rid) pairs (``Catalog.sortResults``).
    Reversed, its ties then come in ascending record id order."""
    return matches > keys * (matches / 100 + 1)


def keys_needed(matches: int) -> int:
    """How many keys of the sort index tell :func:`iterates_index` for
    *matches* (it is false from that many keys on; never more than 100)."""
    return math.ceil(100 * matches / (matches + 100))


def index_keys_sql(index: r.IndexDef, cap: int) -> str:
    """The number of keys ZCatalog's sort index for *index* holds
    (``len(index)``), counted up to *cap*: its distinct values (a
    keyword's or occurrence's each), or a BooleanIndex's documents."""
    expr = index.expression()
    if index.kind == r.BOOLEAN:
        keys = f"SELECT 1 FROM {ROWS} WHERE {CATALOGED} AND {expr} IS NOT NULL LIMIT {cap:d}"
    elif index.kind in (r.KEYWORD, r.DATE_RECURRING):
        keys = (
            f"SELECT DISTINCT k FROM {ROWS}, jsonb_array_elements({expr}) AS k "
            f"WHERE {CATALOGED} AND jsonb_typeof({expr}) = 'array' LIMIT {cap:d}"
        )
    else:
        keys = f"SELECT DISTINCT {expr} FROM {ROWS} WHERE {CATALOGED} AND {expr} IS NOT NULL LIMIT {cap:d}"
    return f"SELECT count(*) FROM ({keys}) AS keys"


def _sort_key(index: r.IndexDef, expr: str) -> str:
    """What rows sort by on *index*.  A DateRecurringIndex sorts by the
    tuple of a document's occurrences (ZCatalog's key map holds them in
    ascending order), compared as tuples are: a SQL array, not the JSON
    array, which PostgreSQL orders by length first."""
    if index.kind == r.DATE_RECURRING:
        return f"ARRAY(SELECT o.v::bigint FROM jsonb_array_elements_text({expr}) WITH ORDINALITY AS o(v, n) ORDER BY o.n)"
    return expr


def keyed_count_sql(stmt: Statement, ordering: Ordering, limit: int) -> tuple[str, list]:
    """``count(*)`` of the first *limit* matches of *stmt* and how many of
    them hold every sort key: ZCatalog takes a batch that starts past the
    middle of the matches from their end."""
    keyed = " AND ".join(ordering.keyed) or "true"
    sql = (
        f"SELECT count(*), count(*) FILTER (WHERE keyed) FROM "
        f"(SELECT {keyed} AS keyed FROM {ROWS} WHERE {stmt.where_sql()} LIMIT %s) AS matched"
    )
    return sql, [*stmt.params, limit]


def ordered_sql(
    where: str,
    params: list,
    order: str,
    tail: str,
    tail_params: list,
    count: Count | None = None,
    metadata: bool = False,
    first: int = 0,
) -> tuple[str, list]:
    """The :class:`Row` of each match of *where* in *order*, *tail* (LIMIT,
    OFFSET) appended: with the *count* of the matches, with the stored
    metadata (*metadata*), or with that of the *first* rows only (NULL
    after them)."""
    counted, head = (count.sql, count.params) if count is not None else (_NO_COUNT, [])
    meta = "meta" if metadata else _NO_META
    ordered = f"{where} ORDER BY {order} {tail}"
    if not first:
        sql = f"SELECT zoid, path, {_NO_SCORE}, {counted}, {meta} FROM {ROWS} WHERE {ordered}"
    else:
        # the rows leave the subquery in its order, which the numbering keeps
        sql = (
            f"SELECT s.*, {first_metadata_sql('row_number() OVER ()', first)} "
            f"FROM (SELECT zoid, path, {_NO_SCORE}, {counted} FROM {ROWS} WHERE {ordered}) AS s"
        )
    return sql, [*head, *params, *tail_params]


def scored_sql(
    tail: str, scale: tuple[int, int], counted: bool = False, metadata: bool = False, first: int = 0
) -> str:
    """Select from :func:`~plone.pgcatalog.relevance.ranked_sql`'s matches,
    best first (ties by record id, highest first, as ZCatalog orders them),
    as :class:`Row` s with ZCatalog's two scores: ``data_record_score_``,
    the text score as the query's other indexes *scale* it (``a * score +
    b``, see :func:`~plone.pgcatalog.relevance.score_scale`), and
    ``data_record_normalized_score_``, that over the best match's in per
    cent, truncated, with ZCatalog's float operations in its order (NULL
    where the best is 0).  With the matches' number when *counted*, the
    stored metadata of the selected rows when *metadata*, or of the *first*
    ones only (NULL after them); *tail* (LIMIT, OFFSET) applies to the
    matches."""
    a, b = (int(n) for n in scale)
    counts = "count(*) OVER (), NULL" if counted else _NO_COUNT
    columns = (
        f"zoid, path, {a} * score + {b} AS score, trunc(100.0::float8 * ({a} * score + {b})::float8"
        f" / NULLIF({a} * max(score) OVER () + {b}, 0)::float8)::bigint, {counts}"
    )
    order, outer = "score DESC, zoid DESC", "s.score DESC, s.zoid DESC"
    if not (first or metadata):
        return f"SELECT {columns}, {_NO_META} FROM pgcatalog_scored ORDER BY {order} {tail}"
    sql = f"SELECT {columns} FROM pgcatalog_scored ORDER BY {order} {tail}"
    if first:
        return (
            f"SELECT s.*, {first_metadata_sql(f'row_number() OVER (ORDER BY {outer})', first)} "
            f"FROM ({sql}) AS s ORDER BY {outer}"
        )
    return f"SELECT s.*, o.meta FROM ({sql}) AS s LEFT JOIN object_state o ON o.zoid = s.zoid ORDER BY {outer}"


def scored_rows(rows: list[tuple]) -> list[Row]:
    """The :class:`Row` s of :func:`scored_sql`'s rows.  Where every match
    scores 0 (and no other index adds to the scores), ZCatalog's normalised
    score divides by zero: so does this."""
    if rows and rows[0][3] is None:
        raise ZeroDivisionError("float division by zero")
    return list(map(Row, rows))


def first_metadata_sql(number: str, first: int, alias: str = "s") -> str:
    """The stored metadata of a row of table *alias* numbered *number*
    (SQL) when it is one of the *first* rows, else NULL: a search's first
    window of metadata, selected with its rows."""
    return (
        f"CASE WHEN {number} <= {int(first)} "
        f"THEN (SELECT o.meta FROM object_state o WHERE o.zoid = {alias}.zoid) END"
    )


def top_sql(
    stmt: Statement, ordering: Ordering, needed: int, offset: int, metadata: bool = False
) -> tuple[str, list]:
    """The :class:`Row` (with its stored metadata with *metadata*) of rows
    ``offset`` to ``needed`` of a search sorted on one key, in one
    statement (over :data:`ROWS`).

    The planner takes the clauses of a catalog query as independent, but
    all of them hold only on catalog rows (a few percent of
    ``object_state``), so it underestimates large results by orders of
    magnitude and sorts all matches where walking the sort index would
    stop after a page.  So the statement first walks the index itself, up
    to :func:`walk_rows` entries, testing each row; only when that finds
    too few matches (a selective query) does it run the plain query,
    which the planner then serves well from the other indexes.
    """
    key, direction = ordering.walk_key
    order = f"{key} {direction}, zoid {direction}"
    where = ordering.where_sql(stmt)
    row = "zoid, path, meta" if metadata else "zoid, path"
    walk, walk_params = f"{key} IS NOT NULL", []
    if ordering.walk_type is not None:
        walk += f" AND {ordering.walk_type[0]} = %s"
        walk_params.append(ordering.walk_type[1])
    sql = f"""WITH hits AS (
  SELECT {row}, k FROM (
    SELECT {row}, {key} AS k, ({where}) AS ok FROM {ROWS}
     WHERE {walk} ORDER BY {order} LIMIT %s) AS walk
   WHERE ok LIMIT %s)
SELECT zoid, path, {_NO_SCORE}, {_NO_COUNT}, {"meta" if metadata else _NO_META} FROM (
  SELECT {row}, k FROM hits WHERE (SELECT count(*) FROM hits) = %s
  UNION ALL
  (SELECT {row}, {key} FROM {ROWS}
    WHERE {where} AND (SELECT count(*) FROM hits) < %s ORDER BY {order} LIMIT %s)
) AS top ORDER BY k {direction}, zoid {direction} OFFSET %s"""
    params = [
        *stmt.params,
        *walk_params,
        walk_rows(needed),
        needed,
        needed,
        *stmt.params,
        needed,
        needed,
        offset,
    ]
    return sql, params


def walk_rows(needed: int) -> int:
    """How far along the sort index to look for *needed* matches before
    falling back: far enough when at least ~1 row in 10 matches."""
    return 10 * needed + 200

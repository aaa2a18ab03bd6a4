"""The compiler: a ZCatalog query dict → one :class:`~.statement.Statement`.

Semantics follow ``Products.ZCatalog.Catalog.search``: only keys naming an
index take part; the parts are ANDed; a part that can match nothing (a
``None`` value, an empty text query) empties the whole result; a query in
which no index takes part finds nothing.  Which part fails, when several
would, is the one ZCatalog meets first.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Mapping
from collections.abc import Sequence
from plone.pgcatalog import registry as r
from plone.pgcatalog.expansions import Glob
from plone.pgcatalog.query.indexquery import canonical
from plone.pgcatalog.query.indexquery import IndexQuery
from plone.pgcatalog.query.indexquery import index_query
from plone.pgcatalog.query.kinds import CLAUSES
from plone.pgcatalog.query.kinds import Context
from plone.pgcatalog.query.kinds import custom
from plone.pgcatalog.query.statement import Nothing
from plone.pgcatalog.query.statement import Statement
from plone.pgcatalog.query.statement import TRAILING
from plone.pgcatalog.relevance import score_scale


__all__ = ["Fault", "build", "where_of"]


class Fault(Exception):
    """A part of the query ZCatalog would fail on (*error*), unless the
    parts it applies before that one (*before*, a statement, or None when
    there are none) find nothing: it stops there and answers nothing."""

    def __init__(self, error: Exception, before: Statement | None):
        super().__init__(str(error))
        self.error = error
        self.before = before


def build(
    query: dict,
    indexes: Mapping[str, r.IndexDef],
    lexicons: Mapping[str, Any] | None = None,
    catalog_path: Sequence[str] = (),
    expansions: Mapping[Glob, tuple[str, ...]] | None = None,
) -> Statement | None:
    """Compile *query*; None means "matches nothing".  *catalog_path* is the
    catalog's physical path (ExtendedPathIndex counts levels after the part a
    query path shares with it); *expansions* the words of globs to compile
    as words (:mod:`~plone.pgcatalog.expansions`)."""
    named = [index for index in indexes.values() if index.name in query]
    if not named:
        return None
    context = Context(lexicons or {}, catalog_path, expansions or {})
    stmt = Statement(where=[], params=[])
    # ZCatalog applies the indexes one by one and stops at the first that
    # finds nothing, so a later index's fault never shows.  Untimed, its
    # order is by name, the indexes that take a result set to limit last:
    # the outcome here is the one it gives in that order.
    zorder = sorted(named, key=lambda index: (index.kind not in _UNLIMITED_KINDS, index.name))
    rank = {index.name: n for n, index in enumerate(zorder)}
    empty_at, faults = len(zorder), []
    # UID and path clauses first, then the type, the security clauses
    # last: when others lead, these are written as filters (see statement.as_filter)
    for index in sorted(
        named,
        key=lambda index: (
            index.name in TRAILING,
            index.kind not in (r.UUID, r.PATH),
            index.name != r.TYPE_INDEX,
        ),
    ):
        try:
            _clause(index, query, stmt, context)
        except Nothing:
            empty_at = min(empty_at, rank[index.name])
        except Exception as exc:  # raised below unless an earlier index ends the search
            faults.append((rank[index.name], exc))
    fault = min(faults, key=lambda pair: pair[0], default=None)
    if fault is not None and fault[0] < empty_at:
        before = None
        if fault[0]:
            before = Statement(where=[], params=[])
            for index in zorder[: fault[0]]:
                _clause(index, query, before, context)
        raise Fault(fault[1], before)
    if empty_at < len(zorder):
        return None
    stmt.scale = score_scale(named)
    return stmt


def where_of(
    query: dict, indexes: Mapping[str, r.IndexDef], lexicons: Mapping[str, Any], catalog_path: Sequence[str]
) -> tuple[str, list] | None:
    """The WHERE of *query* as given (lists not yet sorted) and its
    parameters, None where it matches nothing; the error of a part
    ZCatalog fails on is raised.  For the calls that count or suggest
    rather than search, which have no empty result to give instead."""
    try:
        stmt = build(canonical(query), indexes, lexicons, catalog_path)
    except Fault as fault:
        raise fault.error from None
    return None if stmt is None else (stmt.where_sql(), stmt.params)


# The kinds whose stock index does not limit a result set it is handed
# (ZCatalog applies them first)
_UNLIMITED_KINDS = (r.TEXT, r.GOPIP)


def _clause(index: r.IndexDef, query: dict, stmt: Statement, context: Context) -> None:
    """Add *index*'s part of *query* to *stmt* (or raise Nothing)."""
    kind = index.kind
    if kind == r.GOPIP:
        # ZCatalog's GopipIndex only sorts: as a filter it answers
        # nothing, which ends the search with no results
        raise Nothing
    q = index_query(query, index)
    if kind in _UNINDEX_KINDS:
        _cache_key(q)
        range_ = q.get("range")
        if range_ and not isinstance(range_, str):
            # UnIndex looks for "min" and "max" in it with str.find
            raise TypeError(f"index {index.name!r}: range {range_!r} is not text")
    CLAUSES.get(kind, custom)(index, q, stmt, context)
    stmt.reads.add(index.changes)


# The kinds whose stock index is UnIndex's query_index, with its request cache
_UNINDEX_KINDS = (r.FIELD, r.UUID, r.DATE, r.KEYWORD, r.DATE_RECURRING)


def _cache_key(q: IndexQuery) -> None:
    """Raise ``TypeError`` where UnIndex does: it keys a request cache by
    the query's keys, ``not`` values and range, so an unhashable one (a
    list inside the list) fails the search."""
    frozenset(q.keys)
    frozenset(q.get("not") or ())
    hash(q.get("range"))
    hash(q.get("usage"))

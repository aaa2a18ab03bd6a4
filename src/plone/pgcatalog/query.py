"""ZCatalog query dict → one parameterised SQL statement.

One small function per index kind turns that index's part of the query
into a WHERE clause.  Every value is a bound parameter; the only SQL text
that varies comes from :class:`~plone.pgcatalog.registry.IndexDef`
expressions, i.e. from the registry, never from the caller.

Semantics follow ``Products.ZCatalog.Catalog.search``: only keys naming an
index take part; the parts are ANDed; a part that can match nothing (a
``None`` value, an empty text query) empties the whole result; a query in
which no index takes part finds nothing.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from functools import partial
from DateTime import DateTime
from plone.pgcatalog import registry as r
from plone.pgcatalog.paths import EVERYTHING
from plone.pgcatalog.paths import NOTHING
from plone.pgcatalog.paths import path_condition
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.schema import type_expression
from plone.pgcatalog.relevance import score_scale
from plone.pgcatalog.relevance import Scored
from plone.pgcatalog.text import parse
from plone.pgcatalog.text import text_condition
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.values import date_minutes
from plone.pgcatalog.values import json_text
from plone.pgcatalog.values import range_minutes
from Products.ZCatalog.ZCatalog import CatalogError
from ZPublisher.HTTPRequest import record

import math


__all__ = [
    "Fault",
    "IndexQuery",
    "Statement",
    "add_sort",
    "build",
    "canonical",
    "index_query",
    "merge_query",
    "sort_names",
    "sort_spec",
    "top_sql",
    "walk_rows",
]


class Nothing(Exception):
    """Raised inside the builder when a part of the query matches nothing."""


class Fault(Exception):
    """A part of the query ZCatalog would fail on (*error*), unless the
    parts it applies before that one (*before*, a statement, or None when
    there are none) find nothing: it stops there and answers nothing."""

    def __init__(self, error: Exception, before: Statement | None):
        super().__init__(str(error))
        self.error = error
        self.before = before


@dataclass
class IndexQuery:
    """ZCatalog's ``IndexQuery``: keys plus validated options for one index."""

    keys: list
    options: dict = field(default_factory=dict)

    def get(self, name, default=None):
        return self.options.get(name, default)


def merge_query(query: Any = None, **kw) -> dict:
    """``Catalog.merge_query_args``: a new dict; a non-dict first argument
    (such as a REQUEST) is ignored, keywords win."""
    merged = {}
    if isinstance(query, (dict, record)) or (isinstance(query, Mapping) and not hasattr(query, "form")):
        merged.update(query)
    merged.update(kw)
    return merged


def canonical(query: dict) -> dict:
    """*query* as ``Catalog.make_query`` canonicalises it: every list or
    tuple value sorted (a ``TypeError`` if its items cannot be ordered:
    ``None`` or an interface among names, names among numbers)."""
    return {key: sorted(v) if isinstance(v, (list, tuple)) else v for key, v in query.items()}


def index_query(query: dict, index: r.IndexDef) -> IndexQuery:
    """Parse one index's part of *query* (which names it) as ZCatalog's
    ``IndexQuery`` does."""
    name = index.name
    param = query[name]
    options = {}
    if isinstance(param, (dict, record)):
        value = param.get("query", ())
        keys = list(value) if isinstance(value, (tuple, list)) else [value]
        for option in param.keys():
            if option == "query":
                continue
            options[option] = param[option]
    else:
        keys = list(param) if isinstance(param, (tuple, list)) else [param]
        prefix = name + "_"
        for key in query:
            if isinstance(key, str) and key.startswith(prefix):
                options[key[len(prefix) :]] = query[key]
    for option in options:
        if option not in index.query_options:
            raise ValueError(f"index {name!r}: option {option!r} is not valid")
    operator = options.get("operator", "or")
    if not isinstance(operator, str) or operator.lower() not in ("or", "and"):
        raise ValueError(f"index {name!r}: operator {operator!r} is not valid")
    options["operator"] = operator.lower()
    not_value = options.get("not")
    if not_value is not None and not isinstance(not_value, (tuple, list)):
        options["not"] = [not_value]
    return IndexQuery(keys, options)


@dataclass
class Statement:
    """A compiled search: WHERE, ORDER BY and paging, with parameters."""

    where: list[str]
    params: list
    order: list[str] = field(default_factory=list)
    # The text indexes of the query: without sort_on, matches come in
    # order of their Okapi BM25 scores (see relevance)
    scored: list[Scored] = field(default_factory=list)
    # ZCatalog's score of a match is scale[0] * (sum of its text scores) + scale[1]
    scale: tuple[int, int] = (1, 0)
    # Whether some clause is false for rows that are not cataloged (their
    # catalog columns are NULL).  Then ``idx IS NOT NULL`` is left out: the
    # planner would take it as independent of the other clauses and
    # underestimate every result ~25-fold on a typical site.
    strict: bool = False
    # Ties are broken by record id, in the direction of the last sort key,
    # as ZCatalog's sort of (key, rid) pairs does.
    tiebreak: str = "zoid"
    # The one sort key, when a B-tree index on (key, zoid) serves it: a
    # short page of the result can then be read off that index (top_sql).
    walk_key: tuple[str, str] | None = None
    # The one ``portal_type`` the query asks for, kept when the sort key has
    # a B-tree led by portal_type (a DateIndex): the walk then reads only
    # that type's entries.
    walk_type: tuple[str, str] | None = None  # (its expression, the type)
    # A clause that keeps the result small (a UID, an object or a folder's
    # children): the plain plan then beats walking the sort index.
    selective: bool = False
    # A clause on the typed ``portal_type``: the hot keys' covering index
    # (schema.HOT_KEYS_INDEX) holds what the security and effective range
    # clauses test, so the matches are counted from that index alone
    # (search._ordered_select) while their first rows come off an index.
    covered: bool = False

    def where_sql(self) -> str:
        return " AND ".join(self.where if self.strict else [CATALOGED, *self.where])

    def walks(self, needed: int) -> bool:
        """Whether the first *needed* rows are best sought along the sort
        index (:func:`top_sql`)."""
        return self.walk_key is not None and not self.selective and 0 < needed <= WALK_MAX_ROWS


# A page of at most this many rows is first sought by walking the sort index
WALK_MAX_ROWS = 1000


# -- per kind -----------------------------------------------------------------


class _Bound:
    """A query value that ZCatalog's BTrees order before (BELOW) or after
    (ABOVE) every key they hold: ``-inf`` and ``inf``."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


BELOW = _Bound("BELOW")
ABOVE = _Bound("ABOVE")


class _Unstorable:
    """A query value no catalog row can hold (text with NUL or a lone
    surrogate, which PostgreSQL cannot store; ``nan``): it equals nothing
    and cannot bound a range."""

    def __init__(self, value):
        self.value = value


class _Uncomparable(_Unstorable):
    """A value of a type keys are never of (bytes, mappings, objects):
    ZCatalog's BTree lookup fails on it, so it equals nothing, and a range
    over it is a ``TypeError``."""


class _TextNumber(str):
    """A number queried on a text index, as the text it is stored as."""

    def __new__(cls, number):
        text = super().__new__(cls, json_text(number))
        text.value = number
        return text


def _text_ok(text: str) -> bool:
    """Whether PostgreSQL can hold *text* (no NUL, valid UTF-8)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar(index: r.IndexDef, value):
    """A query value in the form the index's expression compares, or one
    of the markers above."""
    if index.kind in (r.DATE, r.DATE_RECURRING):
        # DateTime's own errors for unreadable dates, as DateIndex raises them
        converted = date_minutes(
            value,
            naive_as_local=index.options.get("naive_as_local", True),
            precision=index.options.get("precision", 0),
            clamp=index.kind == r.DATE,
        )
        return _Uncomparable(value) if converted is None else converted
    if index.kind == r.BOOLEAN:
        return bool(value)
    if index.sql_type == "text":
        if isinstance(value, str):
            return value if _text_ok(value) else _Unstorable(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            # equals its text: a field index taken for text may hold numbers
            # (cmf_uid); ranges and ``not`` refuse it (see _text_key)
            return _TextNumber(value)
        # the BTree of a text index orders nothing but text among its keys
        return _Uncomparable(value)
    if isinstance(value, DateTime):
        return value.toZone("UTC").ISO8601()
    if isinstance(value, str):
        return value if _text_ok(value) else _Unstorable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _Unstorable(value) if math.isnan(value) else (ABOVE if value > 0 else BELOW)
    if isinstance(value, (int, float)):
        return value
    # an interface object too: it cannot be ordered among names
    return _Uncomparable(value)


def _keys(index: r.IndexDef, values) -> list:
    """The values that can equal a stored key (the others match nothing)."""
    keys = (_scalar(index, v) for v in values if v is not None)
    return [k for k in keys if not isinstance(k, (_Bound, _Unstorable))]


def _not_keys(index: r.IndexDef, q: IndexQuery) -> list:
    """The keys a ``not`` option excludes.  UnIndex looks each one up in
    its BTree without the guard its equality lookups have, so a value that
    cannot be compared with the keys fails the search."""
    dates = index.kind in (r.DATE, r.DATE_RECURRING)
    if dates and any(k is not None for k in q.keys):
        # beside a query, UnIndex looks dates up unconverted, among keys of
        # its own integer encoding: nothing is excluded (or, for some
        # values, its BTree fails: its own fault)
        return []
    keys = []
    text_keys = index.value_type == r.TEXT_VALUE
    for value in q.get("not") or ():
        if value is None:
            continue
        if (
            index.kind in (r.FIELD, r.UUID, r.KEYWORD)
            and index.decided
            and isinstance(value, str) != text_keys
        ):
            # a BTree of text keys compares with text only (of numbers, with numbers)
            raise TypeError(f"index {index.name!r}: cannot compare {value!r} with the keys of the index")
        key = _scalar(index, value)
        if isinstance(key, _Uncomparable) and dates:
            continue  # DateIndex makes None of it, which matches no key
        if isinstance(key, (_Uncomparable, _TextNumber)):
            raise TypeError(f"index {index.name!r}: cannot compare {value!r} with the keys of the index")
        if not isinstance(key, (_Bound, _Unstorable)):
            keys.append(key)
    return keys


def _bounds(index: r.IndexDef, values: list, spec: str) -> tuple:
    """``(lo, hi)`` of a range query as UnIndex computes them: ``min()``
    and ``max()`` of the query's keys (None among them; a date index makes
    None of what it cannot read), a false upper bound being none.  Only
    the bounds meet the keys of the index, so only their types count.
    Raises Nothing when no key can lie in the range."""
    if index.kind in (r.DATE, r.DATE_RECURRING):
        keys = [None if v is None else _scalar(index, v) for v in values]
        values = [None if isinstance(k, _Uncomparable) else k for k in keys]
    # Python's own TypeError where the keys cannot be ordered, as there
    lo = min(values) if "min" in spec else None
    hi = max(values) if "max" in spec else None
    if not hi:
        hi = None
    if index.kind in (r.DATE, r.DATE_RECURRING):
        return lo, hi
    lo, hi = (None if bound is None else _bound_key(index, bound) for bound in (lo, hi))
    if lo is ABOVE or hi is BELOW:
        raise Nothing  # above (below) every stored key
    return (None if lo is BELOW else lo), (None if hi is ABOVE else hi)


def _range_bounds(index: r.IndexDef, q: IndexQuery, spec: str) -> tuple:
    """``(lo, hi)`` of a range query (see :func:`_bounds`); without keys,
    UnIndex ranges over every key but the excluded ones, unless only
    ``min()`` of no keys fails first."""
    if q.keys:
        return _bounds(index, q.keys, spec)
    if not q.get("not") and ("min" in spec or "max" in spec):
        min(q.keys)  # raises, as UnIndex's min() of no keys
    return None, None


def _bound_key(index: r.IndexDef, bound):
    """The key a range bound compares as, or the error its BTree gives."""
    text_keys = index.sql_type == "text" or index.kind == r.KEYWORD and index.value_type == r.TEXT_VALUE
    if index.decided and isinstance(bound, str) != text_keys:
        # a BTree of text keys compares with text only (of numbers, with numbers)
        raise TypeError(f"index {index.name!r}: cannot compare {bound!r} with the keys of the index")
    key = _scalar(index, bound)
    if isinstance(key, (_Uncomparable, _TextNumber)):
        raise TypeError(f"index {index.name!r}: cannot compare {bound!r} with the keys of the index")
    if isinstance(key, _Unstorable):
        raise ValueError(f"index {index.name!r}: {bound!r} cannot bound a range")
    return int(key) if isinstance(key, bool) else key


def _param(sql_type: str, value):
    if sql_type == "text":
        return value if isinstance(value, str) else str(value)
    if sql_type == "jsonb":
        return json_text(value)
    return value


def _field_clauses(index: r.IndexDef, q: IndexQuery, expr: str, sql_type: str) -> tuple[list[str], list]:
    """WHERE clauses of a field-like index's keys and range over *expr*
    (ZCatalog's UnIndex; its ``not`` is :func:`_exclusion`)."""
    cast = f"::{sql_type}"
    where, params = [], []
    values = [k for k in q.keys if k is not None]
    range_ = q.get("range")
    if index.kind == r.BOOLEAN:
        # BooleanIndex knows only ``query`` and answers for its first key
        # (None is false); documents without a value never match.
        if not q.keys:
            raise Nothing
        return [f"{expr} = %s{cast}"], [bool(q.keys[0])]
    if range_:
        lo, hi = _range_bounds(index, q, str(range_))
        if lo is not None:
            where.append(f"{expr} >= %s{cast}")
            params.append(_param(sql_type, lo))
        if hi is not None:
            where.append(f"{expr} <= %s{cast}")
            params.append(_param(sql_type, hi))
        if lo is None and hi is None:
            where.append(f"{expr} IS NOT NULL")
    elif values:
        keys = _keys(index, values)
        if not keys:
            raise Nothing
        if len(keys) == 1:
            # an equality: the planner then knows that a B-tree on
            # (expression, zoid) yields its rows in record id order
            where.append(f"{expr} = %s{cast}")
            params.append(_param(sql_type, keys[0]))
        else:
            where.append(f"{expr} = ANY(%s{cast}[])")
            params.append(array_literal(_param(sql_type, k) for k in keys))
    elif not q.get("not"):
        raise Nothing
    return where, params


def _exclusion(
    index: r.IndexDef, q: IndexQuery, not_keys: list, holds: str, valued: str, key_param
) -> tuple[list[str], list]:
    """UnIndex's ``not``: records holding an excluded key (*not_keys*, see
    :func:`_not_keys`) are left out.

    *holds* tests that ``index.expression()`` holds a key of an array
    parameter (of *key_param* of each key), *valued* that it holds any key.
    A ``not`` alone answers, as UnIndex does, every record but the excluded
    ones when some record holds an excluded key, else every record that has
    a value in the index.
    """
    expr = index.expression()
    keys = array_literal(key_param(k) for k in not_keys) if not_keys else None
    where, params = [], []
    if keys is not None:
        where.append(f"({expr} IS NULL OR NOT {holds})")
        params.append(keys)
    if q.get("not") and not q.keys and not q.get("range"):
        if keys is None:
            where.append(valued)
        else:
            # over every catalog row (the inner object_state shadows the outer)
            where.append(f"({valued} OR EXISTS (SELECT 1 FROM {ROWS} WHERE {holds}))")
            params.append(keys)
    return where, params


def _field(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    expr, sql_type = index.expression(), index.sql_type
    not_keys = _not_keys(index, q)  # its faults first, as before
    where, params = _field_clauses(index, q, expr, sql_type)
    stmt.where.extend(where)
    stmt.params.extend(params)
    if index.kind != r.BOOLEAN:  # BooleanIndex knows no ``not``
        where, params = _exclusion(
            index,
            q,
            not_keys,
            f"{expr} = ANY(%s::{sql_type}[])",
            f"{expr} IS NOT NULL",
            partial(_param, sql_type),
        )
        stmt.where.extend(where)
        stmt.params.extend(params)
    keys = [k for k in q.keys if k is not None]
    if keys:  # not only ``not``
        stmt.strict = True
        stmt.selective |= index.kind == r.UUID and not q.get("range")
        stmt.covered |= index.name == r.TYPE_INDEX and bool(index.hot) and not q.get("range")
    single = len(keys) == 1 and not (q.get("range") or q.get("not"))
    if single and index.name == r.TYPE_INDEX and index.expression() == type_expression(index.typed):
        stmt.walk_type = (index.expression(), _param(index.sql_type, _keys(index, keys)[0]))


def _recurring(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    """A DateRecurringIndex matches when any occurrence matches, and is
    excluded when any occurrence is (see :func:`_many_exclusion`)."""
    expr = index.expression()
    not_keys = _not_keys(index, q)
    where, params = _field_clauses(index, q, "e.value", "jsonb")
    if where:
        stmt.where.append(
            f"EXISTS (SELECT 1 FROM jsonb_array_elements({expr}) AS e WHERE {' AND '.join(where)})"
        )
        stmt.params.extend(params)
        stmt.strict = True  # no occurrences, no match
    _many_exclusion(index, q, not_keys, stmt)


def _many_exclusion(index: r.IndexDef, q: IndexQuery, not_keys: list, stmt: Statement) -> None:
    """:func:`_exclusion` over an index of several keys per record (a JSON
    array): a record holding any excluded key is left out."""
    expr = index.expression()
    where, params = _exclusion(
        index,
        q,
        not_keys,
        f"({expr} @> ANY(%s::jsonb[]))",
        f"{expr} <> '[]'::jsonb",
        lambda key: json_text([key]),
    )
    stmt.where.extend(where)
    stmt.params.extend(params)


def _keyword(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    expr = index.expression()
    values = [k for k in q.keys if k is not None]
    keys = _keys(index, values)
    not_keys = _not_keys(index, q)
    if q.get("range"):
        _keyword_range(index, q, stmt)
    elif values and (q.get("operator") == "and" and len(keys) < len(values) or not keys):
        raise Nothing  # a key no row can hold
    elif keys:
        if q.get("operator") == "and":
            # one containment test for all keys
            stmt.where.append(_filter(f"{expr} @> %s::jsonb", stmt, index))
            stmt.params.append(json_text(keys))
        else:
            stmt.where.append("(" + " OR ".join(_any_of(index, keys, stmt)) + ")")
        stmt.strict = True
    elif not q.get("not"):
        raise Nothing
    _many_exclusion(index, q, not_keys, stmt)


def _keyword_range(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    """UnIndex's range over keywords: with ``or``, rows holding a keyword in
    the range; with ``and``, rows holding every keyword of the catalog that
    lies in the range (none there: no rows)."""
    low, high = _range_bounds(index, q, str(q.get("range")))
    bounds = [v for v in (low, high) if v is not None]
    textual = all(isinstance(v, str) for v in bounds)
    if textual:
        elements, value, cast = "jsonb_array_elements_text", "k", ' COLLATE "C"'
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds):
        elements, cast = "jsonb_array_elements", "::numeric"
        value = "(CASE WHEN jsonb_typeof(k) = 'number' THEN k::text::numeric END)"
    else:
        raise TypeError(f"index {index.name!r}: range bounds {bounds!r} cannot be compared")
    tests = []
    for op, bound in ((">=", low), ("<=", high)):
        if bound is not None:
            tests.append(f"{value}{cast} {op} %s{cast}")
    in_range = " AND ".join(tests) or "TRUE"
    expr = index.expression()
    if q.get("operator") == "and":
        if not textual:
            raise ValueError(f"index {index.name!r}: an 'and' range needs text keywords")
        # the keywords in range, over the catalog rows (the inner
        # object_state's columns shadow the outer ones)
        every = f"(SELECT array_agg(DISTINCT k) FROM {ROWS}, {elements}({expr}) AS k WHERE {CATALOGED} AND {in_range})"
        stmt.where.append(f"{expr} ?& {every}")
    else:
        stmt.where.append(f"EXISTS (SELECT 1 FROM {elements}({expr}) AS k WHERE {in_range})")
    stmt.params.extend(bounds)
    stmt.strict = True


def _any_of(index: r.IndexDef, keys: list, stmt: Statement) -> list[str]:
    """Tests that keyword *index* holds any of *keys*.  Several strings
    become one ``?|`` (one lookup per row instead of one per key); a single
    string stays a containment, which the planner estimates better; several
    other keys (numbers) one array parameter, however many there are."""
    expr = index.expression()
    strings = [k for k in keys if isinstance(k, str)]
    others = [k for k in keys if not isinstance(k, str)]
    parts = []
    if len(strings) > 1:
        parts.append(_filter(f"{expr} ?| %s::text[]", stmt, index))
        stmt.params.append(array_literal(strings))
    else:
        others = strings + others
    if len(others) == 1:
        parts.append(_filter(f"{expr} @> %s::jsonb", stmt, index))
        stmt.params.append(json_text(others))
    elif others:
        parts.append(_filter(f"{expr} @> ANY(%s::jsonb[])", stmt, index))
        stmt.params.append(array_literal(json_text([key]) for key in others))
    return parts


def _filter(clause: str, stmt: Statement, index: r.IndexDef | None = None) -> str:
    """*clause*, as a filter only when the statement is selective, or when
    it is one of the clauses Plone adds to every search (*index* is
    :data:`_TRAILING`) and another index's clause leads.

    A UID or a folder's contents find a few rows through their own index;
    a security or date-range clause then only needs testing on those rows.
    Left as it is, the planner ANDs it in as a bitmap: a GIN scan of every
    row a Manager may see, milliseconds on a large site.  The security
    terms and the effective range hold for most items of a site, and the
    planner, which takes them as independent of the other clauses, would
    read them as a bitmap behind any of them (and a type's items carry them
    in the covering index that finds them).  Inside COALESCE the clause
    matches no index (nor implies the partial indexes' IS NOT NULL), and it
    still is false for rows without a value.
    """
    trailing = index is not None and index.name in _TRAILING and bool(stmt.where)
    return f"COALESCE({clause}, false)" if stmt.selective or trailing else clause


# Plone's security clauses (CatalogTool.searchResults adds them to every
# search but a Manager's unrestricted ones): they come last, as filters
# of what the other clauses find (see _filter)
_TRAILING = ("allowedRolesAndUsers", "effectiveRange")


def _date_range(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    if not q.keys:
        raise Nothing
    term = range_minutes(q.keys[0], index.options.get("precision", 0))
    if term is None:
        raise Nothing
    start, end = index.range_expressions()
    stmt.where.append(_filter(f"{start} <= %s AND {end} >= %s", stmt, index))
    stmt.params.extend([term, term])
    stmt.strict = True


def _path(index: r.IndexDef, q: IndexQuery, stmt: Statement, catalog_path: Sequence[str]) -> None:
    keys = []
    for key in q.keys:
        path = key
        if not isinstance(key, str):
            # a (path, level) pair, read as ExtendedPathIndex reads it
            int(key[1])
            path = key[0]
            if not isinstance(path, str):
                raise TypeError(f"index {index.name!r}: {path!r} is not a path")
        if _text_ok(path):  # else no row's path can match it
            keys.append(key)
    if not keys:
        raise Nothing
    sql, params, narrow = path_condition(keys, q.options, catalog_path)
    if sql == NOTHING:
        raise Nothing
    if sql == EVERYTHING:
        return
    stmt.where.append(sql)
    stmt.params.extend(params)
    stmt.strict = True
    stmt.selective |= narrow


def _text(index: r.IndexDef, q: IndexQuery, stmt: Statement, lexicon) -> None:
    keys = list(q.keys)
    # ZCTextIndex joins the values: text only (None too fails)
    if not all(isinstance(k, str) for k in keys):
        raise TypeError(f"index {index.name!r}: a text query must be text, not {keys!r:.80}")
    if not keys:
        raise Nothing
    text = " ".join(keys)
    tree = parse(text, lexicon)
    if tree is None:
        raise Nothing
    sql, params = text_condition(tree, index.expression())
    stmt.where.append(sql)
    stmt.params.extend(params)
    stmt.strict = True
    stmt.scored.append(Scored(index, tree))


def _custom(index: r.IndexDef, q: IndexQuery, stmt: Statement) -> None:
    """An add-on's index kind: its IIndexKind utility writes the SQL."""
    condition = r.custom_kind(index.kind).where(index, list(q.keys), dict(q.options))
    if condition is None:
        raise Nothing
    sql, params = condition
    stmt.where.append(f"({sql})")
    stmt.params.extend(params)
    stmt.strict = True


# -- the whole query ----------------------------------------------------------


def build(
    query: dict,
    indexes: Mapping[str, r.IndexDef],
    lexicons: Mapping[str, Any] | None = None,
    catalog_path: Sequence[str] = (),
) -> Statement | None:
    """Compile *query*; None means "matches nothing".  *catalog_path* is the
    catalog's physical path (ExtendedPathIndex counts levels after the part a
    query path shares with it)."""
    lexicons = lexicons or {}
    named = [index for index in indexes.values() if index.name in query]
    if not named:
        return None
    stmt = Statement(where=[], params=[])
    # ZCatalog applies the indexes one by one and stops at the first that
    # finds nothing, so a later index's fault never shows.  Untimed, its
    # order is by name, the indexes that take a result set to limit last:
    # the outcome here is the one it gives in that order.
    zorder = sorted(named, key=lambda index: (index.kind not in _UNLIMITED_KINDS, index.name))
    rank = {index.name: n for n, index in enumerate(zorder)}
    empty_at, faults = len(zorder), []
    # UID and path clauses first, then the type, the security clauses
    # last: when others lead, these are written as filters (see _filter)
    for index in sorted(
        named,
        key=lambda index: (
            index.name in _TRAILING,
            index.kind not in (r.UUID, r.PATH),
            index.name != r.TYPE_INDEX,
        ),
    ):
        try:
            _clause(index, query, stmt, lexicons, catalog_path)
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
                _clause(index, query, before, lexicons, catalog_path)
        raise Fault(fault[1], before)
    if empty_at < len(zorder):
        return None
    stmt.scale = score_scale(named)
    return stmt


# The kinds whose stock index does not limit a result set it is handed
# (ZCatalog applies them first)
_UNLIMITED_KINDS = (r.TEXT, r.GOPIP)


def _clause(index: r.IndexDef, query: dict, stmt: Statement, lexicons: dict, catalog_path) -> None:
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
    if kind in (r.FIELD, r.UUID, r.DATE, r.BOOLEAN):
        _field(index, q, stmt)
    elif kind == r.KEYWORD:
        _keyword(index, q, stmt)
    elif kind == r.DATE_RANGE:
        _date_range(index, q, stmt)
    elif kind == r.DATE_RECURRING:
        _recurring(index, q, stmt)
    elif kind == r.PATH:
        _path(index, q, stmt, catalog_path)
    elif kind == r.TEXT:
        _text(index, q, stmt, lexicons.get(index.options.get("lexicon_id")))
    else:
        _custom(index, q, stmt)


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


def sort_spec(query: dict, indexes: Mapping[str, r.IndexDef]) -> list[tuple[r.IndexDef, bool]]:
    """``sort_on`` / ``sort_order`` as (index, descending) pairs.

    Unknown and unsortable names raise ``CatalogError`` as ZCatalog does;
    ``reverse`` or ``descending`` (any case) mean descending, anything else
    ascending; a single order applies to every key.
    """
    if _sort_attr(query, "on") is None:
        return []
    names = sort_names(query)
    chosen = []
    for name in names:
        index = indexes.get(name) if isinstance(name, str) else None
        if index is None:
            raise CatalogError(f"Unknown sort_on index: {name!r}")
        if not index.sortable:
            raise CatalogError(
                f"The index chosen for sort_on is not capable of being used as a sort index: {name!r}"
            )
        chosen.append(index)
    orders = _sort_attr(query, "order")
    if orders is None:
        orders = [""]
    elif isinstance(orders, str):
        orders = [orders]
    elif not isinstance(orders, Iterable):
        raise TypeError(f"sort_order must be text or a list of it, not {orders!r}")
    # ZCatalog walks any iterable (a dict's keys) and fails on what is not text
    orders = list(orders)
    if not all(isinstance(o, str) for o in orders):
        raise AttributeError(f"sort_order must be text or a list of it, not {orders!r}")
    reverse = [o.lower() in ("reverse", "descending") for o in orders]
    if len(chosen) == 1 and len(reverse) > 1:
        # ZCatalog hands the list itself to its sort of one key, which
        # takes it for true (docs/reference.md)
        return [(chosen[0], True)]
    result = []
    for i, index in enumerate(chosen):
        if len(reverse) == 1:
            descending = reverse[0]
        elif i < len(reverse):
            descending = reverse[i]
        else:
            descending = False
        result.append((index, descending))
    return result


def sort_names(query: dict) -> list:
    """The names ``sort_on`` (or ``sort-on``) gives, as a list, unchecked."""
    names = _sort_attr(query, "on")
    if names is None:
        return []
    return list(names) if isinstance(names, (list, tuple)) else [names]


def _sort_attr(query: dict, attr: str):
    value = query.get(f"sort-{attr}")
    if value is None:
        value = query.get(f"sort_{attr}")
    return value


def _sort_key(index: r.IndexDef, expr: str) -> str:
    """What rows sort by on *index*.  A DateRecurringIndex sorts by the
    tuple of a document's occurrences (ZCatalog's key map holds them in
    ascending order), compared as tuples are: a SQL array, not the JSON
    array, which PostgreSQL orders by length first."""
    if index.kind == r.DATE_RECURRING:
        return f"ARRAY(SELECT o.v::bigint FROM jsonb_array_elements_text({expr}) WITH ORDINALITY AS o(v, n) ORDER BY o.n)"
    return expr


def add_sort(stmt: Statement, spec: list[tuple[r.IndexDef, bool]]) -> None:
    """ORDER BY the sort keys; rows lacking a key are dropped, as in ZCatalog."""
    if not spec:
        return
    stmt.order = []
    stmt.scored = []
    for index, descending in spec:
        expr = index.expression()
        direction = "DESC" if descending else "ASC"
        # a folder's or a UID's few rows need no bitmap of the whole sort index
        stmt.where.append(_filter(f"{expr} IS NOT NULL", stmt))
        stmt.strict = True
        stmt.order.append(f"{_sort_key(index, expr)} {direction}")
        stmt.tiebreak = f"zoid {direction}"
    index, descending = spec[0]
    if len(spec) == 1 and (index.kind in r.BTREE_KINDS or index.kind == r.PATH):
        stmt.walk_key = (index.expression(), "DESC" if descending else "ASC")
    if stmt.walk_key is None or index.kind != r.DATE:
        stmt.walk_type = None


def walk_rows(needed: int) -> int:
    """How far along the sort index to look for *needed* matches before
    falling back: far enough when at least ~1 row in 10 matches."""
    return 10 * needed + 200


def top_sql(stmt: Statement, needed: int, offset: int, metadata: bool = False) -> tuple[str, list]:
    """``SELECT zoid, path`` (and ``meta`` with *metadata*) of rows
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
    key, direction = stmt.walk_key
    order = f"{key} {direction}, zoid {direction}"
    where = stmt.where_sql()
    row = "zoid, path, meta" if metadata else "zoid, path"
    walk, walk_params = f"{key} IS NOT NULL", []
    if stmt.walk_type is not None:
        walk += f" AND {stmt.walk_type[0]} = %s"
        walk_params.append(stmt.walk_type[1])
    sql = f"""WITH hits AS (
  SELECT {row}, k FROM (
    SELECT {row}, {key} AS k, ({where}) AS ok FROM {ROWS}
     WHERE {walk} ORDER BY {order} LIMIT %s) AS walk
   WHERE ok LIMIT %s)
SELECT {row} FROM (
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

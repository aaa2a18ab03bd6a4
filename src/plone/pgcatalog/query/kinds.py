"""One clause builder per index kind, behind a table (:data:`CLAUSES`).

Each builder adds its index's part of a query to a
:class:`~.statement.Statement`, or raises :class:`~.statement.Nothing`
when that part matches nothing.  Every value is a bound parameter; the
only SQL text that varies comes from :class:`~plone.pgcatalog.registry.IndexDef`
expressions, i.e. from the registry, never from the caller.
"""

from __future__ import annotations

from typing import Any
from typing import NamedTuple

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from functools import partial
from types import MappingProxyType
from plone.pgcatalog import registry as r
from plone.pgcatalog.paths import EVERYTHING
from plone.pgcatalog.paths import NOTHING
from plone.pgcatalog.paths import path_condition
from plone.pgcatalog.query.indexquery import IndexQuery
from plone.pgcatalog.query.keys import equal_keys
from plone.pgcatalog.query.keys import excluded_keys
from plone.pgcatalog.query.keys import param
from plone.pgcatalog.query.keys import range_bounds
from plone.pgcatalog.query.keys import text_ok
from plone.pgcatalog.query.statement import as_filter
from plone.pgcatalog.query.statement import Nothing
from plone.pgcatalog.query.statement import Statement
from plone.pgcatalog.expansions import expand
from plone.pgcatalog.expansions import Glob
from plone.pgcatalog.relevance import Scored
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.schema import type_expression
from plone.pgcatalog.text import as_typed
from plone.pgcatalog.text import parse
from plone.pgcatalog.text import text_condition
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.values import json_text
from plone.pgcatalog.values import range_minutes


__all__ = ["CLAUSES", "Clause", "Context", "custom"]


class Context(NamedTuple):
    """What a clause may need beyond its index's part of the query."""

    lexicons: Mapping[str, Any]  # by id (text indexes)
    catalog_path: Sequence[str]  # the catalog's physical path (path indexes)
    # the words of the globs compiled as words (text indexes; expansions.py)
    expansions: Mapping[Glob, tuple[str, ...]] = MappingProxyType({})


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
        lo, hi = range_bounds(index, q, str(range_))
        if lo is not None:
            where.append(f"{expr} >= %s{cast}")
            params.append(param(sql_type, lo))
        if hi is not None:
            where.append(f"{expr} <= %s{cast}")
            params.append(param(sql_type, hi))
        if lo is None and hi is None:
            where.append(f"{expr} IS NOT NULL")
    elif values:
        keys = equal_keys(index, values)
        if not keys:
            raise Nothing
        if len(keys) == 1:
            # an equality: the planner then knows that a B-tree on
            # (expression, zoid) yields its rows in record id order
            where.append(f"{expr} = %s{cast}")
            params.append(param(sql_type, keys[0]))
        else:
            where.append(f"{expr} = ANY(%s{cast}[])")
            params.append(array_literal(param(sql_type, k) for k in keys))
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


def _field(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """FieldIndex, UUIDIndex, DateIndex, BooleanIndex: UnIndex's keys and range."""
    expr, sql_type = index.expression(), index.sql_type
    not_keys = excluded_keys(index, q)  # its faults first, as before
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
            partial(param, sql_type),
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
        stmt.walk_type = (index.expression(), param(index.sql_type, equal_keys(index, keys)[0]))


def _recurring(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """A DateRecurringIndex matches when any occurrence matches, and is
    excluded when any occurrence is (see :func:`_many_exclusion`)."""
    expr = index.expression()
    not_keys = excluded_keys(index, q)
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


def _keyword(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """KeywordIndex: any (``or``) or every (``and``) key, or a range."""
    expr = index.expression()
    values = [k for k in q.keys if k is not None]
    keys = equal_keys(index, values)
    not_keys = excluded_keys(index, q)
    if q.get("range"):
        _keyword_range(index, q, stmt)
    elif values and (q.get("operator") == "and" and len(keys) < len(values) or not keys):
        raise Nothing  # a key no row can hold
    elif keys:
        if q.get("operator") == "and":
            # one containment test for all keys
            stmt.where.append(as_filter(f"{expr} @> %s::jsonb", stmt, index))
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
    low, high = range_bounds(index, q, str(q.get("range")))
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
        parts.append(as_filter(f"{expr} ?| %s::text[]", stmt, index))
        stmt.params.append(array_literal(strings))
    else:
        others = strings + others
    if len(others) == 1:
        parts.append(as_filter(f"{expr} @> %s::jsonb", stmt, index))
        stmt.params.append(json_text(others))
    elif others:
        parts.append(as_filter(f"{expr} @> ANY(%s::jsonb[])", stmt, index))
        stmt.params.append(array_literal(json_text([key]) for key in others))
    return parts


def _date_range(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """DateRangeIndex: the records whose range holds the date."""
    if not q.keys:
        raise Nothing
    term = range_minutes(q.keys[0], index.options.get("precision", 0))
    if term is None:
        raise Nothing
    start, end = index.range_expressions()
    stmt.where.append(as_filter(f"{start} <= %s AND {end} >= %s", stmt, index))
    stmt.params.extend([term, term])
    stmt.strict = True


def _path(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """ExtendedPathIndex (see :mod:`~plone.pgcatalog.paths`)."""
    keys = []
    for key in q.keys:
        path = key
        if not isinstance(key, str):
            # a (path, level) pair, read as ExtendedPathIndex reads it
            int(key[1])
            path = key[0]
            if not isinstance(path, str):
                raise TypeError(f"index {index.name!r}: {path!r} is not a path")
        if text_ok(path):  # else no row's path can match it
            keys.append(key)
    if not keys:
        raise Nothing
    sql, params, narrow = path_condition(keys, q.options, context.catalog_path)
    if sql == NOTHING:
        raise Nothing
    if sql == EVERYTHING:
        return
    stmt.where.append(sql)
    stmt.params.extend(params)
    stmt.strict = True
    stmt.selective |= narrow


def _text(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """ZCTextIndex (see :mod:`~plone.pgcatalog.text`); the match is scored."""
    keys = list(q.keys)
    # ZCTextIndex joins the values: text only (None too fails)
    if not all(isinstance(k, str) for k in keys):
        raise TypeError(f"index {index.name!r}: a text query must be text, not {keys!r:.80}")
    if not keys:
        raise Nothing
    text = " ".join(keys)
    lexicon = context.lexicons.get(index.options.get("lexicon_id"))
    tree = as_typed(text, lexicon) if _flag(index, q, "as_you_type") else parse(text, lexicon)
    if tree is None:
        raise Nothing
    tree = expand(tree, index.name, context.expansions)
    sql, params = text_condition(tree, index.expression())
    stmt.where.append(sql)
    stmt.params.extend(params)
    stmt.strict = True
    stmt.scored.append(Scored(index, tree))


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _flag(index: r.IndexDef, q: IndexQuery, option: str) -> bool:
    """A true-or-false option, as Python or a form sends it ("1", "true")."""
    value = q.get(option, False)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, (bool, int)):
        return bool(value)
    raise ValueError(f"index {index.name!r}: option {option!r} must be true or false, not {value!r:.80}")


def custom(index: r.IndexDef, q: IndexQuery, stmt: Statement, context: Context) -> None:
    """An add-on's index kind: its IIndexKind utility writes the SQL."""
    condition = r.custom_kind(index.kind).where(index, list(q.keys), dict(q.options))
    if condition is None:
        raise Nothing
    sql, params = condition
    stmt.where.append(f"({sql})")
    stmt.params.extend(params)
    stmt.strict = True


# A clause builder: adds its index's part of the query to the statement
Clause = Callable[[r.IndexDef, IndexQuery, Statement, Context], None]

# The builder of each stock kind; any other kind is an add-on's (custom)
CLAUSES: dict[str, Clause] = {
    r.FIELD: _field,
    r.UUID: _field,
    r.DATE: _field,
    r.BOOLEAN: _field,
    r.KEYWORD: _keyword,
    r.DATE_RANGE: _date_range,
    r.DATE_RECURRING: _recurring,
    r.PATH: _path,
    r.TEXT: _text,
}

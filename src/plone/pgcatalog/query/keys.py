"""Query values as the keys an index compares.

ZCatalog's indexes look values up in BTrees: some values equal no stored
key, some cannot be compared with the keys at all (the search fails), and
a range is bounded by ``min()`` and ``max()`` of its values.  These rules
decide which values reach SQL as parameters, in which form, and which
errors a query gives, the same for every index kind.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable
from DateTime import DateTime
from plone.pgcatalog import registry as r
from plone.pgcatalog.query.indexquery import IndexQuery
from plone.pgcatalog.query.statement import Nothing
from plone.pgcatalog.values import date_minutes
from plone.pgcatalog.values import json_text

import math


__all__ = ["equal_keys", "excluded_keys", "param", "range_bounds", "scalar", "text_ok"]


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


def text_ok(text: str) -> bool:
    """Whether PostgreSQL can hold *text* (no NUL, valid UTF-8)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def scalar(index: r.IndexDef, value: Any) -> Any:
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
            return value if text_ok(value) else _Unstorable(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            # equals its text: a field index taken for text may hold numbers
            # (cmf_uid); ranges and ``not`` refuse it (see _text_key)
            return _TextNumber(value)
        # the BTree of a text index orders nothing but text among its keys
        return _Uncomparable(value)
    if isinstance(value, DateTime):
        return value.toZone("UTC").ISO8601()
    if isinstance(value, str):
        return value if text_ok(value) else _Unstorable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _Unstorable(value) if math.isnan(value) else (ABOVE if value > 0 else BELOW)
    if isinstance(value, (int, float)):
        return value
    # an interface object too: it cannot be ordered among names
    return _Uncomparable(value)


def equal_keys(index: r.IndexDef, values: Iterable[Any]) -> list:
    """The values that can equal a stored key (the others match nothing)."""
    keys = (scalar(index, v) for v in values if v is not None)
    return [k for k in keys if not isinstance(k, (_Bound, _Unstorable))]


def excluded_keys(index: r.IndexDef, q: IndexQuery) -> list:
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
        key = scalar(index, value)
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
        keys = [None if v is None else scalar(index, v) for v in values]
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


def range_bounds(index: r.IndexDef, q: IndexQuery, spec: str) -> tuple:
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
    key = scalar(index, bound)
    if isinstance(key, (_Uncomparable, _TextNumber)):
        raise TypeError(f"index {index.name!r}: cannot compare {bound!r} with the keys of the index")
    if isinstance(key, _Unstorable):
        raise ValueError(f"index {index.name!r}: {bound!r} cannot bound a range")
    return int(key) if isinstance(key, bool) else key


def param(sql_type: str, value: Any) -> Any:
    """*value* as a parameter compared as *sql_type*."""
    if sql_type == "text":
        return value if isinstance(value, str) else str(value)
    if sql_type == "jsonb":
        return json_text(value)
    return value

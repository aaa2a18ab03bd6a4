"""Conversions between Python values and what the catalog stores.

Index values become plain JSON (dates as ZCatalog's integer minutes, so
ranges and sorting agree with ZCatalog to the minute).  Metadata must come
back as the very Python objects ZCatalog would hand out (DateTime, tuples,
i18n messages), so it is encoded as JSON with small type tags.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from DateTime import DateTime
from Missing import MV
from datetime import date
from datetime import datetime
from datetime import UTC
from zope.i18nmessageid import Message

import base64
import json
import math
import orjson
import pickle
import time


__all__ = [
    "array_literal",
    "date_minutes",
    "decode_metadata",
    "encode_metadata",
    "is_rid",
    "json_text",
    "parsed_metadata",
    "range_minutes",
]


# ZCatalog keeps DateIndex values as 32-bit ints (DateIndex.MAX32).
MAX32 = 2**31 - 1


def date_minutes(
    value: Any, naive_as_local: bool = True, precision: int = 0, clamp: bool = True
) -> int | None:
    """Return ZCatalog's DateIndex integer for *value*, or None.

    The integer is ``((((year*12+month)*31+day)*24+hour)*60+minute)`` in
    UTC, the representation DateIndex sorts and compares, so our ranges are
    minute-truncated exactly like ZCatalog's.  Accepts DateTime, datetime,
    date, epoch int/float and date strings, as DateIndex does.  A date
    beyond what DateIndex can hold counts as :data:`MAX_DATE`, as CMFPlone's
    patch of DateIndex makes it (``Products.CMFPlone.patches.dateIndexPatch``);
    with *clamp* false it raises ``OverflowError``, as DateRecurringIndex's
    queries do (plone.event's ``dt2int``).
    """
    try:
        return _date_minutes(value, naive_as_local, precision)
    except OverflowError:
        if not clamp:
            raise
        return _date_minutes(MAX_DATE, naive_as_local, precision)


# CMFPlone indexes and searches dates it cannot convert as this one
MAX_DATE = DateTime(4008, 0)


def _date_minutes(value, naive_as_local: bool, precision: int):
    if isinstance(value, DateTime):
        parts = value.toZone("UTC").parts()
    elif isinstance(value, (int, float)):  # booleans too, as DateIndex
        parts = time.gmtime(value)  # OverflowError beyond time_t, as DateIndex
    elif isinstance(value, str) and value:
        parts = DateTime(value).toZone("UTC").parts()
    elif isinstance(value, datetime):
        if value.tzinfo is None and naive_as_local:
            value = value.astimezone()  # interpret as server local time
        parts = value.utctimetuple()
    elif isinstance(value, date):
        parts = value.timetuple()
    else:
        return None
    year, month, day, hour, minute = (int(p) for p in parts[:5])
    result = (((year * 12 + month) * 31 + day) * 24 + hour) * 60 + minute
    if precision > 1:
        result -= result % precision
    if result > MAX32:
        raise OverflowError(f"{value!r} is not within the range of indexable dates")
    return result


# -- metadata -----------------------------------------------------------------
#
# Tags are one-key objects whose key starts with "~"; a real dict with such a
# single key is wrapped so it cannot be mistaken for a tag.


def range_minutes(value: Any, precision: int = 0) -> int | None:
    """DateRangeIndex's minutes since the epoch, None outside its bounds."""
    if value is None or value is MV:
        return None
    try:
        if isinstance(value, str):
            value = DateTime(value)
        elif not isinstance(value, DateTime):
            value = DateTime(value)
    except Exception:
        return None
    minutes = int(value.millis() / 1000 / 60)
    if precision > 1:
        minutes -= minutes % precision
    floor, ceiling = _range_floor_ceiling()
    if minutes < floor or minutes > ceiling:
        return None
    return minutes


def _range_floor_ceiling():
    # DateRangeIndex's defaults (epoch minutes of 1000-01-01 and 2499-12-31)
    return -510162480, 278751600


_TUPLE = "~t"
_DATETIME = "~D"
_PYDATETIME = "~dt"
_DATE = "~d"
_MESSAGE = "~m"
_PICKLE = "~p"
_DICT = "~o"
_FLOAT = "~f"


def encode_metadata(value: Any) -> Any:
    """Return a JSON-ready form of a metadata value that decodes to an equal,
    same-typed value."""
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, Message):
            return {
                _MESSAGE: [
                    str(value),
                    value.domain,
                    value.default,
                    encode_metadata(dict(value.mapping or {})),
                ]
            }
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            return _pickled(value)
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {_FLOAT: repr(value)}
    if isinstance(value, DateTime):
        return {_DATETIME: list(value.__getstate__())}
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo is UTC:
            return {_PYDATETIME: [value.isoformat(), value.tzinfo is not None]}
        return _pickled(value)
    if isinstance(value, date):
        return {_DATE: value.isoformat()}
    if isinstance(value, list):
        return [encode_metadata(v) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return {_TUPLE: [encode_metadata(v) for v in value]}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        encoded = {k: encode_metadata(v) for k, v in value.items()}
        if len(encoded) == 1 and next(iter(encoded)).startswith("~"):
            return {_DICT: encoded}
        return encoded
    return _pickled(value)


def _pickled(value):
    return {_PICKLE: base64.b64encode(pickle.dumps(value, protocol=4)).decode("ascii")}


def parsed_metadata(meta: str | dict) -> dict:
    """A record's metadata columns, from the JSON text the table stores
    (a pending record's are a dict already); values still encoded."""
    return orjson.loads(meta) if isinstance(meta, str) else meta


def decode_metadata(value: Any) -> Any:
    """Inverse of :func:`encode_metadata`."""
    if isinstance(value, list):
        return [decode_metadata(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        key, inner = next(iter(value.items()))
        if key == _TUPLE:
            return tuple(decode_metadata(v) for v in inner)
        if key == _DATETIME:
            result = DateTime.__new__(DateTime)
            result.__setstate__(tuple(inner))
            return result
        if key == _PYDATETIME:
            text, aware = inner
            result = datetime.fromisoformat(text)
            return result
        if key == _DATE:
            return date.fromisoformat(inner)
        if key == _MESSAGE:
            msgid, domain, default, mapping = inner
            return Message(msgid, domain=domain, default=default, mapping=decode_metadata(mapping) or None)
        if key == _FLOAT:
            return float(inner)
        if key == _PICKLE:
            return pickle.loads(base64.b64decode(inner))
        if key == _DICT:
            return {k: decode_metadata(v) for k, v in inner.items()}
    return {k: decode_metadata(v) for k, v in value.items()}


def json_text(value: Any) -> str:
    """*value* as JSON text for a ``jsonb`` parameter; integers beyond 64
    bits too (JSON numbers have no limit, orjson's have)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, allow_nan=False)


# -- array parameters -------------------------------------------------------------


def text_literal(text: str) -> str:
    """*text* as an SQL string literal (quotes doubled), for the few texts
    that are part of a statement's shape, never a user's value."""
    return "'" + text.replace("'", "''") + "'"


def array_literal(values: Iterable[Any]) -> str:
    """*values* as a PostgreSQL array literal, for a parameter cast to an
    array type (``%s::text[]``).

    psycopg adapts a Python list element by element in Python: 35 us for
    five roles, 80 us for twenty record ids, on every search.  The literal
    is still a bound parameter: every element is double-quoted with its
    quotes and backslashes escaped, so no value can end it.
    """
    return "{" + ",".join(_array_element(value) for value in values) + "}"


def _array_element(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        text = value if isinstance(value, str) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def is_rid(rid: Any) -> bool:
    """Whether *rid* can be a record id (an object id: a 64-bit integer)."""
    return isinstance(rid, int) and not isinstance(rid, bool) and -(2**63) <= rid < 2**63

"""Recurring events on zodb-pgjsonb.

zodb-pgjsonb stores datetimes as JSON and loads them back aware of their
offset with a ``datetime.timezone`` (``timezone.utc``), not a pytz zone.
plone.event's recurrence expansion calls ``tzinfo.localize``, which only
pytz zones have: it raises, plone.app.event's ``start`` indexer then turns
the error into "no value", and a recurring event drops out of every date
search.  :func:`teach_plone_event_stdlib_zones` makes plone.event's
normaliser (``utcoffset_normalize``, which ``pydt`` calls for every aware
datetime) hand out the equivalent pytz zone, so the expansion works on
objects loaded from this storage as on any other.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timezone

import pytz


def as_pytz(value: datetime) -> datetime:
    """*value* with a stdlib fixed-offset zone replaced by pytz's equivalent."""
    tzinfo = value.tzinfo
    if type(tzinfo) is not timezone:
        return value
    offset = tzinfo.utcoffset(None)
    zone = pytz.utc if not offset else pytz.FixedOffset(int(offset.total_seconds() // 60))
    return value.replace(tzinfo=zone)


def teach_plone_event_stdlib_zones() -> None:
    """Wrap ``plone.event.utils.utcoffset_normalize`` once (idempotent)."""
    try:
        from plone.event import utils
    except ImportError:  # pragma: no cover - plone.event ships with Plone
        return
    original = utils.utcoffset_normalize
    if hasattr(original, "wrapped"):
        return

    def utcoffset_normalize(date, delta=None, dstmode=utils.DSTAUTO):
        return original(as_pytz(date), delta, dstmode)

    utcoffset_normalize.wrapped = original
    utils.utcoffset_normalize = utcoffset_normalize

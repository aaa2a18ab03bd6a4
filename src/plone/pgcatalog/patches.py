"""Changes to other packages' code, each needed by the catalog and said why.

All of them are applied once, when the package is imported (:func:`apply`).

- plone.folder's ``DefaultOrdering.orderObjects`` (folder contents' "sort
  by", ``folder.orderObjects(key)``) reorders a folder without sending the
  ``IContainerModifiedEvent`` its other moves send; ZCatalog never needed
  one, because its GopipIndex reads the order when it sorts.  The catalog
  learns of it here (see :mod:`plone.pgcatalog.positions`).
- GenericSetup's ``toolset`` step would swap this catalog for an empty
  ZCatalog when Plone's base profile is imported again (see
  :mod:`plone.pgcatalog.toolset`).
- plone.event's recurrence expansion calls ``tzinfo.localize``, which only
  pytz zones have; zodb-pgjsonb loads datetimes with a stdlib
  ``timezone``.  plone.app.event's ``start`` indexer then takes the error
  for "no value", and a recurring event drops out of every date search.
  plone.event's normaliser (``utcoffset_normalize``, which ``pydt`` calls
  for every aware datetime) is taught to hand out the equivalent pytz zone.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timezone
from functools import wraps

import pytz


__all__ = ["apply", "as_pytz"]


def apply() -> None:
    """Apply every patch (idempotent)."""
    _tell_catalog_of_order_objects()
    _guard_toolset_import()
    _teach_plone_event_stdlib_zones()


def _tell_catalog_of_order_objects() -> None:
    from plone.folder.default import DefaultOrdering
    from plone.pgcatalog.positions import positions_changed

    original = DefaultOrdering.orderObjects
    if hasattr(original, "__wrapped__"):
        return

    @wraps(original)
    def orderObjects(self, key=None, reverse=None):
        result = original(self, key, reverse)
        positions_changed(self.context)
        return result

    DefaultOrdering.orderObjects = orderObjects


def _guard_toolset_import() -> None:
    """Route the ``toolset`` step (resolved by dotted name) through ours."""
    from plone.pgcatalog.toolset import import_toolset
    from Products.GenericSetup import tool as setup_tool

    setup_tool.importToolset = import_toolset


def as_pytz(value: datetime) -> datetime:
    """*value* with a stdlib fixed-offset zone replaced by pytz's equivalent."""
    tzinfo = value.tzinfo
    if type(tzinfo) is not timezone:
        return value
    offset = tzinfo.utcoffset(None)
    zone = pytz.utc if not offset else pytz.FixedOffset(int(offset.total_seconds() // 60))
    return value.replace(tzinfo=zone)


def _teach_plone_event_stdlib_zones() -> None:
    from plone.event import utils

    original = utils.utcoffset_normalize
    if hasattr(original, "__wrapped__"):
        return

    @wraps(original)
    def utcoffset_normalize(date, delta=None, dstmode=utils.DSTAUTO):
        return original(as_pytz(date), delta, dstmode)

    utils.utcoffset_normalize = utcoffset_normalize

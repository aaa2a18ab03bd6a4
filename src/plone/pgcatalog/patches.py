"""Changes to other packages' code, each needed by the catalog and said why.

- plone.folder's ``DefaultOrdering.orderObjects`` (folder contents' "sort
  by", ``folder.orderObjects(key)``) reorders a folder without sending the
  ``IContainerModifiedEvent`` its other moves send; ZCatalog never needed
  one, because its GopipIndex reads the order when it sorts.  The catalog
  learns of it here (see :mod:`plone.pgcatalog.positions`).
"""

from __future__ import annotations

from functools import wraps


def tell_catalog_of_order_objects() -> None:
    """Wrap ``DefaultOrdering.orderObjects`` once (idempotent)."""
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

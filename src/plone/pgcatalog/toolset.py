"""Keep the PostgreSQL catalog through GenericSetup ``toolset`` imports.

GenericSetup's ``toolset`` step replaces every required tool whose class
is not exactly the one its toolset registry names, and Plone's base
profile names ZCatalog's ``CatalogTool`` for ``portal_catalog``.
Re-importing that step (an upgrade, "import all steps" of
``Products.CMFPlone:plone``) would swap the PostgreSQL catalog for an
empty ZCatalog.  :func:`import_toolset` takes the step's place (see
:mod:`plone.pgcatalog.patches`): an installed catalog is kept, untouched,
and the registry goes on naming it.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from plone.pgcatalog.interfaces import IPGCatalogTool
from Products.GenericSetup import tool as setup_tool

import logging


__all__ = ["import_toolset", "register_required_tool"]


logger = logging.getLogger("plone.pgcatalog")

TOOL_ID = "portal_catalog"
TOOL_CLASS = "plone.pgcatalog.tool.PGCatalogTool"

_stock_import_toolset = setup_tool.importToolset


def register_required_tool(portal_setup: Any) -> None:
    """Make the toolset registry name the PostgreSQL catalog."""
    portal_setup.getToolsetRegistry().addRequiredTool(TOOL_ID, TOOL_CLASS)
    portal_setup._p_changed = True


def import_toolset(context: Any) -> None:
    """GenericSetup's ``toolset`` step, minus replacing our catalog."""
    site = context.getSite()
    catalog = aq_base(getattr(aq_base(site), TOOL_ID, None))
    if not IPGCatalogTool.providedBy(catalog):
        _stock_import_toolset(context)
        return
    # Out of the way, silently: the stock step then sees no catalog and
    # may create one, which is dropped again before anyone can use it.
    site._delObject(TOOL_ID, suppress_events=True)
    try:
        _stock_import_toolset(context)
    finally:
        if getattr(aq_base(site), TOOL_ID, None) is not None:
            logger.info("Kept the PostgreSQL portal_catalog through a toolset import")
            site._delObject(TOOL_ID, suppress_events=True)
        site._setObject(TOOL_ID, catalog, suppress_events=True)
    register_required_tool(context.getSetupTool())

"""Keep the PostgreSQL catalog through GenericSetup ``toolset`` imports.

GenericSetup's ``toolset`` step replaces every required tool whose class
is not exactly the one its toolset registry names, and Plone's base
profile names ZCatalog's ``CatalogTool`` for ``portal_catalog``.
Re-importing that step (an upgrade, "import all steps" of
``Products.CMFPlone:plone``) would swap the PostgreSQL catalog for an
empty ZCatalog.  :func:`import_toolset` takes the step's place (see
:mod:`plone.pgcatalog.patches`): the stock step reads the profile's
``toolset.xml`` without its ``portal_catalog`` entry, so the registry
goes on naming our tool and the step leaves it, and the site, alone.  (It
used to take the tool out and put it back: the site's folder changed on
every profile applied, and a later commit that stock Plone makes could
fail, depending on the order in which ZODB then pickled its buckets.)
"""

from __future__ import annotations

from typing import Any
from xml.dom import minidom

from Acquisition import aq_base
from plone.pgcatalog.interfaces import IPGCatalogTool
from Products.GenericSetup import tool as setup_tool
from Products.GenericSetup.tool import TOOLSET_XML

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


def without_catalog(xml: bytes | str) -> bytes:
    """*xml*, a ``toolset.xml``, without its entries for ``portal_catalog``."""
    document = minidom.parseString(xml)
    for element in [*document.getElementsByTagName("required"), *document.getElementsByTagName("forbidden")]:
        if element.getAttribute("tool_id") == TOOL_ID:
            if element.getAttribute("class") != TOOL_CLASS:
                logger.info("Kept the PostgreSQL portal_catalog through a toolset import")
            element.parentNode.removeChild(element)
    return document.toxml("utf-8")


class _Profile:
    """An import context whose ``toolset.xml`` is read without our tool."""

    def __init__(self, context: Any):
        self._context = context

    def readDataFile(self, filename: str, subdir: str | None = None) -> bytes | None:
        data = self._context.readDataFile(filename, subdir)
        if filename == TOOLSET_XML and subdir is None and data is not None:
            return without_catalog(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def import_toolset(context: Any) -> None:
    """GenericSetup's ``toolset`` step, minus replacing our catalog."""
    site = context.getSite()
    catalog = aq_base(getattr(aq_base(site), TOOL_ID, None))
    if not IPGCatalogTool.providedBy(catalog):
        _stock_import_toolset(context)
        return
    register_required_tool(context.getSetupTool())
    _stock_import_toolset(_Profile(context))

"""Interfaces of plone.pgcatalog."""

from zope.interface import Interface


class IPGCatalogTool(Interface):
    """Marker: the PostgreSQL-backed ``portal_catalog``."""


class IPGIndex(Interface):
    """Marker: one of the catalog's index views (``catalog.Indexes[name]``)."""

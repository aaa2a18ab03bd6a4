"""Interfaces of plone.pgcatalog."""

from zope.interface import Interface


class IPGCatalogTool(Interface):
    """Marker: the PostgreSQL-backed ``portal_catalog``."""

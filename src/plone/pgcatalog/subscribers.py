"""Event subscribers: register the state processor, check stored security
before a request commits, release connections."""

from __future__ import annotations

from typing import Any

from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.pools import release_request_connection
from plone.pgcatalog.processor import ensure_processor
from plone.pgcatalog.schema import catalog_installed
from plone.pgcatalog.schema import startup_schema
from plone.pgcatalog.security import hook
from Products.CMFCore.utils import getToolByName
from zope.component.hooks import getSite


__all__ = ["before_commit", "database_opened", "publication_ended"]


def database_opened(event: Any) -> None:
    """IDatabaseOpenedWithRoot: hook the catalog into a zodb-pgjsonb storage
    before any request writes, and bring its schema up to this release
    before any request reads, where the catalog is installed (the install
    does both itself; after an uninstall it stays out)."""
    storage = getattr(event.database, "storage", None)
    if not hasattr(storage, "register_state_processor"):
        return
    dsn = getattr(storage, "_dsn", None)
    if dsn is not None and catalog_installed(dsn):
        startup_schema(storage)
        ensure_processor(storage)


def publication_ended(event: Any) -> None:
    """IPubEnd: give the request's pooled connection back."""
    release_request_connection()


def before_commit(event: Any) -> None:
    """IPubBeforeCommit: the commit of a request that changed the site's
    objects checks their security settings, whether or not anything was
    cataloged (see :mod:`plone.pgcatalog.security`)."""
    site = getSite()
    catalog = getToolByName(site, "portal_catalog", None) if site is not None else None
    if catalog is not None and IPGCatalogTool.providedBy(catalog):
        hook(catalog)

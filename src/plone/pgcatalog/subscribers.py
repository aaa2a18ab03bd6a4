"""Event subscribers: register the state processor, release connections."""

from __future__ import annotations

from typing import Any

from plone.pgcatalog.connection import release_request_connection
from plone.pgcatalog.processor import ensure_processor
from plone.pgcatalog.schema import catalog_installed


__all__ = ["database_opened", "publication_ended"]


def database_opened(event: Any) -> None:
    """IDatabaseOpenedWithRoot: hook the catalog into a zodb-pgjsonb storage
    before any request writes, where the catalog is installed (the install
    hooks it in itself; after an uninstall it stays out)."""
    storage = getattr(event.database, "storage", None)
    if not hasattr(storage, "register_state_processor"):
        return
    dsn = getattr(storage, "_dsn", None)
    if dsn is None or catalog_installed(dsn):
        ensure_processor(storage)


def publication_ended(event: Any) -> None:
    """IPubEnd: give the request's pooled connection back."""
    release_request_connection()

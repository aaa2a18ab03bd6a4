"""What a search raises when the database cannot answer it.

Both are ZCatalog's ``CatalogError``, so callers that handle the catalog's
errors handle these; the database's own exception is chained as the cause.
"""

from __future__ import annotations

from Products.ZCatalog.ZCatalog import CatalogError


__all__ = ["CatalogUnavailable", "SearchTimeout"]


class SearchTimeout(CatalogError):
    """PostgreSQL cancelled a search that ran past ``statement-timeout``."""


class CatalogUnavailable(CatalogError):
    """The catalog's database could not be reached, or no pooled
    connection came free within ``pool-timeout``."""

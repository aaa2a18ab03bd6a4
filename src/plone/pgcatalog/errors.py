"""What the catalog raises when the database cannot do what was asked.

All are ZCatalog's ``CatalogError`` (and what is about the query text a
ZCTextIndex ``ParseError`` too), so callers that handle the catalog's
errors handle these; the database's own exception, if any, is chained as
the cause.
"""

from __future__ import annotations

from Products.ZCatalog.ZCatalog import CatalogError
from Products.ZCTextIndex.ParseTree import ParseError


__all__ = [
    "CatalogNotInstalled",
    "CatalogUnavailable",
    "SchemaLocked",
    "SchemaPrivilegeError",
    "SearchTimeout",
    "TextQueryTooLong",
    "UnservedIndex",
]


class SearchTimeout(CatalogError):
    """PostgreSQL cancelled a search that ran past ``statement-timeout``."""


class CatalogUnavailable(CatalogError):
    """The catalog's database could not be reached, or no pooled
    connection came free within ``pool-timeout``."""


class CatalogNotInstalled(CatalogError):
    """A catalog read met a database without the catalog's columns (the
    profile was never imported on it, or its schema was dropped)."""


class SchemaLocked(CatalogError):
    """An install or upgrade could not change the schema: other
    transactions kept ``object_state`` busy past the lock timeout."""


class SchemaPrivilegeError(CatalogError):
    """A change of the database schema (a new SQL index, an install or
    upgrade) was asked of a site that connects as a role which does not
    own ``object_state``; raised before anything is changed."""


class UnservedIndex(CatalogError):
    """A query on an index the site had before the install and this
    catalog has no SQL for (a PathIndex, a TopicIndex, an add-on's kind
    without an ``IIndexKind`` utility): refused, since leaving it out would
    answer more than the stock catalog."""


class TextQueryTooLong(CatalogError, ParseError):
    """A text query of more words than ``text.MAX_TEXT_TERMS``: refused
    before any SQL.  A ``ParseError`` too, which Plone's search page and
    other callers of ZCTextIndex already catch (they show no results)."""

"""Interfaces of plone.pgcatalog."""

from zope.interface import Attribute
from zope.interface import Interface
from zope.publisher.interfaces.browser import IDefaultBrowserLayer


__all__ = ["IIndexKind", "IPGCatalogLayer", "IPGCatalogTool", "IPGIndex", "IPGTextIndex"]


class IPGCatalogTool(Interface):
    """Marker: the PostgreSQL-backed ``portal_catalog``."""


class IPGCatalogLayer(IDefaultBrowserLayer):
    """The browser layer of a site that installed plone.pgcatalog (its
    search page: :mod:`plone.pgcatalog.searchpage`)."""


class IPGIndex(Interface):
    """Marker: one of the catalog's index views (``catalog.Indexes[name]``)."""


class IPGTextIndex(IPGIndex):
    """Marker: a text index's view, whose queries take ``as_you_type``."""


class IIndexKind(Interface):
    """The SQL for one kind of catalog index, for add-ons.

    Register an implementation as a named utility whose name is the index's
    ``meta_type``.  The catalog then takes such indexes over at install,
    accepts them in ``addIndex`` and ``catalog.xml``, stores each object's
    value in ``idx`` under the index name, and asks the utility for the SQL
    of a query.  Without a utility an unknown kind is an error at install
    (logged, the index left out) and in ``addIndex``, never a silent wrong
    answer.
    """

    query_options = Attribute("The query options the index accepts, e.g. ``('query', 'not')``.")

    def options(index):
        """Settings to keep from a ZCatalog index object of this kind (a
        dict of JSON values); install carries them over."""

    def value(obj, index):
        """The JSON value to store for *obj* (a plone.indexer wrapper: read
        ``getattr(obj, name)``), or None when the object has none.  *index*
        is the :class:`plone.pgcatalog.registry.IndexDef` (``name``,
        ``attrs``, ``options``)."""

    def where(index, keys, options):
        """The SQL condition for a query on the index and its parameters:
        ``(sql, params)``.  *keys* are the query's values, *options* the
        other query options.  The stored value is ``idx->'<name>'``
        (``index.key`` is the quoted name); every value must be a ``%s``
        parameter, never part of the SQL text.  Return None to match
        nothing."""

    def ddl(index):
        """``CREATE INDEX IF NOT EXISTS`` statements that serve :meth:`where`
        (a list, possibly empty)."""
